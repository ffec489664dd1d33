"""Defined names: what a reviewer reads in a formula instead of a range or a cell address.

Two kinds, both defined at every save (:mod:`toolkit.workbook.render`) from the data, so a
save that keeps the formulas keeps what they name:

- ``Attempts_<column>``: an Attempts column from row 2 down to a fixed high row, the
  ranges the Summary's formulas read (``MEDIAN`` of ``Attempts_measured_s`` rather than
  ``Attempts!$X$2:$X$10001``). A whole column: a sort of the sheet changes nothing.
- the Overview's headline figures (``Incurred_total_USD``, ``Spent_per_accepted_USD``,
  ``Forecast_per_expected_b8_fp32``, ``Chosen_configuration``): cells of the Overview,
  whose formulas find their rows by id (:func:`headline`).
"""

from __future__ import annotations

import re

from toolkit import layout

#: Attempts rows the ranges reach at least (header excluded).
ATTEMPT_ROWS = 10_000
#: Rows left below the data when a campaign grows past ATTEMPT_ROWS.
SPARE_ROWS = 1_000
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_]")


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
