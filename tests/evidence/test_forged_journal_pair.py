"""A pair of journal lines (a start and its record) copied with a new attempt id is never
ingested and is named by validate: it filled a slot a completed attempt holds and named that
attempt's predictions file (it was sealed, moved the variant's median and validated).

Real files: a copy of the quick demo campaign of tests/fixtures/layout3_campaign, its journal
appended to as a text editor appends."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.paths import FIXTURES
from toolkit.cli import cli
from toolkit.evidence import journal, provenance
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"


def _forge_last_pair(path: Path, new_id: str, **changes: object) -> None:
    """Append a copy of the journal's last start line and record under ``new_id``."""
    lines = journal.journal_path(path).read_text(encoding="utf-8").splitlines()
    start, record = json.loads(lines[-2]), json.loads(lines[-1])
    start["attempt_id"] = start["spec"]["attempt_id"] = new_id
    record["attempt"]["attempt_id"] = new_id
    record["attempt"].update(changes)
    with journal.journal_path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(start) + "\n" + json.dumps(record) + "\n")


def test_a_copied_pair_with_a_new_id_is_not_ingested_and_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    path = folder / NAME
    rows_before = len(store.read(path).tables["Attempts"])
    _forge_last_pair(path, "a007-b1-fp32-r2-forged", measured_s=0.0001)

    result = CliRunner().invoke(cli, ["ingest", str(path)])
    assert "ingested 1 attempt" not in result.output
    assert len(store.read(path).tables["Attempts"]) == rows_before
    found = [f for f in validate(store.read(path), path) if f.check == "journal"]
    assert len(found) == 1
    assert found[0].message.startswith(
        "example_campaign.journal.jsonl: attempt 'a007-b1-fp32-r2-forged' names the "
        "predictions file example_campaign_predictions/a006-b1-fp32-r2-d4b5.jsonl of attempt "
        "'a006-b1-fp32-r2-d4b5'"
    )


def test_a_copied_pair_with_its_own_predictions_path_is_named_by_its_slot(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    path = folder / NAME
    _forge_last_pair(
        path,
        "a007-b1-fp32-r2-forged",
        measured_s=0.0001,
        predictions_path="example_campaign_predictions/a007-b1-fp32-r2-forged.jsonl",
    )
    refused = provenance.refusals(store.read(path), path, journal.read(path))
    assert list(refused) == ["a007-b1-fp32-r2-forged"]
    assert (
        "fills the slot (variant 'b1-fp32', repetition 2, seed 20250101) that completed "
        "attempt 'a006-b1-fp32-r2-d4b5' already holds"
    ) in refused["a007-b1-fp32-r2-forged"]


def test_a_start_line_with_a_key_the_runner_never_writes_is_named_not_a_traceback(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    path = folder / NAME
    lines = journal.journal_path(path).read_text(encoding="utf-8").splitlines()
    start = json.loads(lines[-2])
    start["attempt_id"] = start["spec"]["attempt_id"] = "a007-b1-fp32-r3-lost"
    start["spec"]["extra"] = 1
    with journal.journal_path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(start) + "\n")
    before = path.read_bytes()

    result = CliRunner().invoke(cli, ["ingest", str(path)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert (
        "the start line of attempt 'a007-b1-fp32-r3-lost' holds a spec the runner never "
        "writes (unknown key(s) 'extra'); nothing was written"
    ) in result.output
    assert path.read_bytes() == before


def test_a_predictions_path_leading_outside_the_campaign_folder_is_never_read(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    path = folder / NAME
    secret = tmp_path / "hostname"
    secret.write_text("host\n", encoding="utf-8")
    data = store.read(path)
    data.tables["Attempts"][0]["predictions_path"] = "../hostname"
    found = [f for f in validate(data, path) if f.check == "predictions"]
    assert [(f.row, f.column) for f in found] == [(2, "predictions_path")]
    assert found[0].message.startswith(
        "attempt 'a001-b1-fp32-r1-d4b5': predictions_path ../hostname leads outside the "
        "campaign folder"
    )
    assert "no longer matches" not in found[0].message
