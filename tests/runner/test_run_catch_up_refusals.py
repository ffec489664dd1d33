"""`iteralab run` catches up on its journal before the first attempt, as `ingest` does, and
says each record it refused there (the journal, the attempt, why, what to do), as `ingest`
says it; a refused record is not counted as run, so its slot stays to be run; and, as
`ingest`, the command then exits 1 while the journal holds the refused lines.

Real files: a copy of the quick demo campaign of tests/fixtures/layout3_campaign, its
journal appended to as a text editor appends."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from tests.support.paths import FIXTURES
from toolkit.cli import cli
from toolkit.evidence import journal
from toolkit.runner.driver import campaign
from toolkit.workbook import store

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"


def _forged(tmp_path: Path, new_id: str, variant: str | None = None) -> Path:
    """A copy of the fixture with its last start line and record appended again under
    ``new_id`` (as ``variant``, when given)."""
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    path = folder / NAME
    lines = journal.journal_path(path).read_text(encoding="utf-8").splitlines()
    start, record = json.loads(lines[-2]), json.loads(lines[-1])
    start["attempt_id"] = start["spec"]["attempt_id"] = new_id
    record["attempt"].update(attempt_id=new_id, measured_s=0.0001)
    if variant is not None:
        start["spec"]["variant"]["variant_id"] = variant
        record["attempt"]["variant_id"] = variant
    with journal.journal_path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(start) + "\n" + json.dumps(record) + "\n")
    return path


def test_run_says_each_record_it_refused_while_catching_up(tmp_path: Path) -> None:
    path = _forged(tmp_path, "a007-b1-fp32-r2-forged")
    rows = len(store.read(path).tables["Attempts"])

    result = CliRunner().invoke(cli, ["run", str(path), "--resume", "--variant", "b1-fp32"])
    assert result.exit_code == 1, result.output
    assert (
        "refused: example_campaign.journal.jsonl: attempt 'a007-b1-fp32-r2-forged' names the "
        "predictions file example_campaign_predictions/a006-b1-fp32-r2-d4b5.jsonl of attempt "
        "'a006-b1-fp32-r2-d4b5' (one file per attempt): `iteralab run` writes each start line "
        "and record itself, so this pair was written by hand: remove both lines from the "
        "journal"
    ) in result.stderr
    assert (
        "note: 1 journal record(s) not ingested (refused above) and not counted as run"
    ) in result.stderr
    assert "nothing to run: all 2 planned attempts are recorded" in result.stdout
    assert (
        "example_campaign.journal.jsonl: 1 record(s) not ingested (refused above); the others "
        "are in the workbook"
    ) in result.stderr
    assert result.stderr.count("refused: ") == 1  # named once, before the run
    assert len(store.read(path).tables["Attempts"]) == rows


def test_a_refused_record_leaves_its_slot_to_be_run(tmp_path: Path) -> None:
    # b8-bf16 never ran in the quick demo: a copied pair renamed to it claims its first slot.
    path = _forged(tmp_path, "a007-b8-bf16-r1-forged", variant="b8-bf16")

    prepared = campaign.prepare(path, campaign.Options(variant_ids=("b8-bf16",)))
    assert list(prepared.refused) == ["a007-b8-bf16-r1-forged"]
    assert "a007-b8-bf16-r1-forged" not in {a.get("attempt_id") for a in prepared.known}
    assert [(s.variant_id, s.repetition) for s in prepared.todo] == [
        ("b8-bf16", 1),
        ("b8-bf16", 2),
    ]
