"""A tail cut off with the journal is named: the chain's anchor outside the Attempts sheet
(#14 item 7; toolkit.evidence.anchor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import make_campaign, variant
from toolkit import editing
from toolkit.cli import cli
from toolkit.evidence import journal
from toolkit.evidence.anchor import anchor_path
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def test_the_last_row_deleted_with_the_journal_and_its_predictions_is_named(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4), variant("b4-fp32", 4)])
    assert CliRunner().invoke(cli, ["run", str(book), "--quiet"]).exit_code == 0
    rows = store.read(book).tables["Attempts"]
    anchor = json.loads(anchor_path(book).read_text(encoding="utf-8"))
    assert (anchor["attempts"], anchor["head"]) == (2, rows[-1]["row_sha256"])
    assert validate(store.read(book), book) == []
    # The forger's cut: the last row, its predictions file and the journal.
    (tmp_path / str(rows[-1]["predictions_path"])).unlink()
    journal.journal_path(book).unlink()
    with editing.change(book, refresh_derived=False) as edit:
        edit.data.tables["Attempts"].pop()
    missing, finding, stale = validate(store.read(book), book)
    assert (missing.sheet, missing.check) == ("Attempts", "journal")
    assert (stale.sheet, stale.column, stale.check) == ("Decision", "report_run", "stale-memo")
    assert (finding.sheet, finding.column, finding.check) == ("Attempts", "row_sha256", "anchor")
    assert finding.message == (
        f"campaign.chain.json says the workbook held 2 attempt row(s), the last sealed "
        f"{rows[-1]['row_sha256'][:12]}...; the sheet holds 1: rows were cut from the end "
        "(with the journal?): restore the workbook, its journal and predictions from a copy "
        "of the campaign folder (`iteralab ingest` restores the rows the journal still holds; "
        "a copy saved over the workbook whose edits are to be kept: `iteralab verify "
        '--reanchor --reason "..."`, it anchors the rows as they stand and logs the reason '
        "and the anchor it replaces in Audit)"
    )


def test_a_journal_deleted_beside_ingested_attempts_is_named(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4)])
    assert CliRunner().invoke(cli, ["run", str(book), "--quiet"]).exit_code == 0
    journal.journal_path(book).unlink()
    (finding,) = validate(store.read(book), book)
    assert (finding.sheet, finding.check) == ("Attempts", "journal")
    assert finding.message == (
        "campaign.journal.jsonl is missing beside the workbook, though campaign.chain.json says "
        "1 attempt row(s) were ingested from it: the runner's record of every attempt is gone, "
        "and edits are checked by the chain alone; restore it from a copy of the campaign "
        "folder (or move it beside the workbook)"
    )
