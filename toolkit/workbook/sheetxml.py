"""Cell values of a read-only worksheet, parsed straight from the sheet's XML.

openpyxl's read-only ``iter_rows(values_only=True)`` builds a dict and parses
a coordinate per cell; on a 10,000-attempt workbook (half a million cells)
that was most of a read (benchmarks/README.md, "Profiling notes"). These
helpers give the same values with less work per cell, using openpyxl's own
parts for everything else (the zip archive, shared strings, date styles,
epoch, date conversions). Values are as openpyxl's ``data_only`` read gives
them: formulas as their cached value, numbers as int or float, dates as
datetimes, booleans as bool, errors as their text (``#N/A``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openpyxl.cell.text import Text
from openpyxl.utils.cell import column_index_from_string
from openpyxl.utils.datetime import from_excel, from_ISO8601
from openpyxl.xml.constants import SHEET_MAIN_NS
from openpyxl.xml.functions import iterparse

_ROW = f"{{{SHEET_MAIN_NS}}}row"
_VALUE = f"{{{SHEET_MAIN_NS}}}v"
_INLINE = f"{{{SHEET_MAIN_NS}}}is"
_T = f"{{{SHEET_MAIN_NS}}}t"
_RUN = f"{{{SHEET_MAIN_NS}}}r"
_DIGITS = "0123456789"


def string_item_text(node: Any) -> str:
    """The text of a shared-string item ``<si>``: its ``<t>``, then its runs' ``<t>``.

    Same as openpyxl's ``Text.from_tree(node).content`` (phonetic runs left
    out), without building the rich-text objects.
    """
    plain: str | None = None
    runs: list[str] = []
    for child in node:
        if child.tag == _T:
            plain = child.text
        elif child.tag == _RUN:
            text = child.findtext(_T)
            if text:
                runs.append(text)
    if not runs:
        return plain or ""
    return "".join(([plain] if plain else []) + runs)


def _number(text: str) -> int | float:
    if "." in text or "E" in text or "e" in text:  # most numbers: no exception raised
        return float(text)
    try:
        return int(text)
    except ValueError:
        return float(text)  # "inf", "nan": read as floats rather than refused


def _row_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        number = float(text)
        if not number.is_integer():
            raise ValueError(f"{text} is not a valid row number") from None
        return int(number)


def _value(cell: Any, strings: list[str], date_styles: set[int], duration_styles: set[int],
           epoch: Any) -> Any:
    """One ``<c>`` element's value, as openpyxl's ``data_only`` read gives it."""
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        child = cell.find(_INLINE)
        return None if child is None else Text.from_tree(child).content
    text = cell.findtext(_VALUE) or None
    if text is None:
        return None
    if kind == "n":
        value = _number(text)
        style = cell.get("s")
        if style and int(style) in date_styles:
            try:
                return from_excel(value, epoch, timedelta=int(style) in duration_styles)
            except (OverflowError, ValueError):
                return "#VALUE!"  # as openpyxl: a date serial out of range is an error
        return value
    if kind == "s":
        return strings[int(text)]
    if kind == "b":
        return bool(int(text))
    if kind == "d":
        return from_ISO8601(text)
    return text  # "str" (a formula's text result), "e" (an error such as #N/A)


def rows(ws: Any) -> Iterator[tuple[Any, ...]]:
    """Values of each row of a read-only worksheet, from row 1, each row from column 1.

    A row missing from the file comes as ``()``; a row ends at its last cell.
    As openpyxl does, a row numbered before the one above it is skipped and a
    cell repeating a column replaces it; unlike openpyxl's read-only mode,
    rows and columns past the sheet's declared dimension are kept. Raises
    ValueError for a row or cell reference that is not one.
    """
    book = ws.parent
    strings = ws._shared_strings
    date_styles, duration_styles = book._date_formats, book._timedelta_formats
    epoch = book.epoch
    # Whether a style id, as the file writes it (s="7"), formats dates; learnt from the
    # first number of each style (read by _value), the later ones take the fast path.
    is_date: dict[str | None, bool] = {None: False}
    columns: dict[str, int] = {}
    expected = 1
    with ws._get_source() as source:
        for _, element in iterparse(source):
            if element.tag != _ROW:
                continue
            number = element.get("r")
            row_number = _row_number(number) if number is not None else expected
            if row_number < expected:
                element.clear()
                continue
            while expected < row_number:
                expected += 1
                yield ()
            values: list[Any] = []
            for cell in element:
                kind = cell.get("t")
                if kind == "s":  # most cells: shared strings, then plain numbers
                    text = cell.findtext(_VALUE)
                    value = strings[int(text)] if text else None
                elif kind is None and not is_date.get(cell.get("s"), True):
                    text = cell.findtext(_VALUE)
                    value = _number(text) if text else None
                else:
                    value = _value(cell, strings, date_styles, duration_styles, epoch)
                    style = cell.get("s")
                    if style not in is_date:
                        is_date[style] = bool(style) and int(style) in date_styles
                reference = cell.get("r")
                if reference is None:
                    values.append(value)
                    continue
                letters = reference.rstrip(_DIGITS)
                column = columns.get(letters)
                if column is None:
                    column = columns[letters] = column_index_from_string(letters)
                if column > len(values):
                    values.extend([None] * (column - 1 - len(values)))
                    values.append(value)
                else:
                    values[column - 1] = value
            element.clear()
            expected = row_number + 1
            yield tuple(values)
