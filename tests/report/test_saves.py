"""`iteralab report` renders the workbook at most once: not at all when nothing changed.

The report compares what its refresh made with the workbook as read
(:func:`toolkit.workbook.store.unchanged`) and saves only a difference; with
integrity findings it refreshes again before its one save (it used to save twice).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit import editing, layout
from toolkit.cli import cli
from toolkit.reporting import build
from toolkit.workbook import store
from toolkit.workbook.model import Formula

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


@pytest.fixture
def saves(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths ``store.save`` is called with, from now on."""
    found: list[Path] = []
    real = store.save

    def counting(data: Any, path: Any) -> None:
        found.append(Path(path))
        real(data, path)

    monkeypatch.setattr(store, "save", counting)
    return found


def test_a_second_report_of_the_same_evidence_saves_nothing(
    tmp_path: Path, saves: list[Path]
) -> None:
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    saves.clear()
    assert build(path, pngs=False)[1].workbook_saved
    assert saves == [path]
    before = path.read_bytes()
    result, outputs = build(path, pngs=False)
    assert saves == [path] and not outputs.workbook_saved
    assert path.read_bytes() == before
    assert (outputs.folder / "report.md").exists() and result.stats


def test_the_command_says_when_it_saved_nothing(tmp_path: Path) -> None:
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    build(path, pngs=False)
    result = CliRunner().invoke(cli, ["report", str(path), "--no-png"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(f"up to date: {path} (protocol ")
    assert result.stdout.splitlines()[0].endswith("already holds these figures; nothing saved")
    document = CliRunner().invoke(cli, ["report", str(path), "--no-png", "--json"])
    assert json.loads(document.stdout)["workbook_saved"] is False


def test_a_report_after_a_change_saves_once(tmp_path: Path, saves: list[Path]) -> None:
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    build(path, pngs=False)
    with editing.change(path, refresh_derived=False) as edit:  # a phase ends an hour later
        edit.data.tables[layout.SCHEDULE.name][0]["end"] = "2026-12-07T13:00+01:00"
    saves.clear()
    build(path, pngs=False)
    assert saves == [path]


def test_a_report_that_only_logs_an_edited_price_in_audit_saves_it(
    tmp_path: Path, saves: list[Path]
) -> None:
    # Renaming a phase changes no computed cell, but the refresh appends an Audit row.
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    build(path, pngs=False)
    with editing.change(path, refresh_derived=False) as edit:
        edit.data.tables[layout.SCHEDULE.name][0]["phase"] = "renamed phase"
    saves.clear()
    build(path, pngs=False)
    assert saves == [path]
    audit = store.read(path).tables[layout.AUDIT.name]
    assert audit[-1]["action"] == "prices" and "renamed phase" in audit[-1]["reason"]
    build(path, pngs=False)
    assert saves == [path]  # logged once: the next report has nothing to save


def test_a_report_with_integrity_findings_saves_once_with_the_untrusted_verdicts(
    tmp_path: Path, saves: list[Path]
) -> None:
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    with editing.change(path, refresh_derived=False) as edit:
        row = next(r for r in edit.data.tables["Attempts"] if r["attempt_id"] == "b4-fp32-r1")
        row["measured_s"] = 1.0  # an edited timing: the chain no longer holds
    saves.clear()
    build(path, pngs=False)
    assert saves == [path]
    summary = {r["variant_id"]: r for r in store.read(path).tables[layout.SUMMARY.name]}
    assert summary["b4-fp32"]["notes"].startswith(
        "INTEGRITY: 1 attempt row(s) with integrity findings"
    )


def test_unchanged_compares_values_as_written_and_sees_any_difference(tmp_path: Path) -> None:
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    build(path, pngs=False)
    read = store.read(path)
    same = read.copy()
    assert store.unchanged(read, same)
    summary = same.tables[layout.SUMMARY.name]
    # What the refresh holds (a Formula with its cached value, a Decimal, a bool) compares
    # as what render writes for it.
    kept = same.formulas[layout.SUMMARY.name]
    (index, column), formula = next(iter(kept.items()))
    del kept[(index, column)]
    summary[index][column] = Formula(
        formula.text.lstrip("="), summary[index][column], formula.array
    )
    assert store.unchanged(read, same)
    summary[index][column] = Formula(formula.text, "another value", formula.array)
    assert not store.unchanged(read, same)
    other = read.copy()
    other.tables[layout.SUMMARY.name] = other.tables[layout.SUMMARY.name][:-1]
    assert not store.unchanged(read, other)
    other = read.copy()
    other.charts = []
    assert not store.unchanged(read, other)
