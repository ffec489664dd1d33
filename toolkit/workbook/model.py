"""Plain data held by a workbook: form fields, table rows, formulas. Stdlib only."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from toolkit import layout

Row = dict[str, Any]


@dataclass(frozen=True)
class Formula:
    """A cell formula with the value the Python generator computed for it.

    The cached value lets readers that never recalculate (pandas, openpyxl's
    ``data_only``, previews) see the right number; ``array`` marks a
    single-cell array formula: iteralab writes none (one edited without
    Ctrl+Shift+Enter computes otherwise), but one read from a workbook an older
    iteralab reported is written back as it was.

    The rules every formula the toolkit writes follows, so that Excel,
    LibreOffice and Gnumeric compute the same value (the tests recalculate
    every workbook they build in LibreOffice and Gnumeric and compare):

    - booleans are coerced before they are summed: ``SUMPRODUCT(1*(A=B))`` or a
      product of conditions, never ``SUMPRODUCT((A=B))`` (Excel and Gnumeric
      count a bare boolean array as 0; LibreOffice coerces silently);
    - an aggregate over a selection needs no array entry: LARGE over an array
      inside SUMPRODUCT (``toolkit.report.summary.kth_largest``; a median is the
      mean of the middle two), MATCH over an array inside SUMPRODUCT; never
      ``MAX``/``MEDIAN``/``IF`` over an array outside it (LibreOffice and
      Gnumeric, like Excel without array entry, then compute another value);
    - an aggregate over a possibly empty selection is guarded (``IF(n=0,"",...)``):
      MIN/MAX of nothing give 0 in a spreadsheet;
    - no FILTER, UNIQUE, LET, XLOOKUP, MINIFS/MAXIFS or table-column references
      (missing from LibreOffice 7.4 or Gnumeric, or needing ``_xlfn.``);
      no COUNTIFS/SUMIFS on user text (their criteria read ``*``, ``<>`` as
      patterns): equalities inside SUMPRODUCT instead.
    """

    text: str
    value: Any = None
    array: bool = False


@dataclass(frozen=True, kw_only=True)
class Chart:
    """A chart placed on a sheet; its series are xlsxwriter ``add_series`` options.

    Series point at cell ranges (``=Summary!$A$2:$A$4``), so the chart follows
    the formulas' values. Charts are derived data: ``iteralab report`` adds them
    again on each run; a workbook read back holds none.
    """

    sheet: str
    anchor: str  # top-left cell, e.g. "B8"
    kind: str  # xlsxwriter chart type: "line", "column", "scatter", ...
    title: str
    series: tuple[dict[str, Any], ...]
    x_title: str = ""
    y_title: str = ""
    size: tuple[int, int] = (720, 400)


@dataclass(frozen=True)
class Addition:
    """Something a person added beyond the layout, and where: its sheet, its Excel row (a
    form row's; 1, the header, for a column) and its column (a table column's name or a form
    row's field name); a whole sheet has neither."""

    text: str  # as a reader is told: "column 'my note' of Variants (Q1)"
    sheet: str
    row: int | None = None
    column: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass
class WorkbookData:
    """Everything a workbook holds, as plain Python values.

    ``forms`` maps a form sheet to its field values; ``tables`` maps a table
    sheet to its rows (dicts keyed by column name); ``row_numbers`` keeps the
    Excel row of each read row so findings can point at it. ``formulas`` keeps,
    per sheet of :data:`layout.FORMULA_SHEETS`, the formulas read back by
    (row index, column): the table holds their cached values, and a save that
    does not recompute those sheets writes the same formulas again.
    """

    forms: dict[str, dict[str, Any]] = field(default_factory=dict)
    tables: dict[str, list[Row]] = field(default_factory=dict)
    row_numbers: dict[str, list[int]] = field(default_factory=dict)
    layout_version: int = layout.LAYOUT_VERSION
    charts: list[Chart] = field(default_factory=list)
    formulas: dict[str, dict[tuple[int, str], Formula]] = field(default_factory=dict)
    #: What the file holds beyond the layout (a sheet, a column, a form row a person added):
    #: a save would drop it, so the store refuses to save (``store.check_keepable``).
    unkept: list[Addition] = field(default_factory=list)

    @classmethod
    def empty(cls) -> WorkbookData:
        """A workbook with every form field blank and every table empty."""
        data = cls()
        for sheet in layout.SHEETS:
            if sheet.kind == "form":
                data.forms[sheet.name] = {c.name: None for c in sheet.all_columns}
            elif sheet.kind == "table":
                data.tables[sheet.name] = []
                data.row_numbers[sheet.name] = []
        return data

    def copy(self) -> WorkbookData:
        """A copy that a refresh of the derived sheets does not change.

        The refresh replaces the derived tables, rewrites the Decision form, clears the
        formulas and may append to Audit (edited prices): every container is copied, each
        row too (values are shared; about 10 ms for 10,000 attempts).
        """
        return dataclasses.replace(
            self,
            forms={name: dict(values) for name, values in self.forms.items()},
            tables={name: [dict(r) for r in rows] for name, rows in self.tables.items()},
            row_numbers=dict(self.row_numbers),
            charts=list(self.charts),
            formulas={name: dict(cells) for name, cells in self.formulas.items()},
            unkept=list(self.unkept),
        )

    def form(self, sheet: str) -> dict[str, Any]:
        """Field values of a form sheet."""
        return self.forms[sheet]

    def table(self, sheet: str) -> list[Row]:
        """Rows of a table sheet."""
        return self.tables[sheet]

    def excel_row(self, sheet: str, index: int) -> int:
        """The Excel row number of row ``index`` of a table (header is row 1)."""
        numbers = self.row_numbers.get(sheet, [])
        return numbers[index] if index < len(numbers) else index + 2

    def append(self, sheet: str, row: Row) -> None:
        """Append a row to a table; unknown columns are a programming error."""
        unknown = set(row) - set(layout.SHEET_BY_NAME[sheet].names)
        if unknown:
            raise KeyError(f"{sheet} has no columns {sorted(unknown)}")
        rows = self.tables[sheet]
        numbers = self.row_numbers.setdefault(sheet, [])
        numbers.append((numbers[-1] + 1) if numbers else len(rows) + 2)
        rows.append({name: row.get(name) for name in layout.SHEET_BY_NAME[sheet].names})
