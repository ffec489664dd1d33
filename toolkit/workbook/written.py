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

from typing import Any

from toolkit import layout
from toolkit.workbook import seals
from toolkit.workbook.model import Addition, WorkbookData

NAME = "Summary_notes_written"


def _digest(variant_id: Any, notes: Any) -> str:
    return seals.digest(variant_id, notes)


def seal(data: WorkbookData) -> str | None:
    """The defined name's formula for the Summary rows of ``data`` (``="d1 d2 ..."``);
    None when there is no row, or more than one formula holds (about 700 variants)."""
    return seals.formula(_digest(r.get("variant_id"), r.get("notes")) for r in _rows(data))


def typed_notes(data: WorkbookData, sealed: str | None) -> list[Addition]:
    """A Summary notes cell holding text the last save did not write: typed over it."""
    if not sealed:
        return []
    written = seals.sealed(sealed) or set()
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
