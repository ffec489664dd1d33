"""A copy of the workbook opened mid-run, edited and saved over it (as LibreOffice does):
`ingest` restores the attempt rows, and `verify --reanchor --reason` anchors what stands,
keeping the person's edit, logged in Audit; the Audit anchor finding names that way out.

Real files: a copy of the quick demo campaign of tests/fixtures/layout3_campaign."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.paths import FIXTURES
from toolkit.cli import cli
from toolkit.editing import change
from toolkit.evidence.anchor import anchor_path
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # several saves of a real campaign: not in `make test-fast`

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"
LEDGER_ROW = {
    "date": "2026-12-03",
    "description": "storage for the campaign folder",
    "reference": "INV-77",
    "amount": 4.5,
    "currency": "USD",
    "source": "typed by the reviewer",
}


def _invoke(*args: str) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def saved_over(tmp_path: Path) -> Path:
    """The campaign after a copy opened with 5 of its 6 rows, and a ledger line typed in it,
    was saved over the workbook once the run had ingested row 6 and an exclusion was logged."""
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    path = folder / NAME
    anchor_path(path).unlink()
    with change(path, refresh_derived=False) as edit:  # saved in this layout, then anchored
        edit.data.tables["Attempts"].pop()  # the run's last attempt, not ingested yet
    opened = store.read(path)  # the spreadsheet program opens the workbook here

    assert _invoke("ingest", path).exit_code == 0  # the run ingests its last attempt
    excluded = _invoke("exclude", path, "a002-b4-fp32-r1-d4b5", "--reason", "host maintenance")
    assert excluded.exit_code == 0

    opened.append("Ledger", LEDGER_ROW)  # the person's edit, then saved over the workbook
    store.save(opened, path)
    return path


def _anchor_findings(path: Path) -> list[object]:
    return [f for f in validate(store.read(path), path) if f.check == "anchor"]


def test_the_audit_anchor_finding_names_the_reanchor(saved_over: Path) -> None:
    assert _invoke("ingest", saved_over).exit_code == 0  # restores attempt row 6
    (found,) = _anchor_findings(saved_over)
    assert found.sheet == "Audit"
    assert (
        'keep it and run `iteralab verify --reanchor --reason "..."`: it anchors the rows as '
        "they stand and logs the reason and the anchor it replaces in Audit"
    ) in found.message


def test_reanchor_keeps_the_edit_and_logs_the_anchor_it_replaces(saved_over: Path) -> None:
    before = json.loads(anchor_path(saved_over).read_text(encoding="utf-8"))
    assert _invoke("ingest", saved_over).exit_code == 0
    result = _invoke(
        "verify", saved_over, "--reanchor", "--reason", "LibreOffice saved a mid-run copy"
    )
    assert result.exit_code == 0, result.output
    assert "re-anchored" in result.output and "logged in the Audit sheet (action reanchor)" in (
        result.output
    )
    data = store.read(saved_over)
    assert _anchor_findings(saved_over) == []
    assert [r["reference"] for r in data.tables["Ledger"]] == ["INV-77"]
    assert len(data.tables["Attempts"]) == 6
    logged = data.tables["Audit"][-1]
    assert (logged["action"], logged["reason"]) == ("reanchor", "LibreOffice saved a mid-run copy")
    details = json.loads(logged["details"])
    assert details["anchor_before"]["audit_rows"] == before["audit_rows"]
    assert details["anchor_before"]["audit_head"] == before["audit_head"]
    assert "the Audit sheet held" in details["findings"][0]


def test_reanchor_waits_for_the_journal_to_restore_its_rows(saved_over: Path) -> None:
    before = saved_over.read_bytes()
    result = _invoke("verify", saved_over, "--reanchor", "--reason", "copy saved over")
    assert result.exit_code == 1
    assert "not re-anchored: its journal holds 1 attempt(s) the Attempts sheet lacks" in (
        result.output
    )
    assert "run `iteralab ingest` first" in result.output
    assert saved_over.read_bytes() == before


def test_reanchor_of_a_workbook_that_reaches_its_anchor_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    before = (folder / NAME).read_bytes()
    result = _invoke("verify", folder / NAME, "--reanchor", "--reason", "just in case")
    assert result.exit_code == 2
    assert "nothing to re-anchor: its rows reach example_campaign.chain.json" in result.output
    assert (folder / NAME).read_bytes() == before


def test_reanchor_needs_a_reason(saved_over: Path) -> None:
    result = _invoke("verify", saved_over, "--reanchor")
    assert result.exit_code == 2
    assert "--reanchor needs --reason" in result.output
