"""Values typed in Excel, read as the layout's kinds say.

A spreadsheet turns what a person types into numbers and dates: ``0`` in ``seeds`` is
a number, ``2026-12-11 09:00`` a date-time without its UTC offset. In the cells a person
types (:data:`TYPED_SHEETS`, columns not computed), :func:`as_typed` reads:

- a number in a text column as its text (``0`` -> ``"0"``, ``1.5`` -> ``"1.5"``);
- a date-time without a UTC offset in a date-time column (a real Excel date, or text
  typed without one) in the time zone the Protocol states once: the UTC offset of its
  ``deadline``. A deadline without an offset states none: validation then names every
  such cell with the exact form to type (text such as ``2026-12-11T09:00+01:00``).

The template formats those cells as Text (:mod:`toolkit.workbook.render`), so that what
is typed there stays as typed.
"""

from __future__ import annotations

import re
from typing import Any

from toolkit import layout
from toolkit.workbook.model import WorkbookData

_NAIVE = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)")
_OFFSET = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})")
#: Where the Protocol states the campaign's UTC offset, once.
ZONE_FIELD = "deadline"
#: The sheets a person types (Attempts and Manifest are the runner's, sealed as written).
TYPED_SHEETS = (
    layout.PROTOCOL,
    layout.VARIANTS,
    layout.TARIFFS,
    layout.RENTALS,
    layout.SCHEDULE,
    layout.VERIFICATION,
)


def zone_offset(data: WorkbookData) -> str | None:
    """The UTC offset the Protocol's deadline states (``+01:00``, ``Z``), or None."""
    value = data.forms.get(layout.PROTOCOL.name, {}).get(ZONE_FIELD)
    match = _OFFSET.fullmatch(value.strip()) if isinstance(value, str) else None
    return match.group(1) if match else None


def _typed(kind: str, value: Any, offset: str | None) -> Any:
    if kind == layout.TEXT and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if kind == layout.DATETIME and offset is not None and isinstance(value, str):
        naive = _NAIVE.fullmatch(value.strip())
        if naive:
            return f"{naive.group(1)}T{naive.group(2)}{offset}"
    return value


def as_typed(data: WorkbookData) -> None:
    """Read the typed cells of ``data`` in place as their columns' kinds (module doc)."""
    offset = zone_offset(data)
    for sheet in TYPED_SHEETS:
        columns = [
            c
            for c in sheet.all_columns
            if not c.computed and c.kind in (layout.TEXT, layout.DATETIME)
        ]
        rows = [data.forms[sheet.name]] if sheet.kind == "form" else data.tables[sheet.name]
        for row in rows:
            for c in columns:
                if row.get(c.name) is not None:
                    row[c.name] = _typed(c.kind, row[c.name], offset)
