"""The store reads cells as they were written: text, numbers, dates, blanks, escapes, rich text.

``toolkit.workbook.cells`` reads values with python-calamine and formulas with
openpyxl. These tests hold it to the values openpyxl's read-only mode gives
(what the store read before), cell by cell, on workbooks with every kind of
cell written by xlsxwriter (shared and inline strings) and by openpyxl; to the
exact text Excel shows for OOXML escapes; and to exact round trips of what
:func:`toolkit.workbook.render.render` writes, which the hash chain needs.
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest
import xlsxwriter

from toolkit import layout
from toolkit.workbook import cells, store
from toolkit.workbook.model import WorkbookData
from toolkit.workbook.render import cell_image, render
from toolkit.workbook.text import cell_text


def _trimmed(row: Any) -> tuple[Any, ...]:
    """A row normalised as the store holds it, without its trailing blanks."""
    values = [cells.normalise(v) for v in row]
    while values and values[-1] is None:
        values.pop()
    return tuple(values)


def _rows(path: Path, sheet: str) -> list[tuple[Any, ...]]:
    """The rows of ``sheet`` as the store's reader gives them, normalised."""
    with path.open("rb") as handle, cells.Book(handle) as book:
        found = [_trimmed(r) for r in book.rows(sheet)]
    while found and not found[-1]:
        found.pop()
    return found


def _openpyxl_rows(path: Path, sheet: str) -> list[tuple[Any, ...]]:
    """The rows of ``sheet`` as openpyxl's read-only mode gives them, normalised."""
    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        found = [_trimmed(r) for r in book[sheet].iter_rows(values_only=True)]
    finally:
        book.close()
    while found and not found[-1]:  # openpyxl pads to the declared last row
        found.pop()
    return found


