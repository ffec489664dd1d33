"""Defined names: what a reviewer reads in a formula instead of a range or a cell address.

Defined at every save (:mod:`toolkit.workbook.render`) from the data, so a
save that keeps the formulas keeps what they name:

- ``Attempts_<column>``: an Attempts column from row 2 down to a fixed high row, the
  ranges the Summary's formulas read (``MEDIAN`` of ``Attempts_measured_s`` rather than
  ``Attempts!$X$2:$X$10001``). A whole column: a sort of the sheet changes nothing.
- the Overview's headline figures (``Incurred_total_USD``, ``Spent_per_accepted_USD``,
  ``Forecast_per_expected_b8_fp32``, ``Chosen_configuration``): cells of the Overview,
  whose formulas find their rows by id (:func:`headline`);
- the seals of what the save wrote itself (:mod:`toolkit.workbook.written`,
  :mod:`toolkit.workbook.text_sheets`).

Any other name is a person's own: a save would drop it (:func:`own_names`).
"""

from __future__ import annotations

import re

from toolkit import layout
from toolkit.workbook import text_sheets, written
from toolkit.workbook.model import Addition

#: Attempts rows the ranges reach at least (header excluded).
ATTEMPT_ROWS = 10_000
#: Rows left below the data when a campaign grows past ATTEMPT_ROWS.
SPARE_ROWS = 1_000
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_]")
#: Names a spreadsheet program keeps for itself (a filter's range, a newer function's
#: marker): written and read by the program, never typed.
_SPREADSHEET_OWN = ("_xlnm.", "_xlfn.", "_xlws.", "_xludf.")
#: What a headline name stands for: one cell of the Overview's figure column.
_HEADLINE_CELL = re.compile(rf"^'?{layout.OVERVIEW.name}'?!\$B\$[0-9]+$")


def attempts_last_row(attempts: int) -> int:
    """The last Excel row the Attempts ranges reach for a sheet of ``attempts`` rows."""
    return max(ATTEMPT_ROWS, attempts + SPARE_ROWS) + 1


def attempts_column(column: str) -> str:
    """The defined name of an Attempts column's range (``Attempts_measured_s``)."""
    return f"{layout.ATTEMPTS.name}_{column}"


def attempts_names(attempts: int) -> dict[str, str]:
    """Each Attempts column's name and the range it stands for, for ``attempts`` rows."""
    last = attempts_last_row(attempts)
    out = {}
    for column in layout.ATTEMPTS.names:
        letter = layout.column_letter(layout.ATTEMPTS, column)
        out[attempts_column(column)] = f"={layout.ATTEMPTS.name}!${letter}$2:${letter}${last}"
    return out


def headline(*words: str) -> str:
    """A headline figure's name from its words (an id or a currency code among them):
    letters, digits and underscores only, so that every engine reads it as a name."""
    return _NOT_IN_A_NAME.sub("_", "_".join(words))


def own_names(defined: list[tuple[str, str, str | None]]) -> list[Addition]:
    """Each defined name a save would not write again (a person's own), from
    ``(name, what it stands for, its sheet or None)``: a name local to a sheet, or a
    workbook name that is neither an Attempts column's, a seal, a headline figure's, nor one
    a spreadsheet program keeps for itself (``_xlnm.``, ``_xlfn.``)."""
    ours = {attempts_column(c) for c in layout.ATTEMPTS.names} | {written.NAME, text_sheets.NAME}
    found = []
    for name, refers_to, sheet in defined:
        if name.lower().startswith(_SPREADSHEET_OWN):
            continue
        if sheet is None and (name in ours or _HEADLINE_CELL.match(refers_to.strip())):
            continue
        shown = refers_to if len(refers_to) <= 40 else refers_to[:37] + "..."
        place = f"of sheet {sheet}" if sheet else "of the workbook"
        found.append(
            Addition(f"the defined name {name!r} {place} (standing for {shown})", sheet or "")
        )
    return found
