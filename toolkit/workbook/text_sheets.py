"""The Guide and the Overview as the last save wrote them, sealed, so that what a person
types there is named rather than lost.

Every save writes both sheets whole (the Guide's steps, the Overview's labels, figures and
banners): a value typed into either would vanish at the next save. The save records a short
SHA-256 of each text cell it wrote (sheet, place and text) in the defined name
:data:`NAME`; a read names each cell whose text is not among them, and each formula outside
the Overview's figure column (:func:`typed_cells`). Every save then refuses the workbook
(:func:`toolkit.workbook.store.check_keepable`) until the cell is cleared. A workbook
without the name (an older iteralab wrote it, or a program dropped it) is checked by place
only: a value outside the columns iteralab writes, or a constant in the Overview's figure
column, is named.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolkit import layout
from toolkit.workbook import seals
from toolkit.workbook.cells import normalise
from toolkit.workbook.model import Addition, Formula

NAME = "Text_sheets_written"
#: A text cell a save wrote: sheet, Excel row, column (both 1-based), text.
WrittenCell = tuple[str, int, int, str]
#: The columns iteralab writes on each text sheet (the Guide: A; the Overview: A and B).
WRITTEN_COLUMNS = {layout.GUIDE.name: 1, layout.OVERVIEW.name: 2}
#: Cells named per sheet at most (the first ones say where to look).
MAX_NAMED = 20
#: The Overview's column of figures: each one a formula into the sheet that holds it.
FIGURE_COLUMN = 2


def seal(cells: Iterable[WrittenCell]) -> str | None:
    """The defined name's formula for the text cells a save wrote (``="d1 d2 ..."``); None
    when there is none, or more than one formula holds (about 700 cells)."""
    return seals.formula(seals.digest(*cell) for cell in cells)


def typed_cells(
    sheet: str,
    rows: Iterable[Sequence[Any]],
    formulas: dict[tuple[int, int], Formula],
    sealed: str | None,
) -> list[Addition]:
    """Each cell of text sheet ``sheet`` that the last save did not write (the first
    :data:`MAX_NAMED`): a text not sealed (by place alone without a seal), a formula outside
    the figure column."""
    written = seals.sealed(sealed)
    found = [
        _addition(sheet, row, column, "a formula: every save writes this sheet whole")
        for row, column in sorted(formulas)
        if not _figure(sheet, column)
    ]
    for excel_row, row in enumerate(rows, start=1):
        for column, value in enumerate(row, start=1):
            value = normalise(value)
            if value is None or (excel_row, column) in formulas:
                continue
            figure = _figure(sheet, column)
            if written is not None:
                kept = seals.digest(sheet, excel_row, column, value) in written
            else:
                kept = column <= WRITTEN_COLUMNS[sheet] and not figure
            if not kept:
                found.append(_addition(sheet, excel_row, column, _what(figure)))
    return sorted(found, key=lambda a: (a.row or 0, a.text))[:MAX_NAMED]


def _figure(sheet: str, column: int) -> bool:
    return sheet == layout.OVERVIEW.name and column == FIGURE_COLUMN


def _what(figure: bool) -> str:
    if figure:
        return (
            "a value typed over a figure: every save writes this sheet whole, its figures "
            "as formulas"
        )
    return "a value: every save writes this sheet whole"


def _addition(sheet: str, row: int, column: int, what: str) -> Addition:
    cell = f"{sheet}!{layout.letter(column)}{row}"
    return Addition(f"{cell} ({what})", sheet, row, "")
