"""Every sheet iteralab writes is protected without a password (#33): the grey cells the
toolkit writes are locked, so that a formula or a recorded value is not overwritten by
accident; the blue cells a person types, and the empty rows below a typed table where a
person adds rows, are not. Filtering and sorting stay allowed. Every save writes the
protection again (#39): a person who unprotected a sheet finds it protected after the next
save."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from openpyxl.worksheet.worksheet import Worksheet

from tests.support import report_campaign
from tests.support.paths import ROOT, SAMPLES
from tests.support.recalc import recalculate
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.workbook import store
from toolkit.workbook.render import COMPUTED_FILL, INPUT_FILL


@pytest.fixture
def priced(tmp_path: Path) -> Path:
    """The priced campaign after a report: Settlement with other costs, a memo."""
    return report_campaign.priced_report(tmp_path)


def _cell(ws: Worksheet, sheet: layout.Sheet, column: str, row: int) -> openpyxl.cell.Cell:
    return ws[f"{layout.column_letter(sheet, column)}{row}"]


def _row_of(ws: Worksheet, sheet: layout.Sheet, column: str, value: str) -> int:
    letter = layout.column_letter(sheet, column)
    return next(c.row for c in ws[letter] if c.value == value)


def _protected_without_password(book: openpyxl.Workbook) -> list[str]:
    """The sheets that are not protected as iteralab protects them."""
    return [
        ws.title
        for ws in book.worksheets
        if not ws.protection.sheet
        or ws.protection.password
        or ws.protection.autoFilter  # True would forbid the filter buttons
        or ws.protection.sort
    ]


def test_the_template_protects_every_sheet_without_a_password() -> None:
    book = openpyxl.load_workbook(ROOT / "workbook_template.xlsx")
    assert [ws.title for ws in book.worksheets] == [s.name for s in layout.SHEETS]
    assert _protected_without_password(book) == []


def test_grey_cells_are_locked_and_blue_cells_are_not(priced: Path) -> None:
    book = openpyxl.load_workbook(priced)
    assert _protected_without_password(book) == []
    protocol, decision = book["Protocol"], book["Decision"]
    threshold = layout.PROTOCOL.names.index("threshold") + 2
    assert protocol[f"A{threshold}"].protection.locked  # the field's name
    assert not protocol[f"B{threshold}"].protection.locked  # its value, typed
    assert protocol[f"C{threshold}"].protection.locked  # its help
    reviewed = layout.DECISION.names.index("reviewed_by") + 2
    drafted = layout.DECISION.names.index("draft") + 2
    assert not decision[f"B{reviewed}"].protection.locked
    assert decision[f"B{drafted}"].protection.locked
    assert not _cell(book["Variants"], layout.VARIANTS, "batch_size", 2).protection.locked
    assert not _cell(book["Rentals"], layout.RENTALS, "lots", 2).protection.locked
    assert _cell(book["Attempts"], layout.ATTEMPTS, "measured_s", 2).protection.locked
    assert _cell(book["Attempts"], layout.ATTEMPTS, "excluded", 2).protection.locked
    summary = book["Summary"]
    assert _cell(summary, layout.SUMMARY, "median_s", 2).protection.locked
    assert _cell(summary, layout.SUMMARY, "notes", 2).protection.locked
    settlement = book["Settlement"]
    other = _row_of(settlement, layout.SETTLEMENT, "kind", "other cost")
    total = _row_of(settlement, layout.SETTLEMENT, "kind", "total incurred")
    for column in layout.OTHER_COST_COLUMNS:
        assert not _cell(settlement, layout.SETTLEMENT, column, other).protection.locked
    assert _cell(settlement, layout.SETTLEMENT, "amount", total).protection.locked
    assert _cell(settlement, layout.SETTLEMENT, "spent_per_accepted", total).protection.locked
    assert book["Overview"]["B3"].protection.locked


def test_the_rows_below_a_typed_table_stay_unlocked(priced: Path) -> None:
    """A person adds a Variants row or an other cost below the table: the columns' formats
    (which Excel gives an empty cell) are unlocked where a person types, locked elsewhere."""
    book = openpyxl.load_workbook(priced)

    def column_locked(sheet: layout.Sheet, column: str) -> bool:
        dimensions = book[sheet.name].column_dimensions
        index = sheet.names.index(column) + 1  # openpyxl groups equal columns: min..max
        found = [d for d in dimensions.values() if d.min and d.min <= index <= d.max]
        assert found, f"no format on {sheet.name} column {column}"
        return bool(found[0].protection.locked)

    assert not column_locked(layout.VARIANTS, "variant_id")
    assert not column_locked(layout.TARIFFS, "price_per_lot_usd")
    for column in layout.OTHER_COST_COLUMNS:
        assert not column_locked(layout.SETTLEMENT, column)
    assert column_locked(layout.SETTLEMENT, "spent_per_accepted")
    assert column_locked(layout.SUMMARY, "median_s")
    assert column_locked(layout.ATTEMPTS, "excluded")


def test_locked_is_grey_and_unlocked_is_blue_on_every_cell(priced: Path) -> None:
    """One rule decides colour and lock: no blue cell locked, no grey cell unlocked."""
    book = openpyxl.load_workbook(priced)
    slips = []
    checked = 0
    for ws in book.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                fill = str(cell.fill.fgColor.rgb)[-6:]
                if fill in (COMPUTED_FILL[1:], INPUT_FILL[1:]):
                    checked += 1
                    if cell.protection.locked != (fill == COMPUTED_FILL[1:]):
                        slips.append(f"{ws.title}!{cell.coordinate}")
    assert checked > 500
    assert slips == []


def _unprotect_every_sheet(path: Path) -> None:
    """As a person does with Review > Unprotect Sheet, sheet by sheet, then saves."""
    book = openpyxl.load_workbook(path)
    for ws in book.worksheets:
        ws.protection.sheet = False
    book.save(path)
    assert len(_protected_without_password(openpyxl.load_workbook(path))) == len(layout.SHEETS)


@pytest.mark.parametrize("command", ["exclude", "ledger", "report"])
def test_every_save_protects_the_sheets_again(
    priced: Path, runner: CliRunner, command: str
) -> None:
    _unprotect_every_sheet(priced)
    if command == "exclude":
        attempt = str(openpyxl.load_workbook(priced)["Attempts"]["A2"].value)
        args = ["exclude", str(priced), attempt, "--reason", "provider maintenance"]
    elif command == "ledger":
        export = str(SAMPLES / "billing_example.csv")
        args = ["ledger", "import", str(priced), export, "--column", "reference=Order"]
        args += ["--column", "amount=Total"]
    else:
        args = ["report", str(priced), "--no-png"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert _protected_without_password(openpyxl.load_workbook(priced)) == []


def test_protection_survives_a_libreoffice_round_trip(priced: Path, tmp_path: Path) -> None:
    """Opened and saved by LibreOffice, the sheets stay protected, blue cells open."""
    book = openpyxl.load_workbook(recalculate(priced, tmp_path / "lo"))
    assert all(ws.protection.sheet for ws in book.worksheets)
    assert not _cell(book["Variants"], layout.VARIANTS, "batch_size", 2).protection.locked
    assert _cell(book["Summary"], layout.SUMMARY, "median_s", 2).protection.locked


def test_a_password_a_person_set_is_named_and_refused_not_dropped(
    priced: Path, runner: CliRunner
) -> None:
    """iteralab writes no password and cannot write a person's again: rather than remove it
    silently, validate names the sheet and every save refuses until it is removed."""
    book = openpyxl.load_workbook(priced)
    book["Variants"].protection.password = "finance-only"
    book.save(priced)
    named = (
        "the password on the protection of sheet Variants (iteralab protects every sheet "
        "without one and cannot write it again; Review > Unprotect Sheet removes it)"
    )
    findings = [f for f in validate(store.read(priced)) if f.check == "kept"]
    assert [(f.sheet, f.row, f.column) for f in findings] == [("Variants", None, "")]
    assert findings[0].message.startswith(f"{named} is not part of the workbook iteralab keeps")
    before = priced.read_bytes()
    result = runner.invoke(cli, ["report", str(priced), "--no-png"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {priced}: holds what iteralab does not keep when it saves: {named}; "
        "nothing was written"
    )
    assert priced.read_bytes() == before