def _patched(path: Path, part: str, edit: Callable[[str], str]) -> None:
    """Rewrite one XML part of the workbook at ``path`` (to write what xlsxwriter never does)."""
    with zipfile.ZipFile(path) as archive:
        parts = [(name, archive.read(name)) for name in archive.namelist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts:
            archive.writestr(name, edit(content.decode()).encode() if name == part else content)


def _xlsxwriter_book(path: Path, options: dict[str, Any]) -> None:
    book = xlsxwriter.Workbook(str(path), options)
    ws = book.add_worksheet("Cells")
    date = book.add_format({"num_format": "yyyy-mm-dd hh:mm"})
    day = book.add_format({"num_format": "yyyy-mm-dd"})
    money = book.add_format({"num_format": '#,##0.00" USD"'})
    seconds = book.add_format({"num_format": '0.000" s"'})
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
    ws.write_number(2, 9, -3)  # a gap of six columns before it
    ws.write_string(3, 0, "  spaces kept  ")
    ws.write_string(3, 1, "line\nbreak and ünïcode ✓ 😀")
    ws.write_number(3, 2, 1e-7)
    ws.write_number(3, 3, 123456789012345)
    ws.write_number(3, 4, 1.5, seconds)
    ws.write_datetime(4, 0, dt.datetime(2026, 12, 7), day)
    ws.write_datetime(4, 1, dt.datetime(2026, 12, 7), date)
    ws.write_number(4, 2, 1e20)
    ws.write_number(4, 3, 2**53 + 2)
    ws.write_string(4, 4, "   ")
    ws.write_string(4, 5, "")
    book.close()


@pytest.mark.parametrize("inline", [False, True], ids=["shared strings", "inline strings"])
def test_an_xlsxwriter_workbook_reads_as_openpyxl_reads_it(tmp_path: Path, inline: bool) -> None:
    path = tmp_path / "cells.xlsx"
    _xlsxwriter_book(path, {"strings_to_formulas": False, "constant_memory": inline})
    found = _rows(path, "Cells")
    assert found == _openpyxl_rows(path, "Cells")
    assert found == [
        ("text", 42, 0.3, 12.5, "2026-12-07T09:30", True, None, "=not a formula"),
        (),  # the missing row
        ("text!", 84, None, None, None, None, None, None, None, -3),
        ("  spaces kept  ", "line\nbreak and ünïcode ✓ 😀", 1e-7, 123456789012345, 1.5),
        ("2026-12-07T00:00", "2026-12-07T00:00", 1e20, 2**53 + 2),
    ]
    assert [type(v) for v in found[0][1:4]] == [int, float, float]


def test_an_openpyxl_workbook_reads_as_openpyxl_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "openpyxl.xlsx"
    book = openpyxl.Workbook()
    ws = book.active
    ws.title = "Cells"
    ws.append(["a", 1, 2.5, dt.date(2026, 12, 7), dt.datetime(2026, 1, 2, 3, 4), False])
    ws["C4"] = "after a gap"
    ws["A6"] = dt.time(12, 30)
    ws["B6"] = dt.timedelta(hours=36)
    book.save(path)
    found = _rows(path, "Cells")
    assert found == _openpyxl_rows(path, "Cells")
    assert found[0] == ("a", 1, 2.5, "2026-12-07T00:00", "2026-01-02T03:04", False)
    assert found[5] == (dt.time(12, 30), dt.timedelta(hours=36))


@pytest.mark.parametrize("inline", [False, True], ids=["shared strings", "inline strings"])
def test_ooxml_escapes_read_as_excel_shows_them(tmp_path: Path, inline: bool) -> None:
    # xlsxwriter escapes control characters (_x000D_) and a literal _xHHHH_ (_x005F_);
    # another writer may leave an escape of a plain character (_x0041_ is "A").
    texts = ["carriage\rreturn", "a literal _x0041_ stays", "tab\tand\nnewline"]
    path = tmp_path / "escapes.xlsx"
    book = xlsxwriter.Workbook(str(path), {"constant_memory": inline})
    ws = book.add_worksheet("Cells")
    for row, text in enumerate([*texts, "PLAIN"]):
        ws.write_string(row, 0, text)
    book.close()
    part = "xl/worksheets/sheet1.xml" if inline else "xl/sharedStrings.xml"
    _patched(path, part, lambda xml: xml.replace("PLAIN", "_x0041_ and _x005f_x0042_"))
    assert _rows(path, "Cells") == [(t,) for t in [*texts, "A and _x0042_"]]


def test_rich_text_reads_as_its_runs_joined_without_phonetic_text(tmp_path: Path) -> None:
    path = tmp_path / "rich.xlsx"
    book = xlsxwriter.Workbook(str(path))
    ws = book.add_worksheet("Cells")
    bold = book.add_format({"bold": True})
    ws.write_rich_string(0, 0, "plain ", bold, "bold", " run")
    ws.write_string(1, 0, "PHONETIC")
    ws.write_string(2, 0, "EMPTY")
    book.close()
    _patched(
        path,
        "xl/sharedStrings.xml",
        lambda xml: xml.replace(
            "<t>PHONETIC</t>",
            '<r><t>ru</t></r><r><rPr><i/></rPr><t xml:space="preserve">by </t>'
            '</r><rPh sb="0" eb="1"><t>ignored</t></rPh>',
        ).replace("<t>EMPTY</t>", "<t/>"),
    )
    assert _rows(path, "Cells") == [("plain bold run",), ("ruby ",)]


def test_a_sheet_whose_first_columns_are_empty_still_reads_from_column_a(tmp_path: Path) -> None:
    path = tmp_path / "offset.xlsx"
    book = xlsxwriter.Workbook(str(path))
    ws = book.add_worksheet("Cells")
    ws.write_string(2, 2, "C3")
    ws.write_number(3, 1, 4)
    book.close()
    assert (
        _rows(path, "Cells")
        == _openpyxl_rows(path, "Cells")
        == [(), (), (None, None, "C3"), (None, 4)]
    )


def test_error_values_come_back_from_the_formula_pass(tmp_path: Path) -> None:
    path = tmp_path / "errors.xlsx"
    book = xlsxwriter.Workbook(str(path))
    ws = book.add_worksheet("Cells")
    ws.write_string(0, 0, "ERROR")
    ws.write_formula(1, 1, "=NA()", None, "#N/A")
    book.close()
    _patched(
        path,
        "xl/worksheets/sheet1.xml",
        lambda xml: xml.replace(
            '<c r="A1" t="s"><v>0</v></c>', '<c r="A1" t="e"><v>#DIV/0!</v></c>'
        ),
    )
    with path.open("rb") as handle, cells.Book(handle) as book_read:
        values = [list(r) for r in book_read.rows("Cells")]
        formulas, errors = book_read.formulas("Cells")
    assert values == [["", ""], ["", ""]]  # calamine gives errors as blanks
    assert errors == {(1, 1): "#DIV/0!"}
    assert {k: f.text for k, f in formulas.items()} == {(2, 2): "=NA()"}


def test_a_sheet_calamine_cannot_convert_is_read_by_openpyxl(tmp_path: Path) -> None:
    path = tmp_path / "duration.xlsx"
    book = xlsxwriter.Workbook(str(path))
    ws = book.add_worksheet("Cells")
    ws.write_string(0, 0, "before")
    ws.write_number(1, 0, 1e12, book.add_format({"num_format": "[h]:mm:ss"}))
    ws.write_string(1, 1, "a literal _x0041_")
    ws.write_number(2, 0, 7)
    book.close()
    # openpyxl reads the serial as the error #VALUE! (without its warning); the rows before
    # and after it are read once each. The one difference of this path: openpyxl drops the
    # _x005F_ that keeps a literal _x0041_ literal, so it reads decoded.
    assert _rows(path, "Cells") == [("before",), ("#VALUE!", "a literal A"), (7,)]


def test_a_value_far_away_is_read_row_by_row_not_as_a_dense_grid(tmp_path: Path) -> None:
    # One value at XFD1048576 would make calamine's grid 17 billion cells.
    path = tmp_path / "far.xlsx"
    render(WorkbookData.empty(), path)
    part = f"xl/worksheets/sheet{layout.SHEETS.index(layout.AUDIT) + 1}.xml"
    _patched(
        path,
        part,
        lambda xml: re.sub(
            r'<dimension ref="[^"]*"/>', '<dimension ref="A1:XFD1048576"/>', xml
        ).replace(
            "</sheetData>",
            '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>far</t>'
            "</is></c></row></sheetData>",
        ),
    )
    read = store.read(path)
    assert read.tables[layout.AUDIT.name] == []  # the far cell has no header: not a column
    # ...and a save would drop it: named, every save refuses (#39).
    assert [str(a) for a in read.unkept] == [
        "Audit!XFD1048576 (a value in a column with no header)"
    ]


def test_the_openpyxl_path_reads_a_campaign_as_calamine_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "campaign.xlsx"
    data = WorkbookData.empty()
    for n in range(3):
        data.append(
            layout.ATTEMPTS.name,
            {
                "attempt_id": f"a{n}",
                "variant_id": "b1",
                "notes": f"line\r\nbreak ✓ {n}",
                "measured_s": 0.1 + 0.2 * n,
                "repetition": n + 1,
            },
        )
    render(data, path)
    by_calamine = store.read(path)
    monkeypatch.setattr(cells, "MAX_DENSE_CELLS", 0)
    by_openpyxl = store.read(path)
    assert by_openpyxl.tables == by_calamine.tables
    assert by_openpyxl.forms == by_calamine.forms


#: Values a sealed attempt row can hold, and harder ones.
ROUND_TRIP = [
    "plain",
    "  padded  ",
    "line\r\nbreak",
    "tab\there",
    "_x0041_ literal",
    "_x005F_ too",
    "=SUM(A1)",
    "+1",
    "@x",
    "ünïcode ✓ 😀",
    "x" * 40_000,
    "ctrl\x01char",
    "   ",
    "",
    0,
    1,
    -3,
    42,
    0.1 + 0.2,
    1e-7,
    1 / 3,
    123456789012345,
    2**53,
    2**53 + 2,
    1e16,
    1e20,
    -0.0,
    1.5e-300,
    True,
    False,
    None,
]


@pytest.mark.parametrize("value", ROUND_TRIP, ids=[repr(v)[:30] for v in ROUND_TRIP])
def test_what_render_writes_reads_back_with_the_same_image(tmp_path: Path, value: Any) -> None:
    data = WorkbookData.empty()
    data.append(layout.ATTEMPTS.name, {"attempt_id": "a1", "notes": value})
    path = tmp_path / "round.xlsx"
    render(data, path)
    read = store.read(path).tables[layout.ATTEMPTS.name][0]["notes"]
    assert cell_image(read) == cell_image(value)
    if isinstance(value, str) and value.strip():
        assert read == cell_text(value)
    elif isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        assert read == int(value) and type(read) is int


def test_equal_texts_of_a_table_are_one_object(filled_workbook: Path) -> None:
    """A column repeats its few values down the sheet (a variant, a status, a reason): the
    rows share one copy of each text, which is most of what a large Attempts sheet holds."""
    rows = store.read(filled_workbook).tables["Variants"]
    heads = [r["head_path"] for r in rows]
    assert len(heads) >= 2 and all(h == "head" for h in heads)
    assert all(h is heads[0] for h in heads)
