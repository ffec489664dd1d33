"""A constant typed over a formula the report writes is a validate finding (the workbook's
formulas and the Python generator must agree); the next report writes the formula again."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
from click.testing import CliRunner

from toolkit import layout
from toolkit.cli import cli


def _validate(path: Path) -> tuple[int, list[dict[str, object]]]:
    result = CliRunner().invoke(cli, ["validate", str(path), "--json"])
    return result.exit_code, json.loads(result.output)["findings"]


def _type_over(path: Path, cells: dict[tuple[str, str], object]) -> None:
    """As a person typing in a spreadsheet program: each (sheet, column) of row 2."""
    book = openpyxl.load_workbook(path)
    for (sheet, column), value in cells.items():
        book[sheet][f"{layout.column_letter(layout.SHEET_BY_NAME[sheet], column)}2"] = value
    book.save(path)


def test_a_reported_workbook_has_no_typed_over_cell(reported: Path) -> None:
    code, findings = _validate(reported)
    assert [f for f in findings if f["check"] == "formula"] == []


def test_numbers_typed_over_the_summary_and_the_settlement_are_named(reported: Path) -> None:
    _type_over(reported, {("Summary", "median_s"): 1.0, ("Settlement", "budget_usd"): 1})
    code, findings = _validate(reported)
    typed = [(f["sheet"], f["row"], f["column"]) for f in findings if f["check"] == "formula"]
    assert code == 1
    assert typed == [("Summary", 2, "median_s"), ("Settlement", 2, "budget_usd")]
    message = next(f["message"] for f in findings if f["column"] == "median_s")
    median = layout.column_letter(layout.SUMMARY, "median_s")
    assert message.startswith(
        f"Summary!{median}2 holds the typed value 1 where `iteralab report` writes a formula"
    )
    assert CliRunner().invoke(cli, ["report", str(reported), "--no-png"]).exit_code == 0
    assert [f for f in _validate(reported)[1] if f["check"] == "formula"] == []


def test_a_typed_phase_of_the_schedule_is_no_finding(reported: Path) -> None:
    _type_over(reported, {("Schedule", "phase"): "setup"})  # typed by a person: an input
    assert [f for f in _validate(reported)[1] if f["check"] == "formula"] == []
