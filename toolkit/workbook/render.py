"""Write a whole workbook from plain data with xlsxwriter.

The template is ``render(WorkbookData.empty())``; every later save renders the
updated data the same way, so appended rows get their formats and dropdowns,
and formulas carry the cached values the Python generator computed.
"""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter
from xlsxwriter.worksheet import Worksheet

from toolkit import __version__, layout
from toolkit.workbook import names, text_sheets, written
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
    layout.MONEY: "#,##0.00",
    layout.RATIO: "0.0000",
}
#: A money column shown in its row's currency: the amount, then the ISO 4217 code.
CURRENCY_FORMAT = '#,##0.00" {}"'
PLAIN_MONEY = "#,##0.00"
#: Kinds of an amount in USD by the column's name.
USD_KINDS = (layout.USD, layout.USD_OR_UNDEFINED)
#: Where a row says it rests on an example figure (layout.EXAMPLE in it).
EXAMPLE_COLUMNS = ("grounds", "source")
#: Kinds whose typed cells are formatted as Text: Excel then keeps ``0`` or a date as typed.
TEXT_KINDS = (layout.TEXT, layout.CHOICE, layout.YESNO, layout.DATETIME)
INPUT_FILL = "#DDEBF7"  # blue: typed by a person
COMPUTED_FILL = "#EDEDED"  # grey: written by the toolkit
#: What a person may still do on a protected sheet (no password: Review > Unprotect Sheet):
#: filter and sort, resize columns and rows, select any cell. Grey cells are locked, blue
#: ones not (:func:`typed_by_person`).
PROTECTION = {
    "autofilter": True,
    "sort": True,
    "format_columns": True,
    "format_rows": True,
    "select_locked_cells": True,
    "select_unlocked_cells": True,
}


class _Formats:
    """Cell formats, created once per workbook."""

    def __init__(self, book: xlsxwriter.Workbook) -> None:
        self.book = book
        self.header = book.add_format(
            {
                "bold": True,
                "bg_color": "#1F4E78",
                "font_color": "#FFFFFF",
                "text_wrap": True,
                "valign": "top",
                "border": 1,
            }
        )
        self.title = book.add_format({"bold": True, "font_size": 14})
        self.wrap = book.add_format({"text_wrap": True, "valign": "top"})
        self.warning = book.add_format(
            {
                "bold": True,
                "text_wrap": True,
                "valign": "top",
                "font_color": "#9C0006",
                "bg_color": "#FFC7CE",
            }
        )
        self._cache: dict[tuple[str, bool, str | None], Any] = {}

    def cell(self, kind: str, computed: bool, currency: str | None = None) -> Any:
        """The format of a cell of ``kind``: grey and locked when ``computed`` (the toolkit
        writes it), blue and unlocked when a person types it; ``currency``: a money cell
        shown in that ISO 4217 code ("" for a money cell whose currency is unknown: no code
        shown), with " EXAMPLE" after it for an example figure."""
        key = (kind, computed, currency)
        if key not in self._cache:
            spec: dict[str, Any] = {
                "bg_color": COMPUTED_FILL if computed else INPUT_FILL,
                "locked": computed,
                "border": 1,
                "border_color": "#BFBFBF",
                "valign": "top",
            }
            if currency is not None:
                spec["num_format"] = CURRENCY_FORMAT.format(currency) if currency else PLAIN_MONEY
            elif kind in NUMBER_FORMATS:
                spec["num_format"] = NUMBER_FORMATS[kind]
            elif kind in TEXT_KINDS and not computed:
                spec["num_format"] = "@"  # Text: what a person types stays as typed
            self._cache[key] = self.book.add_format(spec)
        return self._cache[key]


