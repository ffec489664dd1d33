"""`iteralab merge`: two copies of one locked campaign run apart (two rented boxes), joined into
one decision (#17 part 1): ids, predictions, chain, provenance, idempotence, refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, variant
from toolkit.cli import cli
from toolkit.evidence import journal
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _invoke(*args: str) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def two_boxes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One locked campaign copied to two folders; each box runs its own variant."""
    root = tmp_path_factory.mktemp("boxes")
    main = make_campaign(
        root / "box-4090", 8, [variant("b1-fp32", 1), variant("b4-fp32", 4)], repetitions=1
    )
    shutil.copytree(main.parent, root / "box-b200")
    other = root / "box-b200" / "campaign.xlsx"
    for book, vid in ((main, "b1-fp32"), (other, "b4-fp32")):
        result = _invoke("run", book, "--variant", vid, "--quiet")
        assert result.exit_code == 0, result.output
    return main, other


def _copy(boxes: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    main, other = boxes
    shutil.copytree(main.parent, tmp_path / "main")
    shutil.copytree(other.parent, tmp_path / "other")
    return tmp_path / "main" / "campaign.xlsx", tmp_path / "other" / "campaign.xlsx"


def test_two_copies_merge_into_one_valid_campaign(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    main, other = _copy(two_boxes, tmp_path)
    mine, theirs = attempts(main)[0]["attempt_id"], attempts(other)[0]["attempt_id"]
    assert mine[:-5] == "a001-b1-fp32-r1" and theirs[:-5] == "a001-b4-fp32-r1"
    result = _invoke("merge", main, other, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["merged"], document["files_copied"], document["already"]) == ([theirs], 1, 0)
    assert [a["attempt_id"] for a in attempts(main)] == [mine, theirs]
    data = store.read(main)
    [audit] = [r for r in data.tables["Audit"] if r["action"] == "merge"]
    details = json.loads(audit["details"])
    assert details["attempts"] == [theirs] and details["journal_sha256"]
    assert details["hosts"] == [data.tables["Manifest"][-1]["host"]]
    assert (main.parent / attempts(other)[0]["predictions_path"]).is_file()
    assert [r["attempt"]["attempt_id"] for r in journal.read(main)] == [mine, theirs]
    # the memo of the run's report predates the merged row (stale-memo); report rewrites it
    checked = _invoke("validate", main, "--json")
    assert [(f["sheet"], f["check"]) for f in json.loads(checked.output)["findings"]] == [
        ("Decision", "stale-memo")
    ]
    assert "Attempts changed since" in json.loads(checked.output)["findings"][0]["message"]
    report = _invoke("report", main, "--no-png")
    assert report.exit_code == 0, report.output
    assert _invoke("validate", main).exit_code == 0
    assert "b1-fp32 vs b4-fp32" in report.output
    text = (main.parent / "campaign_report" / "report.md").read_text(encoding="utf-8")
    host = data.tables["Manifest"][-1]["host"]
    assert "## Where the attempts ran" in text
    assert f"| {host} |" in text and "b1-fp32 (1), b4-fp32 (1)" in text

    before = main.read_bytes()
    again = _invoke("merge", main, other)
    assert again.exit_code == 0
    source = other.with_name("campaign.journal.jsonl")
    assert again.output.startswith(
        f"nothing to merge from {source}: 1 attempt(s) already in campaign.xlsx"
    )
    assert main.read_bytes() == before


def test_a_tampered_predictions_file_refuses_the_whole_merge(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    main, other = _copy(two_boxes, tmp_path)
    path = other.parent / attempts(other)[0]["predictions_path"]
    path.write_text(
        path.read_text(encoding="utf-8").replace('"prediction"', '"prediction" ', 1),
        encoding="utf-8",
    )
    before = main.read_bytes()
    result = _invoke("merge", main, other)
    assert result.exit_code == 1
    assert "not merged, 1 problem(s); nothing was written" in result.stderr
    assert "was changed after the run (SHA-256" in result.stderr
    assert main.read_bytes() == before
    assert len(journal.read(main)) == 1


def test_a_copy_under_another_lock_is_refused(two_boxes: tuple[Path, Path], tmp_path: Path) -> None:
    main, other = _copy(two_boxes, tmp_path)
    entries = journal.read(other)
    entries[0]["attempt"]["protocol_sha256"] = "f" * 64
    other.with_name("campaign.journal.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8"
    )
    result = _invoke("merge", main, other)
    assert result.exit_code == 1
    assert "ran under protocol ffffffffffff, which this workbook never locked" in result.stderr


def test_an_id_held_with_other_content_is_never_overwritten(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    main, other = _copy(two_boxes, tmp_path)
    mine = journal.read(main)[0]
    forged = json.loads(json.dumps(mine))
    forged["attempt"]["measured_s"] = 0.001
    start = journal.start(mine["attempt"]["attempt_id"], {}, "2026-12-07T09:00", "forged-run")
    with other.with_name("campaign.journal.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(start) + "\n" + json.dumps(forged) + "\n")  # with its start
    result = _invoke("merge", main, other)
    assert result.exit_code == 1
    assert (
        f"{mine['attempt']['attempt_id']}: this campaign holds another record under the "
        "same id (never overwritten)"
    ) in result.stderr


def test_merging_a_workbook_into_itself_is_a_usage_error(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    main, _ = _copy(two_boxes, tmp_path)
    result = _invoke("merge", main, main)
    assert result.exit_code == 2
    assert "is this workbook's own journal" in result.stderr


def _rewrite_journal(book: Path, change: object) -> None:
    entries = journal.read(book)
    change(entries[0]["attempt"])  # type: ignore[operator]
    book.with_name("campaign.journal.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8"
    )


def test_a_journal_line_edited_after_its_row_was_sealed_is_refused(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    """The other copy's journal is checked against its own sealed workbook: a faster time
    typed into the journal alone never joins this campaign."""
    main, other = _copy(two_boxes, tmp_path)
    _rewrite_journal(other, lambda a: a.update(measured_s=0.001))
    before = main.read_bytes()
    result = _invoke("merge", main, other)
    assert result.exit_code == 1
    assert "the other copy does not hold together: Attempts!2" in result.stderr
    assert main.read_bytes() == before


def test_a_predictions_path_out_of_the_folder_is_refused(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    main, other = _copy(two_boxes, tmp_path)
    (tmp_path / "escape.jsonl").write_text("{}\n", encoding="utf-8")
    _rewrite_journal(other, lambda a: a.update(predictions_path="../escape.jsonl"))
    before = main.read_bytes()
    result = _invoke("merge", main, other)
    assert result.exit_code == 1
    assert (
        "predictions path '../escape.jsonl' leaves the campaign folder (absolute, or through '..')"
    ) in result.stderr
    assert main.read_bytes() == before and len(journal.read(main)) == 1


def test_an_attempt_excluded_on_the_other_copy_stays_excluded(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    main, other = _copy(two_boxes, tmp_path)
    excluded = attempts(other)[0]["attempt_id"]
    assert (
        _invoke(
            "exclude", other, excluded, "--reason", "host maintenance during the run, ticket 12"
        ).exit_code
        == 0
    )
    assert _invoke("merge", main, other).exit_code == 0
    row = next(a for a in attempts(main) if a["attempt_id"] == excluded)
    assert (row["excluded"], row["exclusion_reason"]) == (
        "yes",
        "host maintenance during the run, ticket 12",
    )


def test_attempts_run_before_this_copy_was_amended_join_as_pre_amendment(
    two_boxes: tuple[Path, Path], tmp_path: Path
) -> None:
    main, other = _copy(two_boxes, tmp_path)
    book = store.read(main)
    book.forms["Protocol"]["threshold"] = 0.65
    store.save(book, main)
    assert _invoke("amend", main, "--reason", "raise the threshold").exit_code == 0
    assert _invoke("merge", main, other).exit_code == 0
    merged = attempts(other)[0]["attempt_id"]
    row = next(a for a in attempts(main) if a["attempt_id"] == merged)
    assert row["pre_amendment"] == "yes"
    checked = json.loads(_invoke("validate", main, "--json").output)  # only the memo is stale
    assert [f["check"] for f in checked["findings"]] == ["stale-memo"]
    assert _invoke("report", main, "--no-png").exit_code == 0  # rewrites the memo's stamp
    assert _invoke("validate", main).exit_code == 0


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("campaign_predictions/a001.jsonl", True),
        ("../escape.jsonl", False),
        ("/etc/passwd", False),
        ("a/../../b.jsonl", False),
        ("C:\\temp\\x.jsonl", False),
        ("..\\escape.jsonl", False),
    ],
)
def test_only_paths_inside_the_folder_are_written(path: str, inside: bool) -> None:
    """The rule merge and the Ray driver apply to a recorded predictions path."""
    from toolkit.evidence.merge import inside_folder

    assert inside_folder(path) is inside
