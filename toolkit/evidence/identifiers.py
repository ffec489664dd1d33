"""Ids that become file names: a variant or attempt id must stay one name in one folder.

The runner names predictions files after attempt ids, which carry their variant id; an
id holding ``/``, ``\\``, ``..`` or a control character would write outside the campaign
folder (``x/../../../PWNED``) or make sub-folders (``b8/evil``). Validation names such a
variant id (so ``lock`` and ``amend`` refuse it) and ``merge`` refuses a record carrying
one. Two ids of one column that print the same but are stored as other code points (``é``
as one character, or as ``e`` and a combining accent: Unicode's NFC and NFD forms) are one
id to a reader and two to the toolkit: validation names the second. Stdlib only.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from toolkit import layout
from toolkit.findings import Finding
from toolkit.workbook.model import WorkbookData

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def id_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an id that names a file (None when it can)."""
    if not isinstance(value, str):
        return None  # the schema names a blank or a number where text belongs
    if "/" in value or "\\" in value:
        return "holds a path separator ('/' or '\\')"
    if ".." in value:
        return "holds '..'"
    control = _CONTROL.search(value)
    if control:
        return f"holds the control character U+{ord(control.group()):04X}"
    return None


def variant_id_findings(data: WorkbookData) -> list[Finding]:
    """A finding per Variants row whose variant_id could not name a file."""
    found = []
    for i, row in enumerate(data.tables["Variants"]):
        value = row.get("variant_id")
        problem = id_problem(value)
        if problem:
            found.append(
                Finding(
                    "Variants",
                    data.excel_row("Variants", i),
                    "variant_id",
                    "id",
                    f"variant_id {value!r} {problem}: ids name the predictions files, so they "
                    "may not; use letters, digits, '-', '_' and single dots (e.g. b8-fp32)",
                )
            )
    return found


def printed_alike_findings(data: WorkbookData, sheet: str) -> list[Finding]:
    """A finding per value of a unique column of ``sheet`` that prints as an earlier row's
    value of that column but holds other code points (equal once both are in NFC form)."""
    columns = layout.SHEET_BY_NAME[sheet].unique
    rows = data.tables.get(sheet, [])
    found = []
    for column in columns:
        first: dict[str, tuple[str, int]] = {}
        for i, row in enumerate(rows):
            value = row.get(column)
            if not isinstance(value, str):
                continue
            excel = data.excel_row(sheet, i)
            earlier = first.setdefault(unicodedata.normalize("NFC", value), (value, excel))
            if earlier[0] != value:
                found.append(
                    Finding(
                        sheet,
                        excel,
                        column,
                        "printed-alike",
                        f"{column} {value!r} prints as {earlier[0]!r} of row {earlier[1]} but "
                        f"holds other characters ({ascii(value)} against {ascii(earlier[0])}: "
                        "one letter typed as a letter and a combining accent): a reader sees "
                        "one id where the toolkit sees two; retype one of them",
                    )
                )
    return found
