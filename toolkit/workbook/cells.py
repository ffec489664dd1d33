"""Cell values and formulas of a workbook's sheets, read by maintained parsers.

Values come from python-calamine (Rust: about ten times faster than openpyxl's
read-only mode on a 10,000-attempt sheet, benchmarks/README.md): formulas as
their cached value, text with its OOXML ``_xHHHH_`` escapes decoded as Excel
decodes them. Formulas come from openpyxl, on the sheets asked for only, in a
workbook opened without its shared strings (which calamine has read, and which
the formula pass does not need: it keys cells by position).

Values are plain: text, numbers, booleans, dates and times as calamine gives
them; :func:`normalise` turns them into what :class:`WorkbookData` holds. What
calamine does not give, and what is read instead:

- an error value (``#N/A``, ``#DIV/0!``): calamine gives blank text; on the
  sheets that get the formula pass the error's text is put back from openpyxl,
  elsewhere (Attempts, Manifest and the other sheets iteralab writes) it reads
  blank;
- a sheet calamine cannot convert (a duration-formatted number beyond a billion
  days), or one larger than :data:`MAX_DENSE_CELLS` by its declared dimension
  (calamine holds a sheet as a dense grid: one value typed at XFD1048576 would
  ask for 17 billion cells), is read instead with openpyxl's read-only reader,
  row by row, with its text decoded by :func:`ooxml_unescape` (openpyxl drops
  the ``_x005F_`` that keeps a literal ``_x0041_`` literal: such a text reads
  decoded on this path).

Where calamine reads a cell otherwise than openpyxl did (none of these comes
from a workbook iteralab, Excel or LibreOffice writes): a ``t="d"`` cell holding
a date alone reads as that day at 00:00, as a date-formatted number does; a
negative or post-9999 serial in a date-formatted cell reads as calamine gives
it (a time, a number), not as the error ``#VALUE!``; UTF-16 halves escaped one
by one (``_xD83D__xDE00_``) stay escaped; spaces around a text not marked
``xml:space="preserve"`` are dropped.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterator, Sequence
from typing import IO, Any

from python_calamine import CalamineWorkbook

from toolkit.workbook.extent import cells_beyond
from toolkit.workbook.formula_scan import typed_formulas
from toolkit.workbook.model import Formula
from toolkit.workbook.openpyxl_reading import ArrayFormula, ExcelReader, load_workbook
from toolkit.workbook.text import ooxml_unescape

#: Above this many cells (rows x columns, as the sheet declares them) a sheet is read row by
#: row with openpyxl rather than as calamine's dense grid (about 32 bytes a cell: 512 MiB at
#: most). A sheet part within the store's 256 MiB limit holds fewer values (each takes 16
#: bytes of XML or more), so only a sparse sheet, values far apart, is read the other way. A
#: 50,000-attempt Attempts sheet holds under 3 million.
MAX_DENSE_CELLS = 16_000_000
#: xlsxwriter writes a number without an exponent below this (``%.16G``): such a number
#: reads back as an int when it is a whole number.
_WHOLE_BELOW = 1e16


def normalise(value: Any) -> Any:
    """A cell value as :class:`WorkbookData` holds it.

    Blank (or whitespace-only) text is None; a whole number below 1e16 is an
    int, other numbers floats; a date or date-time (a date-formatted number,
    which calamine gives as a date when it falls on midnight) is ISO text to the
    minute (``2026-12-07T09:30``); booleans, times and durations stay as they are.
    """
    if type(value) is str:  # the commonest cells first
        return value if value and not value.isspace() else None
    if type(value) is float:
        return int(value) if value.is_integer() and abs(value) < _WHOLE_BELOW else value
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="minutes")
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time()).isoformat(timespec="minutes")
    if isinstance(value, str):
        return value if value.strip() else None
    return value


def header_text(value: Any) -> str:
    """A header or field-name cell as text: ``""`` for a blank, a whole number without ``.0``."""
    value = normalise(value)
    return "" if value is None else str(value).strip()


class _NoText:
    """Shared strings for the formula pass: it keys cells by position, never by text."""

    def __getitem__(self, index: int) -> None:
        return None


class _FormulaReader(ExcelReader):  # type: ignore[misc]  # openpyxl ships no type hints
    """openpyxl's read-only reader without the shared-string table (calamine has it).

    Parsing that table is most of what openpyxl's loading of a large workbook
    costs (0.6 s of 0.6 s on a 10,000-attempt one).
    """

    def read_strings(self) -> None:
        self.shared_strings = _NoText()


class Book:
    """An open workbook: its sheet names, each sheet's values, some sheets' formulas.

    ``handle`` is an open .xlsx file (seekable); use as a context manager.
    Any parse failure raises the parser's own exception: the caller names the file.
    """

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        # openpyxl first: its errors name what a damaged archive lacks.
        reader = _FormulaReader(handle, read_only=True, data_only=False)
        reader.read()
        self._formula_book = reader.wb
        try:
            handle.seek(0)
            self._values = CalamineWorkbook.from_filelike(handle)
        except BaseException:
            self._formula_book.close()
            raise
        self.sheetnames: list[str] = list(self._formula_book.sheetnames)
        #: Each worksheet's extent as its file declares it (None: not declared).
        self._declared = {
            ws.title: (getattr(ws, "max_row", None), getattr(ws, "max_column", None))
            for ws in self._formula_book.worksheets
        }
        self._parts = {
            ws.title: getattr(ws, "_worksheet_path", None) for ws in self._formula_book.worksheets
        }

    def __enter__(self) -> Book:
        return self

    def __exit__(self, *exc: object) -> None:
        self._formula_book.close()
        self._values.close()

    def defined_name(self, name: str) -> str | None:
        """What the workbook's defined name ``name`` stands for (``="..."``), or None."""
        found = self._formula_book.defined_names.get(name)
        return None if found is None else str(found.attr_text)

    def defined_names(self) -> list[tuple[str, str, str | None]]:
        """Every defined name as (name, what it stands for, the sheet it belongs to or None
        for the workbook's); print areas and titles are read as sheet settings, not here."""
        found: list[tuple[str, str, str | None]] = [
            (name, str(d.attr_text), None) for name, d in self._formula_book.defined_names.items()
        ]
        for ws in self._formula_book.worksheets:
            local = getattr(ws, "defined_names", None) or {}
            found += [(name, str(d.attr_text), ws.title) for name, d in local.items()]
        return found

    def typed_formulas(self, name: str) -> dict[tuple[int, int], Formula]:
        """The formulas of sheet ``name`` by (Excel row, column), found by a scan of its XML
        (:mod:`toolkit.workbook.formula_scan`): for a large sheet iteralab writes as values."""
        part = self._parts.get(name)
        return {} if part is None else typed_formulas(self._handle, part)

    def rows(self, name: str) -> Iterator[Sequence[Any]]:
        """The values of each row of sheet ``name``, from row 1, each row from column A.

        A row may end early or carry trailing blanks (``""`` or None); an empty
        row is ``()`` or all blanks. Values are as calamine gives them (errors
        are blank: :meth:`formulas` finds them).
        """
        if not self._dense_fits(name):
            yield from self._rows_one_by_one(name)
            return
        sheet = self._values.get_sheet_by_name(name)
        # calamine's rows start at row 1 but at the first column holding a value.
        pad = [""] * sheet.start[1] if sheet.start else []
        found = sheet.iter_rows()
        done = 0
        while True:
            try:
                row = next(found)
            except StopIteration:
                return
            except OverflowError:  # a duration calamine cannot convert: the other reader
                break  # reads the sheet, from the row that failed
            done += 1
            yield pad + row if pad else row
        for number, other in enumerate(self._rows_one_by_one(name), start=1):
            if number > done:
                yield other

    def _dense_fits(self, name: str) -> bool:
        """Whether calamine's dense grid of sheet ``name`` is known to stay small: its
        declared extent is under :data:`MAX_DENSE_CELLS` and no cell lies beyond it."""
        rows, columns = self._declared.get(name, (None, None))
        part = self._parts.get(name)
        if rows is None or columns is None or part is None or rows * columns > MAX_DENSE_CELLS:
            return False
        return cells_beyond(self._handle, part, rows, columns) is None

    def _rows_one_by_one(self, name: str) -> Iterator[Sequence[Any]]:
        """Rows as openpyxl's read-only reader gives them, one at a time, text decoded."""
        book = load_workbook(self._handle, read_only=True, data_only=True)
        try:
            ws = book[name]
            ws.reset_dimensions()  # trust the cells, not the declared dimension
            with warnings.catch_warnings():
                # openpyxl warns of a date serial out of range, then reads it as #VALUE!
                warnings.simplefilter("ignore", UserWarning)
                for row in ws.iter_rows(values_only=True):
                    yield [ooxml_unescape(v) if type(v) is str else v for v in row]
        finally:
            book.close()

    def formulas(
        self, name: str, max_col: int | None = None
    ) -> tuple[dict[tuple[int, int], Formula], dict[tuple[int, int], str]]:
        """The formulas and the error values of sheet ``name``, by (Excel row, column), 1-based.

        A cell is a formula by its type, so a text that starts with ``=`` stays
        text. ``max_col`` limits the columns read.
        """
        ws = self._formula_book[name]
        ws.reset_dimensions()  # no padding to a declared extent: only the cells there are
        formulas: dict[tuple[int, int], Formula] = {}
        errors: dict[tuple[int, int], str] = {}
        for cells in ws.iter_rows(max_col=max_col):
            for cell in cells:
                kind = cell.data_type
                if kind == "f":
                    value = cell.value
                    if isinstance(value, ArrayFormula):
                        formulas[(cell.row, cell.column)] = Formula(str(value.text), array=True)
                    elif isinstance(value, str):
                        formulas[(cell.row, cell.column)] = Formula(value)
                elif kind == "e" and isinstance(cell.value, str):
                    errors[(cell.row, cell.column)] = cell.value
        return formulas, errors
