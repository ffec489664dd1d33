"""A journal pair written by hand is refused at ingest and named by validate when the rest of
the campaign folder does not bear it out: its run is not in NAME.runs.jsonl (or ended without
starting it), its start's spec disagrees with the locked Variants row or its Manifest row
does, or its predictions file is another attempt's under another spelling.

Real files: one locked campaign run by `iteralab run` on the sample model (8 items), then its
journal and run log appended to as a text editor appends."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import make_campaign, variant
from toolkit.cli import cli
from toolkit.evidence import journal, run_log
from toolkit.evidence.anchor import write_anchor
from toolkit.evidence.ingest import add_records
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign: not in `make test-fast`


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A campaign whose b1-fp32 and b8-fp32 ran once each; b8-bf16 declared, never run."""
    folder = tmp_path_factory.mktemp("witness") / "campaign"
    path = make_campaign(
        folder,
        8,
        [
            variant("b1-fp32", 1),
            variant("b8-fp32", 8),
            variant("b8-bf16", 8, precision="bf16", series=2),
        ],
    )
    result = CliRunner().invoke(
        cli, ["run", str(path), "--variant", "b1-fp32", "--variant", "b8-fp32", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def path(ran: Path, tmp_path: Path) -> Path:
    shutil.copytree(ran.parent, tmp_path / "campaign")
    return tmp_path / "campaign" / ran.name


def _lines(path: Path) -> list[dict[str, Any]]:
    text = journal.journal_path(path).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _pair(path: Path, variant_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    lines = _lines(path)
    start = next(
        s
        for s in lines
        if s["format"] == journal.START_FORMAT and s["spec"]["variant"]["variant_id"] == variant_id
    )
    record = next(r for r in lines if r.get("attempt", {}).get("attempt_id") == start["attempt_id"])
    return json.loads(json.dumps(start)), json.loads(json.dumps(record))


def _forge(
    path: Path,
    variant_id: str,
    new_id: str,
    *,
    own_file: bool = True,
    listed: bool = True,
    **changes: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Append a copy of ``variant_id``'s pair under ``new_id`` (repetition 2: a slot no
    attempt fills), with its own copy of the predictions file when ``own_file``, and its id
    added to its run's end line in the run log when ``listed``; ``changes`` go into the
    record's attempt. Returns the start and record appended."""
    start, record = _pair(path, variant_id)
    attempt = record["attempt"]
    start["attempt_id"] = start["spec"]["attempt_id"] = attempt["attempt_id"] = new_id
    start["spec"]["repetition"] = attempt["repetition"] = 2
    if own_file:
        source = path.parent / attempt["predictions_path"]
        attempt["predictions_path"] = f"{source.parent.name}/{new_id}.jsonl"
        shutil.copyfile(source, path.parent / attempt["predictions_path"])
    attempt.update(changes)
    return _append(path, start, record, listed)


def _append(
    path: Path, start: dict[str, Any], record: dict[str, Any], listed: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    with journal.journal_path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(start) + "\n" + json.dumps(record) + "\n")
    if listed:
        log = run_log.path(path)
        documents = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        for document in documents:
            if document.get("run") == start.get("run") and "attempt_ids" in document:
                document["attempt_ids"].append(start["attempt_id"])
        log.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return start, record


def _ingest(path: Path) -> Any:
    return CliRunner().invoke(cli, ["ingest", str(path)])


def _journal_findings(path: Path) -> list[Any]:
    return [f for f in validate(store.read(path), path) if f.check == "journal"]


def test_each_run_is_logged_and_its_start_lines_name_it(ran: Path) -> None:
    documents = [
        json.loads(line) for line in run_log.path(ran).read_text(encoding="utf-8").splitlines()
    ]
    assert [d["format"] for d in documents] == [
        run_log.START_FORMAT,
        run_log.END_FORMAT,
        "iteralab-run-time/1",
    ]
    run = documents[0]["run"]
    ids = [str(a["attempt_id"]) for a in store.read(ran).tables["Attempts"]]
    assert documents[1]["run"] == run and documents[1]["attempt_ids"] == ids
    starts = [s for s in _lines(ran) if s["format"] == journal.START_FORMAT]
    assert [s["run"] for s in starts] == [run, run]
    assert _journal_findings(ran) == []


def test_a_pair_renamed_to_a_variant_that_never_ran_is_refused_by_its_own_spec(
    path: Path,
) -> None:
    start, record = _pair(path, "b8-fp32")
    assert start["spec"]["variant"]["precision"] == "fp32"
    new_id = "a009-b8-bf16-r1-forged"
    start["attempt_id"] = start["spec"]["attempt_id"] = new_id
    start["spec"]["variant"]["variant_id"] = "b8-bf16"
    source = path.parent / record["attempt"]["predictions_path"]
    record["attempt"].update(
        attempt_id=new_id, variant_id="b8-bf16", predictions_path=f"{source.parent.name}/x.jsonl"
    )
    shutil.copyfile(source, source.parent / "x.jsonl")
    _append(path, start, record)
    rows = len(store.read(path).tables["Attempts"])

    result = _ingest(path)
    assert result.exit_code == 1
    expected = (
        "attempt 'a009-b8-bf16-r1-forged' ran variant 'b8-bf16' with precision 'fp32' by its "
        "start line's spec, but the locked Variants row says 'bf16'"
    )
    assert expected in result.stderr
    assert "ingested 0 attempt(s)" in result.output
    assert len(store.read(path).tables["Attempts"]) == rows
    (found,) = _journal_findings(path)
    assert found.row is None and expected in found.message


def test_a_renamed_pair_whose_spec_was_rewritten_is_refused_by_its_manifest(path: Path) -> None:
    start, record = _pair(path, "b8-fp32")
    bf16 = next(r for r in store.read(path).tables["Variants"] if r["variant_id"] == "b8-bf16")
    start["attempt_id"] = start["spec"]["attempt_id"] = "a009-b8-bf16-r1-forged"
    start["spec"]["variant"].update({k: v for k, v in bf16.items() if v is not None})
    record["attempt"].update(
        attempt_id="a009-b8-bf16-r1-forged",
        variant_id="b8-bf16",
        predictions_path=record["attempt"]["predictions_path"].replace(
            record["attempt"]["attempt_id"], "a009-b8-bf16-r1-forged"
        ),
    )
    shutil.copyfile(
        path.parent / _pair(path, "b8-fp32")[1]["attempt"]["predictions_path"],
        path.parent / record["attempt"]["predictions_path"],
    )
    _append(path, start, record)

    result = _ingest(path)
    assert result.exit_code == 1
    assert (
        f"attempt 'a009-b8-bf16-r1-forged' comes with Manifest row "
        f"{record['manifest']['manifest_id']!r} saying variant_id 'b8-fp32', but the locked "
        "Variants row of 'b8-bf16' says 'b8-bf16'"
    ) in result.stderr
    assert [f.row for f in _journal_findings(path)] == [None]


def test_a_pair_copied_into_a_run_that_ended_without_it_is_refused(path: Path) -> None:
    _forge(path, "b1-fp32", "a009-b1-fp32-r2-forged", listed=False, measured_s=0.0001)
    result = _ingest(path)
    assert result.exit_code == 1
    assert "ingested 0 attempt(s)" in result.output
    assert (
        "attempt 'a009-b1-fp32-r2-forged' names run "
        f"{_pair(path, 'b1-fp32')[0]['run']!r}, which ended having started 2 other "
        "attempt(s) and not this one"
    ) in result.stderr
    assert len(_journal_findings(path)) == 1


def test_a_pair_naming_a_run_the_log_does_not_list_is_refused(path: Path) -> None:
    start, record = _pair(path, "b1-fp32")
    start["run"] = "0123456789abcdef"
    start["attempt_id"] = start["spec"]["attempt_id"] = "a009-b1-fp32-r2-forged"
    record["attempt"].update(attempt_id="a009-b1-fp32-r2-forged", repetition=2)
    start["spec"]["repetition"] = 2
    record["attempt"]["predictions_path"] = None
    _append(path, start, record, listed=False)
    result = _ingest(path)
    assert result.exit_code == 1
    assert (
        "attempt 'a009-b1-fp32-r2-forged' names run '0123456789abcdef', which "
        "campaign.runs.jsonl does not list"
    ) in result.stderr


def test_a_start_line_naming_no_run_after_runs_that_name_theirs_is_refused(path: Path) -> None:
    start, record = _pair(path, "b1-fp32")
    del start["run"]
    start["attempt_id"] = start["spec"]["attempt_id"] = "a009-b1-fp32-r2-forged"
    start["spec"]["repetition"] = 2
    record["attempt"].update(attempt_id="a009-b1-fp32-r2-forged", repetition=2)
    record["attempt"]["predictions_path"] = None
    _append(path, start, record, listed=False)
    result = _ingest(path)
    assert result.exit_code == 1
    assert "has a start line naming no run, though the runner names each run" in result.stderr


@pytest.mark.parametrize("spelling", ["dot", "hard link"])
def test_another_attempts_predictions_file_under_another_spelling_is_refused(
    path: Path, spelling: str
) -> None:
    _, record = _pair(path, "b1-fp32")
    original = record["attempt"]["predictions_path"]
    folder, name = original.split("/")
    if spelling == "dot":
        other = f"{folder}/./{name}"
    else:
        other = f"{folder}/a009-b1-fp32-r2-forged.jsonl"
        os.link(path.parent / original, path.parent / other)
    _forge(path, "b1-fp32", "a009-b1-fp32-r2-forged", own_file=False, predictions_path=other)
    result = _ingest(path)
    assert result.exit_code == 1
    assert (
        f"attempt 'a009-b1-fp32-r2-forged' names the predictions file {other} of attempt "
        f"{record['attempt']['attempt_id']!r} (one file per attempt)"
    ) in result.stderr


def test_a_forged_row_an_older_ingestion_let_in_is_named_on_its_row(path: Path) -> None:
    _, record = _forge(path, "b1-fp32", "a009-b1-fp32-r2-forged", listed=False, measured_s=1e-4)
    data = store.read(path)
    add_records(data, [record])  # as an ingestion without these checks did
    store.save(data, path)
    write_anchor(data, path)
    found = _journal_findings(path)
    assert [(f.row, f.column) for f in found] == [(len(data.tables["Attempts"]) + 1, "attempt_id")]
    assert "which ended having started 2 other attempt(s) and not this one" in found[0].message


def test_the_honest_records_beside_a_refused_pair_are_ingested(path: Path) -> None:
    _forge(path, "b1-fp32", "a009-b1-fp32-r2-forged", listed=False)
    data = store.read(path)
    data.tables["Attempts"].pop()  # the run's last row, not yet ingested (a busy workbook)
    store.save(data, path)
    result = _ingest(path)
    assert result.exit_code == 1
    assert "ingested 1 attempt(s)" in result.output
    assert "1 record(s) not ingested" in result.stderr


def test_a_record_moved_to_another_repetition_than_its_start_planned_is_refused(
    path: Path,
) -> None:
    start, record = _forge(path, "b1-fp32", "a009-b1-fp32-r2-forged")
    lines = journal.journal_path(path).read_text(encoding="utf-8").splitlines()
    start["spec"]["repetition"] = 1  # the start planned repetition 1, the record says 2
    lines[-2] = json.dumps(start)
    journal.journal_path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = _ingest(path)
    assert result.exit_code == 1
    assert (
        "attempt 'a009-b1-fp32-r2-forged' says repetition 2, its start line planned 1"
    ) in result.stderr
    assert record["attempt"]["repetition"] == 2
