"""Each measured Attempts cell judged by the layout its row was written under.

A measured cell holds a value or is empty with its reason, never both, never 0 s or 0 B.
Which measured columns a row must fill depends on the layout the runner wrote it under:
a column a later layout added is simply absent from an older row. Since layout 8 each row
says so in its ``layout`` cell (the runner fills it); a row recorded before has none, and is
judged by the newest measured column it fills or explains, which cannot see a column the
row forgot when that column is the only one its layout added.
"""

from __future__ import annotations

from collections.abc import Callable

from toolkit import layout
from toolkit.workbook.model import Row, WorkbookData

#: Kinds of measured cell where 0 is never a measurement: an empty cell with its reason is.
NEVER_ZERO_KINDS = (layout.SECONDS, layout.BYTES)

#: The Attempts column holding the layout version a row was written under.
LAYOUT_CELL = "layout"

#: The Attempts layout last judged by, and its measured columns with the name of each one's
#: reason column: every row of a campaign is judged by them (looked up once, not per row).
_measured: tuple[layout.Sheet | None, tuple[tuple[layout.Column, str], ...]] = (None, ())


def measured_columns() -> tuple[tuple[layout.Column, str], ...]:
    """The measured columns of the Attempts layout, each with its reason column's name."""
    global _measured
    if _measured[0] is not layout.ATTEMPTS:  # held, so its identity is never reused
        sheet = layout.ATTEMPTS
        _measured = (sheet, tuple((c, c.reason) for c in sheet.columns if c.measurement))
    return _measured[1]


#: Where a finding goes: (column, check, message), the row already known.
Add = Callable[[str, str, str], None]


def first_recording_layout() -> int:
    """The first layout whose rows record their layout."""
    return layout.ATTEMPTS.column(LAYOUT_CELL).since


def inferred_layout(row: Row) -> int:
    """The layout an Attempts row was recorded under, as far as its cells show: the newest
    of the measured columns it fills or explains (the runner explains every measured
    column of its layout); 1 when it explains none."""
    return max(
        (
            c.since
            for c, reason in measured_columns()
            if row.get(c.name) is not None or row.get(reason) is not None
        ),
        default=1,
    )


def recorded_layout(row: Row) -> int | None:
    """The layout the row's ``layout`` cell names, when it is one this iteralab writes
    rows under; None when the cell is empty or holds anything else."""
    value = row.get(LAYOUT_CELL)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if first_recording_layout() <= value <= layout.LAYOUT_VERSION else None


def layout_cell_findings(row: Row, add: Add) -> None:
    """A finding when the ``layout`` cell holds a whole number that is not a layout rows
    are written under (the schema reports any other text)."""
    value = row.get(LAYOUT_CELL)
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return
    first, newest = first_recording_layout(), layout.LAYOUT_VERSION
    if value > newest:
        add(
            LAYOUT_CELL,
            "layout",
            f"layout {value} is newer than this iteralab's ({newest}): upgrade iteralab "
            "(pip install -U iteragpu-lab) to judge this row",
        )
    elif value < first:
        add(
            LAYOUT_CELL,
            "layout",
            f"layout {value} is older than the first layout whose rows record it ({first}): "
            "the runner writes the layout it ran under; restore the value it wrote",
        )


def cell_findings(row: Row, add: Add) -> None:
    """The measured cells of ``row``: a value or an empty cell with its reason, by every
    measured column of the layout the row is judged by."""
    recorded = recorded_layout(row)
    under = inferred_layout(row) if recorded is None else recorded
    for col, reason_column in measured_columns():
        value, reason = row.get(col.name), row.get(reason_column)
        if value is None and reason is None and col.since > under:
            continue  # a row recorded before the column existed
        if value is None and reason is None:
            written = (
                f"this row was written under layout {recorded}, which has the column"
                if recorded is not None
                else f"this row fills or explains a column of layout {under}, which has it"
            )
            add(
                col.name,
                "missing-reason",
                f"{col.name} is empty without a reason ({written}): a missing "
                f"measurement says why in {col.reason}",
            )
        elif value is not None and reason is not None:
            add(
                col.reason,
                "value-and-reason",
                f"{col.name} has a value and a reason for being empty: keep one",
            )
        elif col.kind in NEVER_ZERO_KINDS and value == 0:
            add(
                col.name,
                "zero",
                f"{col.name} is 0, which would stand for 'not measured': "
                f"leave it empty and say why in {col.reason}",
            )


def inferred_note(data: WorkbookData) -> str | None:
    """One sentence when Attempts rows record no layout (written before rows did): they are
    judged by the layout their cells show; None when every row records its own."""
    rows = [
        data.excel_row(layout.ATTEMPTS.name, i)
        for i, row in enumerate(data.tables[layout.ATTEMPTS.name])
        if row.get(LAYOUT_CELL) is None
    ]
    if not rows:
        return None
    if len(rows) == 1:
        which = f"row {rows[0]} records"
    else:
        which = f"{len(rows)} rows (Excel rows {rows[0]} to {rows[-1]}) record"
    return (
        f"Attempts {which} no layout (written before layout {first_recording_layout()}): "
        "each is judged by the newest measured column it fills or explains, which cannot "
        "tell when a row forgot the only column its layout added"
    )
