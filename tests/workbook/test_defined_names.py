"""Defined names for the figures a reviewer checks and the ranges the Summary reads (#33):
``Spent_per_accepted_USD`` is an Overview cell holding the Settlement's figure, and the
Summary's formulas say ``Attempts_measured_s`` where they said ``Attempts!$X$2:$X$10001``.
Every save defines them again; an Excel-like round trip (openpyxl) keeps them."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit import layout
from toolkit.cli import cli
from toolkit.workbook import store


@pytest.fixture
def priced(tmp_path: Path) -> Path:
    return report_campaign.priced_report(tmp_path)


def _named(path: Path) -> dict[str, object]:
    """Each headline name's cell value as cached (the generator's), by name."""
    written = openpyxl.load_workbook(path)
    cached = openpyxl.load_workbook(path, data_only=True)
    out = {}
    for name, defined in written.defined_names.items():
        if name.startswith("Attempts_") or name.endswith("_written"):
            continue
        ((sheet, cell),) = defined.destinations
        out[name] = cached[sheet][cell.replace("$", "")].value
    return out


def test_the_headline_figures_are_named_overview_cells(priced: Path) -> None:
    named = _named(priced)
    settlement = {r["item"]: r for r in store.read(priced).tables["Settlement"]}
    usd = settlement["total incurred (USD)"]
    assert named["Incurred_total_USD"] == usd["amount"] == 2193.5
    assert named["Spent_per_accepted_USD"] == usd["spent_per_accepted"] == 2193.5
    assert named["Spent_per_accepted_EUR"] == 508
    assert named["Ledger_status_USD"] == usd["ledger_status"]
    assert named["Forecast_per_expected_b8_fp32"] == 5.5  # 110.00 USD / 20 expected
    assert (
        named["Chosen_configuration"]
        == store.read(priced).forms["Decision"]["chosen_configuration"]
    )
    assert set(named) >= {"Known_subtotal_USD", "Report_run", "Ledger_status_EUR"}


def test_the_summary_reads_attempts_columns_by_name(priced: Path) -> None:
    book = openpyxl.load_workbook(priced)
    letter = layout.column_letter(layout.ATTEMPTS, "measured_s")
    assert book.defined_names["Attempts_measured_s"].attr_text == (
        f"Attempts!${letter}$2:${letter}$10001"
    )
    formulas = [
        str(c.value)
        for row in book["Summary"].iter_rows(min_row=2)
        for c in row
        if str(c.value).startswith("=")
    ]
    assert len(formulas) > 50
    assert [f for f in formulas if "Attempts!" in f] == []
    assert sum("Attempts_measured_s" in f for f in formulas) > 10


def test_names_survive_an_excel_like_save_and_a_save_that_keeps_the_formulas(
    priced: Path, runner: CliRunner
) -> None:
    def defined() -> dict[str, str]:
        return {k: v.attr_text for k, v in openpyxl.load_workbook(priced).defined_names.items()}

    before = defined()
    assert len(before) > len(layout.ATTEMPTS.names) + 10
    attempt = str(store.read(priced).tables["Attempts"][0]["attempt_id"])
    result = runner.invoke(cli, ["exclude", str(priced), attempt, "--reason", "power cut"])
    assert result.exit_code == 0, result.output
    assert defined() == before  # the same rows, the same names
    book = openpyxl.load_workbook(priced)
    book.save(priced)  # as a spreadsheet program saves it
    assert defined() == before
