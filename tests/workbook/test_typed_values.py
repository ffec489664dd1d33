"""Values typed in Excel are read as the layout means them (issue 38, item 4): a number in
a text field is its text, a real date-time takes the UTC offset the Protocol's deadline
states once; without that offset validation gives the exact form to type; the template's
text cells are formatted as Text."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl

from tests.support.builders import filled
from tests.support.paths import ROOT
from toolkit import layout
from toolkit.evidence.validate import validate_sheets
from toolkit.workbook import store


def _typed_in_excel(path: Path, deadline: object) -> None:
    """Type ``seeds`` as the number 0, the deadline as given, and a Verification row whose
    verified_at is a real date-time, as Excel stores them."""
    store.save(filled(), path)
    book = openpyxl.load_workbook(path)
    protocol = book["Protocol"]
    protocol.cell(layout.PROTOCOL.names.index("seeds") + 2, 2).value = 0
    protocol.cell(layout.PROTOCOL.names.index("deadline") + 2, 2).value = deadline
    verification = book["Verification"]
    names = layout.VERIFICATION.names
    for name, value in (
        ("variant_id", "b1-fp32"),
        ("verified", "yes"),
        ("confirmed_corpora", 1),
        ("verified_by", "A. Reviewer"),
        ("verified_at", dt.datetime(2026, 12, 10, 9, 30)),
        ("checked", "read 50 predictions against the labels"),
    ):
        verification.cell(2, names.index(name) + 1).value = value
    book.save(path)


def test_a_number_in_a_text_field_and_a_real_date_time_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "typed.xlsx"
    _typed_in_excel(path, "2026-12-11T09:00+01:00")
    data = store.read(path)
    assert data.forms["Protocol"]["seeds"] == "0"
    (row,) = data.tables["Verification"]
    assert row["verified_at"] == "2026-12-10T09:30+01:00"  # the deadline's offset
    found = validate_sheets(data, ["Protocol", "Verification"])
    assert [f for f in found if f.column in ("seeds", "verified_at", "deadline")] == []


def test_without_an_offset_in_the_deadline_validation_gives_the_form_to_type(
    tmp_path: Path,
) -> None:
    path = tmp_path / "typed.xlsx"
    _typed_in_excel(path, dt.datetime(2026, 12, 11, 9, 0))
    data = store.read(path)
    found = {f.column: f.message for f in validate_sheets(data, ["Protocol", "Verification"])}
    assert found["deadline"] == (
        "deadline must be an ISO 8601 date-time with its UTC offset, e.g. "
        "2026-12-07T09:00+01:00; found '2026-12-11T09:00': type it as text in that form (the "
        "cell formatted as Text); a date-time typed as an Excel date takes the UTC offset of "
        "Protocol deadline, so state it there once, as text such as 2026-12-11T09:00+01:00"
    )
    assert found["verified_at"].startswith("verified_at must be an ISO 8601 date-time")
    assert "seeds" not in found


def test_the_template_formats_typed_text_and_date_time_cells_as_text() -> None:
    book = openpyxl.load_workbook(ROOT / "workbook_template.xlsx")
    protocol = book["Protocol"]
    for name in ("seeds", "deadline", "scenario"):
        assert protocol.cell(layout.PROTOCOL.names.index(name) + 2, 2).number_format == "@"
    assert protocol.cell(layout.PROTOCOL.names.index("repetitions") + 2, 2).number_format == "0"
    rentals = book["Rentals"].column_dimensions  # a table's format is its column's
    for name, expected in (("start", "@"), ("reference", "@"), ("lots", "0")):
        letter = openpyxl.utils.get_column_letter(layout.RENTALS.names.index(name) + 1)
        assert rentals[letter].number_format == expected, name