def render(data: WorkbookData, path: str | Path) -> None:
    """Write ``data`` as a complete workbook at ``path`` (overwriting it).

    The package is assembled in memory and written with one plain write: xlsxwriter writing
    the file itself left its zip archive open when the disk filled, and the archive's
    late close printed a second traceback ("Exception ignored") after the error."""
    package = io.BytesIO()
    book = xlsxwriter.Workbook(
        package,
        {
            "strings_to_formulas": False,
            "strings_to_urls": False,
            "strings_to_numbers": False,
            "in_memory": True,
        },
    )
    # Fixed metadata keeps two renders of the same data identical cell by cell.
    book.set_properties({"title": "IteraGPU Lab campaign workbook", "author": "iteralab"})
    formats = _Formats(book)
    sheets = {}
    text_cells: list[text_sheets.WrittenCell] = []
    for sheet in layout.SHEETS:
        ws = sheets[sheet.name] = book.add_worksheet(sheet.name)
        _print_setup(ws, sheet)
        ws.protect("", PROTECTION)  # no password: a guard against typing over, not a lock
        if sheet is layout.OVERVIEW:
            text_cells += _write_overview(ws, data, formats)
        elif sheet.kind == "text":
            text_cells += _write_guide(ws, formats)
        elif sheet.kind == "form":
            _write_form(ws, sheet, data.forms.get(sheet.name, {}), formats)
        else:
            _write_table(
                ws,
                sheet,
                data.tables.get(sheet.name, []),
                formats,
                data.formulas.get(sheet.name, {}),
            )
    for chart in data.charts:
        _insert_chart(book, sheets[chart.sheet], chart)
    for name, refers_to in names.attempts_names(len(data.tables.get("Attempts", []))).items():
        book.define_name(name, refers_to)
    sealed = written.seal(data)
    if sealed:
        book.define_name(written.NAME, sealed)
    sealed = text_sheets.seal(text_cells)
    if sealed:
        book.define_name(text_sheets.NAME, sealed)
    book.close()
    Path(path).write_bytes(package.getbuffer())


def _print_setup(ws: Worksheet, sheet: layout.Sheet) -> None:
    """Every sheet prints on A4, one page wide: a table in landscape with its header row
    repeated on each page, a form or the Guide in portrait."""
    ws.set_paper(9)
    ws.fit_to_pages(1, 0)
    ws.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.5)
    ws.set_footer(f"&L{sheet.name}&RPage &P of &N")
    if sheet.kind == "table":
        ws.set_landscape()
        ws.repeat_rows(0)
    else:
        ws.set_portrait()


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
            ws.write_array_formula(
                row, col, row, col, cell_text(value.text), cell_format=fmt, value=cached
            )
        else:
            ws.write_formula(row, col, cell_text(value.text), fmt, cached)
    elif value is None or value == "":
        ws.write_blank(row, col, None, fmt)
    elif isinstance(value, bool):
        ws.write_string(row, col, layout.YES if value else layout.NO, fmt)
    elif isinstance(value, (int, float, Decimal)):
        ws.write_number(row, col, float(value), fmt)
    else:
        ws.write_string(row, col, cell_text(value), fmt)


def _plain(value: Any) -> Any:
    """A formula's cached value as xlsxwriter writes it: text made safe for a cell (a control
    character a person typed would make the sheet's XML unreadable), a Decimal as a float."""
    if isinstance(value, str):
        return cell_text(value)
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


def _write_guide(ws: Worksheet, formats: _Formats) -> list[text_sheets.WrittenCell]:
    """The Guide, in column A; returns the text cells written."""
    ws.set_column(0, 0, 110, formats.wrap)
    lines = [
        (0, "IteraGPU Lab campaign workbook", formats.title),
        (1, f"layout_version: {layout.LAYOUT_VERSION}", None),
        (2, f"generated by iteralab {__version__}", None),
    ]
    row = 4
    for step in layout.GUIDE_STEPS:
        lines.append((row, step, None))
        row += 1
    row += 1
    lines.append((row, "Sheets", formats.title))
    for sheet in layout.SHEETS[1:]:
        row += 1
        lines.append((row, f"{sheet.name}: {sheet.purpose}", None))
    for row, text, fmt in lines:
        ws.write_string(row, 0, text, fmt)
    return [(layout.GUIDE.name, row + 1, 1, text) for row, text, _ in lines]


