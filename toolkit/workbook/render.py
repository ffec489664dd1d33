"""Write a whole workbook from plain data with xlsxwriter.

The template is ``render(WorkbookData.empty())``; every later save renders the
updated data the same way, so appended rows get their formats and dropdowns,
and formulas carry the cached values the Python generator computed.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter
from xlsxwriter.worksheet import Worksheet

from toolkit import __version__, layout
from toolkit.workbook.model import Chart, Formula, WorkbookData
from toolkit.workbook.text import cell_text

#: Dropdowns and formats reach this many rows below the data, so rows typed by
#: hand in Excel get them too.
SPARE_ROWS = 1000

NUMBER_FORMATS = {
    layout.INT: "0",
    layout.NUMBER: "#,##0.00##",  # 0.0027 h reads 0.0027, not 0.00
    layout.SECONDS: '0.000" s"',
    layout.BYTES: "#,##0",
    layout.USD: '#,##0.00" USD"',
    layout.USD_OR_UNDEFINED: '#,##0.00" USD"',
    layout.MONEY: '#,##0.00',
    layout.RATIO: "0.0000",
}
#: Kinds whose typed cells are formatted as Text: Excel then keeps ``0`` or a date as typed.
TEXT_KINDS = (layout.TEXT, layout.CHOICE, layout.YESNO, layout.DATETIME)
INPUT_FILL = "#DDEBF7"  # blue: typed by a person
COMPUTED_FILL = "#EDEDED"  # grey: written by the toolkit


class _Formats:
    """Cell formats, created once per workbook."""

    def __init__(self, book: xlsxwriter.Workbook) -> None:
        self.book = book
        self.header = book.add_format(
            {"bold": True, "bg_color": "#1F4E78", "font_color": "#FFFFFF", "text_wrap": True,
             "valign": "top", "border": 1}
        )
        self.title = book.add_format({"bold": True, "font_size": 14})
        self.wrap = book.add_format({"text_wrap": True, "valign": "top"})
        self._cache: dict[tuple[str, bool], Any] = {}

    def cell(self, kind: str, computed: bool) -> Any:
        key = (kind, computed)
        if key not in self._cache:
            spec: dict[str, Any] = {
                "bg_color": COMPUTED_FILL if computed else INPUT_FILL,
                "border": 1,
                "border_color": "#BFBFBF",
                "valign": "top",
            }
            if kind in NUMBER_FORMATS:
                spec["num_format"] = NUMBER_FORMATS[kind]
            elif kind in TEXT_KINDS and not computed:
                spec["num_format"] = "@"  # Text: what a person types stays as typed (#38)
            self._cache[key] = self.book.add_format(spec)
        return self._cache[key]


def render(data: WorkbookData, path: str | Path) -> None:
    """Write ``data`` as a complete workbook at ``path`` (overwriting it)."""
    book = xlsxwriter.Workbook(
        str(path),
        {"strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False},
    )
    # Fixed metadata keeps two renders of the same data identical cell by cell.
    book.set_properties({"title": "IteraGPU Lab campaign workbook", "author": "iteralab"})
    formats = _Formats(book)
    sheets = {}
    for sheet in layout.SHEETS:
        ws = sheets[sheet.name] = book.add_worksheet(sheet.name)
        if sheet.kind == "text":
            _write_guide(ws, formats)
        elif sheet.kind == "form":
            _write_form(ws, sheet, data.forms.get(sheet.name, {}), formats)
        else:
            _write_table(ws, sheet, data.tables.get(sheet.name, []), formats,
                         data.formulas.get(sheet.name, {}))
    for chart in data.charts:
        _insert_chart(book, sheets[chart.sheet], chart)
    book.close()


def _insert_chart(book: xlsxwriter.Workbook, ws: Worksheet, spec: Chart) -> None:
    chart = book.add_chart({"type": spec.kind})
    for series in spec.series:
        chart.add_series(series)
    chart.set_title({"name": spec.title})
    chart.set_x_axis({"name": spec.x_title})
    chart.set_y_axis({"name": spec.y_title})
    chart.set_size({"width": spec.size[0], "height": spec.size[1]})
    ws.insert_chart(spec.anchor, chart)


def write_value(ws: Worksheet, row: int, col: int, value: Any, fmt: Any) -> None:
    """Write one value with the right xlsxwriter call; text always stays text."""
    if type(value) is str and value:  # the commonest cell first
        ws.write_string(row, col, cell_text(value), fmt)
    elif isinstance(value, Formula):
        cached = "" if value.value is None else _plain(value.value)
        if value.array:
            ws.write_array_formula(row, col, row, col, value.text, fmt, cached)
        else:
            ws.write_formula(row, col, value.text, fmt, cached)
    elif value is None or value == "":
        ws.write_blank(row, col, None, fmt)
    elif isinstance(value, bool):
        ws.write_string(row, col, layout.YES if value else layout.NO, fmt)
    elif isinstance(value, (int, float, Decimal)):
        ws.write_number(row, col, float(value), fmt)
    else:
        ws.write_string(row, col, cell_text(value), fmt)


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def cell_image(value: Any) -> Any:
    """What :func:`write_value` writes for ``value``, as plain data to compare.

    Two values with equal images are written alike: a formula as its text,
    array flag and cached value (xlsxwriter writes a cached number in full); a
    number as the 16 significant digits xlsxwriter writes; text as
    :func:`cell_text` makes it; a boolean as yes/no. Blank (None, empty or
    whitespace-only text, which reads back blank) is None. A value read back
    from a rendered workbook has the image of the value rendered.
    """
    if isinstance(value, Formula):
        cached = value.value
        if isinstance(cached, (int, float, Decimal)) and not isinstance(cached, bool):
            cached = float(cached)
        elif isinstance(cached, str) and not cached.strip():
            cached = None
        text = value.text  # xlsxwriter drops an array formula's braces and the leading =
        text = text[1:-1] if text.startswith("{") and text.endswith("}") else text
        return ("formula", text.removeprefix("="), value.array, cached)
    if value is None or isinstance(value, bool):
        return value if value is None else (layout.YES if value else layout.NO)
    if isinstance(value, (int, float, Decimal)):
        return float(f"{float(value):.16G}")
    text = cell_text(value)
    return text if text.strip() else None


def _write_guide(ws: Worksheet, formats: _Formats) -> None:
    ws.set_column(0, 0, 110, formats.wrap)
    ws.write_string(0, 0, "IteraGPU Lab campaign workbook", formats.title)
    ws.write_string(1, 0, f"layout_version: {layout.LAYOUT_VERSION}")
    ws.write_string(2, 0, f"generated by iteralab {__version__}")
    row = 4
    for step in layout.GUIDE_STEPS:
        ws.write_string(row, 0, step)
        row += 1
    row += 1
    ws.write_string(row, 0, "Sheets", formats.title)
    for sheet in layout.SHEETS[1:]:
        row += 1
        ws.write_string(row, 0, f"{sheet.name}: {sheet.purpose}")


def _write_form(ws: Worksheet, sheet: layout.Sheet, values: dict[str, Any],
                formats: _Formats) -> None:
    ws.freeze_panes(1, 0)
    ws.set_column(0, 0, 28)
    ws.set_column(1, 1, 60)
    ws.set_column(2, 2, 80)
    for col, title in enumerate(layout.FORM_HEADER):
        ws.write_string(0, col, title, formats.header)
    for row, field in enumerate(sheet.all_columns, start=1):
        ws.write_string(row, 0, field.name, formats.cell(layout.TEXT, True))
        write_value(ws, row, 1, values.get(field.name), formats.cell(field.kind, field.computed))
        ws.write_string(row, 2, field.help, formats.wrap)
        _add_dropdown(ws, field, row, row, 1)


def _write_table(ws: Worksheet, sheet: layout.Sheet, rows: list[dict[str, Any]],
                 formats: _Formats, kept: dict[tuple[int, str], Formula]) -> None:
    ws.freeze_panes(1, 1)
    last_row = len(rows) + SPARE_ROWS
    for col, column in enumerate(sheet.all_columns):
        cell_format = formats.cell(column.kind, column.computed)
        ws.set_column(col, col, column.width, cell_format)
        ws.write_string(0, col, column.name, formats.header)
        if column.help:
            ws.write_comment(0, col, column.help, {"x_scale": 2, "y_scale": 1.5})
        _add_dropdown(ws, column, 1, last_row, col)
        for r, row in enumerate(rows, start=1):
            value = row.get(column.name)
            formula = kept.get((r - 1, column.name)) if kept else None
            if formula is not None and not isinstance(value, Formula):
                value = Formula(formula.text, value, formula.array)
            # An empty cell is left unwritten: the column's format already covers it, and
            # a table's blank cells are a third of a large Attempts sheet (benchmarks/).
            if value is not None and value != "":
                write_value(ws, r, col, value, cell_format)
    if sheet.all_columns:
        ws.autofilter(0, 0, max(len(rows), 1), len(sheet.all_columns) - 1)


def _add_dropdown(ws: Worksheet, column: layout.Column, first: int, last: int, col: int) -> None:
    if not column.choices:
        return
    ws.data_validation(
        first, col, last, col,
        {
            "validate": "list",
            "source": list(column.choices),
            "error_title": column.name,
            "error_message": "Choose one of: " + ", ".join(column.choices),
        },
    )
