"""The store's sheet parser gives exactly the values openpyxl's read-only mode gives.

``toolkit.workbook.sheetxml`` replaced openpyxl's ``iter_rows(values_only=True)``
in :func:`toolkit.workbook.store.read` for speed (benchmarks/README.md); these
tests hold it to openpyxl's values on workbooks with every kind of cell, written
by xlsxwriter (shared and inline strings) and by openpyxl.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import fromstring

import openpyxl
import xlsxwriter
from openpyxl.cell.text import Text

from toolkit.workbook import sheetxml

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def _trimmed(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row without its trailing blanks (openpyxl pads rows to the sheet's width)."""
    values = list(row)
    while values and values[-1] is None:
        values.pop()
    return tuple(values)


def _both(path: Path, sheet: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The rows of ``sheet`` as openpyxl reads them, and as sheetxml reads them."""
    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        ws = book[sheet]
        expected = [_trimmed(r) for r in ws.iter_rows(values_only=True)]
        found = [_trimmed(r) for r in sheetxml.rows(ws)]
    finally:
        book.close()
    while expected and not expected[-1]:  # openpyxl pads to the declared last row too
        expected.pop()
    return expected, found


def _xlsxwriter_book(path: Path, options: dict[str, Any]) -> None:
    book = xlsxwriter.Workbook(str(path), options)
    ws = book.add_worksheet("Cells")
    date = book.add_format({"num_format": "yyyy-mm-dd hh:mm"})
    money = book.add_format({"num_format": '#,##0.00" USD"'})
    ws.write_string(0, 0, "text")
    ws.write_number(0, 1, 42)
    ws.write_number(0, 2, 0.1 + 0.2)
    ws.write_number(0, 3, 12.5, money)
    ws.write_datetime(0, 4, dt.datetime(2026, 12, 7, 9, 30), date)
    ws.write_boolean(0, 5, True)
    ws.write_blank(0, 6, None, money)
    ws.write_string(0, 7, "=not a formula")
    # row 2 left out: a missing row
    ws.write_formula(2, 0, '=A1&"!"', None, "text!")
    ws.write_formula(2, 1, "=B1*2", None, 84)
    ws.write_formula(2, 2, "=NA()", None, "#N/A")
    ws.write_number(2, 9, -3)  # a gap of six columns before it
    ws.write_string(3, 0, "  spaces kept  ")
    ws.write_string(3, 1, "line\nbreak and ünïcode ✓")
    ws.write_number(3, 2, 1e-7)
    ws.write_number(3, 3, 123456789012345)
    book.close()


def test_rows_of_an_xlsxwriter_workbook_with_shared_strings_match_openpyxl(tmp_path: Path
                                                                           ) -> None:
    path = tmp_path / "shared.xlsx"
    _xlsxwriter_book(path, {"strings_to_formulas": False})
    expected, found = _both(path, "Cells")
    assert found == expected
    assert found[0][4] == dt.datetime(2026, 12, 7, 9, 30)
    assert found[1] == ()  # the missing row
    assert found[2] == ("text!", 84, "#N/A", None, None, None, None, None, None, -3)


def test_rows_of_a_workbook_with_inline_strings_match_openpyxl(tmp_path: Path) -> None:
    path = tmp_path / "inline.xlsx"
    _xlsxwriter_book(path, {"strings_to_formulas": False, "constant_memory": True})
    expected, found = _both(path, "Cells")
    assert found == expected
    assert found[3][:2] == ("  spaces kept  ", "line\nbreak and ünïcode ✓")


def test_rows_of_an_openpyxl_workbook_match_openpyxl(tmp_path: Path) -> None:
    path = tmp_path / "openpyxl.xlsx"
    book = openpyxl.Workbook()
    ws = book.active
    ws.title = "Cells"
    ws.append(["a", 1, 2.5, dt.date(2026, 12, 7), dt.datetime(2026, 1, 2, 3, 4), False])
    ws["C4"] = "after a gap"
    ws["A6"] = dt.time(12, 30)
    ws["B6"] = dt.timedelta(hours=36)
    book.save(path)
    expected, found = _both(path, "Cells")
    assert found == expected
    assert found[0][3] == dt.datetime(2026, 12, 7, 0, 0)


def test_string_item_text_joins_plain_and_rich_runs_without_phonetic_text() -> None:
    item = fromstring(
        f'<si xmlns="{NS}"><t>plain </t><r><rPr><b/></rPr><t>bold</t></r><r><t> run</t></r>'
        "<rPh sb=\"0\" eb=\"1\"><t>ignored</t></rPh></si>")
    assert sheetxml.string_item_text(item) == "plain bold run"
    assert sheetxml.string_item_text(item) == Text.from_tree(item).content


def test_string_item_text_of_an_empty_item_is_empty_text() -> None:
    item = fromstring(f'<si xmlns="{NS}"><t/></si>')
    assert sheetxml.string_item_text(item) == ""
    assert Text.from_tree(item).content == ""