#: Rows of the Settlement the Overview's lookups reach: far beyond any settlement.
OVERVIEW_REACH = 10001
#: Characters of a line of the Overview's value column (70 wide).
OVERVIEW_LINE = 75


def _plain_value(cell: Any) -> Any:
    value = cell.value if isinstance(cell, Formula) else cell
    return "" if value is None else _plain(value)


def _lookup(sheet: layout.Sheet, column: str, key: str, last: int) -> str:
    """``sheet``'s ``column`` on the row whose first column is ``key`` (by id, not position);
    empty when the row or the cell is."""

    def rng(name: str) -> str:
        letter = layout.column_letter(sheet, name)
        return f"{sheet.name}!${letter}$2:${letter}${last}"

    text = key.replace('"', '""')
    found = f'INDEX({rng(column)},MATCH("{text}",{rng(sheet.names[0])},0))'
    return f'IFERROR(IF({found}="","",{found}),"")'


def _marked(code: str, row: dict[str, Any]) -> str:
    """A currency code, with EXAMPLE after it when the row rests on an example figure."""
    example = any(layout.EXAMPLE in str(row.get(name) or "") for name in EXAMPLE_COLUMNS)
    return f"{code} {layout.EXAMPLE}" if example else code


#: One Overview line: label, formula text, cached value, currency format, defined name (or "").
OverviewRow = tuple[str, Any, Any, str, str]


