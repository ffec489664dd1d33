"""The Summary notes the report wrote, sealed in the workbook, so that text a person types
over them is named rather than lost.

The notes are plain text, not a formula: a typed text and the report's own cannot be told
apart by their kind. Every save records a short SHA-256 of each Summary row's variant id
and notes in the defined name :data:`NAME`; a read names each notes cell whose text is not
among them (:func:`typed_notes`), and every save then refuses the workbook
(:func:`toolkit.workbook.store.check_keepable`) until the cell is cleared or restored. A
cleared cell passes: the next report writes the notes again. A workbook without the name
(an older iteralab wrote it, or a program dropped it) is not checked.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from toolkit import layout
from toolkit.workbook.model import Addition, WorkbookData

NAME = "Summary_notes_written"
#: Hex digits kept of each row's SHA-256: a chance of 1 in 2**40 of missing a typed text.
DIGEST_CHARS = 10
#: Excel holds at most 255 characters in a formula's text literal, 8,192 in a formula.
_LITERAL = 250
_FORMULA = 8000
_DIGEST = re.compile(rf"\b[0-9a-f]{{{DIGEST_CHARS}}}\b")


def _digest(variant_id: Any, notes: Any) -> str:
    text = f"{'' if variant_id is None else variant_id}\x00{'' if notes is None else notes}"
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def seal(data: WorkbookData) -> str | None:
    """The defined name's formula for the Summary rows of ``data`` (``="d1 d2 ..."``);
    None when there is no row, or more than one formula holds (about 700 variants)."""
    digests = " ".join(sorted({_digest(r.get("variant_id"), r.get("notes")) for r in _rows(data)}))
    if not digests:
        return None
    parts = [digests[i : i + _LITERAL] for i in range(0, len(digests), _LITERAL)]
    formula = "=" + "&".join(f'"{p}"' for p in parts)
    return formula if len(formula) <= _FORMULA else None


def typed_notes(data: WorkbookData, sealed: str | None) -> list[Addition]:
    """A Summary notes cell holding text the last save did not write: typed over it."""
    if not sealed:
        return []
    written = set(_DIGEST.findall(sealed))
    letter = layout.column_letter(layout.SUMMARY, "notes")
    sheet = layout.SUMMARY.name
    found = []
    for i, row in enumerate(data.tables.get(sheet, [])):
        notes = row.get("notes")
        if notes is None or _digest(row.get("variant_id"), notes) in written:
            continue
        excel = data.excel_row(sheet, i)
        found.append(
            Addition(
                f"{sheet}!{letter}{excel} (text typed over the notes `iteralab report` "
                "writes; clear the cell and the next report writes them again)",
                sheet,
                excel,
                "notes",
            )
        )
    return found


def _rows(data: WorkbookData) -> list[dict[str, Any]]:
    return data.tables.get(layout.SUMMARY.name, [])