def _write_overview(
    ws: Worksheet, data: WorkbookData, formats: _Formats
) -> list[text_sheets.WrittenCell]:
    """The reviewer's page: each figure a formula into the sheet that holds it, found by id,
    with the value the report computed cached. Returns the text cells written."""
    ws.set_column(0, 0, 34, formats.wrap)
    ws.set_column(1, 1, 70, formats.wrap)
    ws.set_column(2, 2, 20, formats.wrap)
    ws.write_string(0, 0, "Overview", formats.title)
    sheet = layout.OVERVIEW.name
    written = [(sheet, 1, 1, "Overview")]
    settlement = data.tables.get(layout.SETTLEMENT.name, [])
    rows = [
        *_decision_lines(data),
        *_incurred_lines(settlement),
        *_forecast_lines(settlement),
        *_quality_lines(data.tables.get(layout.SUMMARY.name, [])),
    ]
    wrapped = formats.book.add_format(
        {
            "bg_color": COMPUTED_FILL,
            "border": 1,
            "border_color": "#BFBFBF",
            "valign": "top",
            "text_wrap": True,
        }
    )
    named = set()
    for i, (label, text, cached, code, name) in enumerate(rows, start=2):
        if name and name.lower() not in named:  # names are case-blind: the first one stands
            named.add(name.lower())
            formats.book.define_name(name, f"={layout.OVERVIEW.name}!$B${i + 1}")
        ws.write_string(i, 0, label, wrapped)
        written.append((sheet, i + 1, 1, label))
        fmt = formats.cell(layout.MONEY, True, code) if code else wrapped
        # An id typed with a control character inside a formula's literal would make the
        # sheet's XML unreadable; validate refuses such ids, the file stays readable.
        ws.write_formula(i, 1, cell_text(text), fmt, _plain_value(cached))
        # A formula's row keeps its height in a spreadsheet: room for the memo's lines.
        lines = -(-len(str(_plain_value(cached))) // OVERVIEW_LINE)
        if lines > 1:
            ws.set_row(i, 15 * min(lines, 12))
    last = len(rows) + 2
    for i, text in enumerate(_overview_warnings(data, settlement), start=last + 1):
        ws.merge_range(i, 0, i, 2, text, formats.warning)
        written.append((sheet, i + 1, 1, text))
        last = i
    ws.print_area(0, 0, last, 2)
    ws.fit_to_pages(1, 1)  # one page, whatever the memo's length
    return written


def _decision_lines(data: WorkbookData) -> list[OverviewRow]:
    """The memo's chosen configuration and its run, read from the Decision sheet."""
    decision = data.forms.get(layout.DECISION.name, {})
    rows = []
    for field in ("chosen_configuration", "report_run"):
        row = layout.DECISION.names.index(field) + 2
        cell = f"{layout.DECISION.name}!$B${row}"
        rows.append(
            (
                f"Decision: {field.replace('_', ' ')}",
                f'IF({cell}="","",{cell})',
                decision.get(field),
                "",
                names.headline(field.capitalize()),
            )
        )
    return rows


def _incurred_lines(settlement: list[dict[str, Any]]) -> list[OverviewRow]:
    """Each currency's incurred total, known subtotal, ledger status and spent per
    accepted corpus, from the Settlement's total rows."""
    rows: list[OverviewRow] = []
    for r in settlement:
        if r.get("kind") != "total incurred" or not r.get("currency"):
            continue
        item, code = str(r["item"]), _marked(str(r["currency"]), r)
        for label, column, money, name in (
            ("incurred total", "amount", True, "Incurred_total"),
            ("known subtotal", "known_subtotal", True, "Known_subtotal"),
            ("ledger status", "ledger_status", False, "Ledger_status"),
            ("spent per accepted corpus", "spent_per_accepted", True, "Spent_per_accepted"),
        ):
            rows.append(
                (
                    f"{label} ({r['currency']})",
                    _lookup(layout.SETTLEMENT, column, item, OVERVIEW_REACH),
                    r.get(column),
                    code if money else "",
                    names.headline(name, str(r["currency"])),
                )
            )
    return rows


def _forecast_lines(settlement: list[dict[str, Any]]) -> list[OverviewRow]:
    """Each configuration's forecast cost per expected corpus, where it has one."""
    rows: list[OverviewRow] = []
    for r in settlement:
        forecast = _plain_value(r.get("projected_cost_per_expected_usd"))
        if r.get("kind") == "configuration" and forecast != "":
            rows.append(
                (
                    f"forecast per expected corpus: {r['item']}",
                    _lookup(
                        layout.SETTLEMENT,
                        "projected_cost_per_expected_usd",
                        str(r["item"]),
                        OVERVIEW_REACH,
                    ),
                    forecast,
                    _marked("USD", r),
                    names.headline("Forecast_per_expected", str(r["item"])),
                )
            )
    return rows


def _quality_lines(summary: list[dict[str, Any]]) -> list[OverviewRow]:
    """Each variant's quality verdict and whether it is in the cost comparison."""
    rows: list[OverviewRow] = []
    for r in summary:
        for label, column in (
            ("quality verdict", "quality_verdict"),
            ("in the cost comparison", "equal_quality"),
        ):
            rows.append(
                (
                    f"{r['variant_id']}: {label}",
                    _lookup(layout.SUMMARY, column, str(r["variant_id"]), len(summary) + 1),
                    r.get(column),
                    "",
                    "",
                )
            )
    return rows


def _overview_warnings(data: WorkbookData, settlement: list[dict[str, Any]]) -> list[str]:
    """The banners under the figures: amounts resting on example figures, a quick demo."""
    warnings = []
    if any(layout.EXAMPLE in str(r.get("grounds") or "") for r in settlement):
        warnings.append(
            f"{layout.EXAMPLE}: some amounts rest on figures typed for a demo or an "
            "example (their cells say EXAMPLE): not a quote, not a measurement"
        )
    scenario = str(data.forms.get(layout.PROTOCOL.name, {}).get("scenario") or "")
    if "QUICK DEMO" in scenario:
        warnings.append("QUICK DEMO: a declared subset for a smoke run, not the comparison")
    return warnings


def _write_form(
    ws: Worksheet, sheet: layout.Sheet, values: dict[str, Any], formats: _Formats
) -> None:
    ws.freeze_panes(1, 0)
    ws.set_column(0, 0, 28)
    ws.set_column(1, 1, 60)
    ws.set_column(2, 2, 80)
    for col, title in enumerate(layout.FORM_HEADER):
        ws.write_string(0, col, title, formats.header)
    for row, field in enumerate(sheet.all_columns, start=1):
        ws.write_string(row, 0, field.name, formats.cell(layout.TEXT, True))
        typed = typed_by_person(sheet, field, values)
        write_value(ws, row, 1, values.get(field.name), formats.cell(field.kind, not typed))
        ws.write_string(row, 2, field.help, formats.wrap)
        _add_dropdown(ws, field, row, row, 1)


#: The least width of a money column (characters).
MONEY_WIDTH = 21


def _write_table(
    ws: Worksheet,
    sheet: layout.Sheet,
    rows: list[dict[str, Any]],
    formats: _Formats,
    kept: dict[tuple[int, str], Formula],
) -> None:
    ws.freeze_panes(1, 1)
    last_row = len(rows) + SPARE_ROWS
    for col, column in enumerate(sheet.all_columns):
        # A money column in its row's currency: rows typed later show no code until saved.
        money = bool(column.currency) or column.kind in USD_KINDS
        # The rows below the data are where a person adds rows: formatted as an added row.
        grey_below = not typed_by_person(sheet, column, None)
        cell_format = formats.cell(column.kind, grey_below, "" if column.currency else None)
        # Wide enough for "12,071.00 USD EXAMPLE": a money cell of the demo carries its label.
        width = max(column.width, MONEY_WIDTH) if money else column.width
        ws.set_column(col, col, width, cell_format)
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
                typed = typed_by_person(sheet, column, row)
                if money:
                    fmt = _money_format(formats, column, row, typed)
                elif typed != grey_below:
                    fmt = cell_format
                else:
                    fmt = formats.cell(column.kind, not typed)
                write_value(ws, r, col, value, fmt)
    if sheet.all_columns:
        ws.autofilter(0, 0, max(len(rows), 1), len(sheet.all_columns) - 1)


def typed_by_person(sheet: layout.Sheet, column: layout.Column, row: dict[str, Any] | None) -> bool:
    """Whether a person types this cell (blue, unlocked) or the toolkit writes it (grey,
    locked on the protected sheet): the one rule for both. ``row``: the row's values, None
    for an empty row below a table, where a person adds one. The layout says it by column,
    but for the Settlement's other costs, typed by a person in a sheet the report writes:
    their rows, and the rows below the table where a person adds one."""
    if not column.computed:
        return True
    return (
        sheet is layout.SETTLEMENT
        and column.name in layout.OTHER_COST_COLUMNS
        and (row is None or row.get("kind") == "other cost")
    )


def _money_format(
    formats: _Formats, column: layout.Column, row: dict[str, Any], typed: bool
) -> Any:
    """A money cell's format in its row's currency (every amount shows its own code), marked
    EXAMPLE when the row's grounds or source say it rests on an example figure."""
    if column.currency:
        code = str(row.get(column.currency) or "").strip().upper() or column.blank_currency
        code = code if code.isascii() and code.isalpha() and len(code) == 3 else ""
    else:
        code = "USD"
    return formats.cell(column.kind, not typed, _marked(code, row).strip())


def _add_dropdown(ws: Worksheet, column: layout.Column, first: int, last: int, col: int) -> None:
    if not column.choices:
        return
    listed = ", ".join(column.choices)
    # Open choices: the list suggests, another value is accepted (validate checks it).
    ws.data_validation(
        first,
        col,
        last,
        col,
        {
            "validate": "list",
            "source": list(column.choices),
            "error_title": column.name,
            "error_message": (
                f"Suggested: {listed}; `iteralab validate` checks other values"
                if column.open_choices
                else f"Choose one of: {listed}"
            ),
            "error_type": "information" if column.open_choices else "stop",
        },
    )
