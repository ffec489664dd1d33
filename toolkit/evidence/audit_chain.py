"""Tamper evidence for the Audit sheet, and the campaign's head for a reviewer to keep.

Each Audit row carries ``row_sha256``, chained to the row above it as attempt rows are
(:mod:`toolkit.evidence.chain`): a deleted lock, price or exclusion record breaks the chain
of the row below it, and the anchor beside the workbook
(:mod:`toolkit.evidence.anchor`) names a last row cut off. Every Audit row is appended
through :func:`log`, sealed as it enters.

The *campaign head* (:func:`campaign_head`) is one SHA-256 over both chains' ends; report.md
and the Decision memo print it. A forger with the toolkit's own functions can re-seal a
whole folder so that it verifies again: nothing inside the folder can show that, so the
reviewer keeps the head outside it, and ``iteralab verify --head HASH`` says whether the
workbook still holds the state the head named (:func:`find_head`). Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from toolkit import layout
from toolkit.errors import EvidenceInvalid
from toolkit.evidence.chain import SHEET as ATTEMPTS
from toolkit.evidence.chain import cell_value, link
from toolkit.findings import Finding
from toolkit.workbook.model import Row, WorkbookData

AUDIT = layout.AUDIT.name
#: The layout version whose Audit rows carry row_sha256; an older workbook's rows are sealed
#: as they stand when it is first saved in this layout (:func:`seal_older_rows`).
SINCE = layout.AUDIT.column("row_sha256").since
_CHAINED = tuple(sorted(n for n in layout.AUDIT.names if n != "row_sha256"))


def _content(row: Mapping[str, Any]) -> str:
    cells = {name: value for name in _CHAINED if (value := cell_value(row.get(name))) is not None}
    return json.dumps(cells, ensure_ascii=False, separators=(",", ":"))


def log(data: WorkbookData, row: Row) -> None:
    """Append ``row`` to the Audit sheet, sealed after the row above it (an older layout's
    rows are sealed first, as they stand)."""
    seal_older_rows(data)
    rows = data.tables[AUDIT]
    previous = cell_value(rows[-1].get("row_sha256")) if rows else None
    data.append(AUDIT, {**row, "row_sha256": None})
    rows[-1]["row_sha256"] = link(previous, _content(rows[-1]))


def seal_older_rows(data: WorkbookData) -> int:
    """Seal the Audit rows of a workbook read in a layout older than :data:`SINCE`, as they
    stand, before it is saved in this layout; return how many. A no-op otherwise."""
    if data.layout_version >= SINCE:
        return 0
    sealed = 0
    previous: str | None = None
    for row in data.tables[AUDIT]:
        if cell_value(row.get("row_sha256")) is None:
            row["row_sha256"] = link(previous, _content(row))
            sealed += 1
        previous = cell_value(row.get("row_sha256"))
    return sealed


def audit_findings(data: WorkbookData) -> list[Finding]:
    """A finding per Audit row not sealed, or whose hash does not follow from its cells and
    the row above it (a row deleted above it, or this row edited)."""
    if data.layout_version < SINCE:
        return []  # sealed at the first save in this layout
    found = []
    previous: str | None = None
    for i, row in enumerate(data.tables[AUDIT]):
        excel = data.excel_row(AUDIT, i)
        sha = cell_value(row.get("row_sha256"))
        what = f"Audit row {excel} ({row.get('action')})"
        if sha is None:
            found.append(
                Finding(
                    AUDIT,
                    excel,
                    "row_sha256",
                    "sealed",
                    f"{what} has no row_sha256: iteralab did not log it (typed or "
                    "pasted by hand?): delete it, or restore the logged row from "
                    "a copy",
                )
            )
        elif link(previous, _content(row)) != sha:
            found.append(
                Finding(
                    AUDIT,
                    excel,
                    "row_sha256",
                    "chain",
                    f"{what} does not follow from its cells and the row above "
                    "it: a logged row above it was deleted, or this row was "
                    "edited; restore the Audit sheet from a copy (.bak.xlsx) "
                    "of the workbook: its log is evidence",
                )
            )
        previous = sha
    return found


def _heads(data: WorkbookData, sheet: str) -> list[str | None]:
    """The chain's end after each prefix of the sheet: [None, row 1's hash, ...]."""
    return [None] + [cell_value(r.get("row_sha256")) for r in data.tables[sheet]]


def _combine(attempts: int, attempt_head: str | None, audit: int, audit_head: str | None) -> str:
    text = json.dumps(["iteralab-campaign-head/1", attempts, attempt_head, audit, audit_head])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def campaign_head(data: WorkbookData) -> str:
    """One SHA-256 naming the state of both chains: the attempt rows and the Audit rows."""
    attempts, audit = _heads(data, ATTEMPTS), _heads(data, AUDIT)
    return _combine(len(attempts) - 1, attempts[-1], len(audit) - 1, audit[-1])


def find_head(data: WorkbookData, head: str) -> tuple[int, int] | None:
    """(attempt rows, Audit rows) of the earlier state of ``data`` that ``head`` names,
    when the workbook still begins with it; None when no state of it does."""
    head = head.strip().lower()
    attempts, audit = _heads(data, ATTEMPTS), _heads(data, AUDIT)
    for i in range(len(attempts) - 1, -1, -1):
        for j in range(len(audit) - 1, -1, -1):
            if _combine(i, attempts[i], j, audit[j]) == head:
                return i, j
    return None


def kept_head(data: WorkbookData, head: str, workbook: object) -> str:
    """What a campaign head kept outside the folder says of ``data`` (read from
    ``workbook``): its current state, or its first rows unchanged and how many were added
    since; EvidenceInvalid when no state of it has that head."""
    found = find_head(data, head)
    if found is None:
        raise EvidenceInvalid(
            f"{workbook}: no state of this workbook has the head {head.strip()}: its "
            "attempt or Audit rows were rewritten (or re-sealed) since that head was "
            "taken, or it is another campaign's",
            hint="compare with the copy the head was taken from; trust neither until "
            "the difference is explained",
        )
    attempts, audit = len(data.tables[ATTEMPTS]), len(data.tables["Audit"])
    if found == (attempts, audit):
        return "the kept head is this workbook's current state"
    return (
        f"the kept head names this workbook's first {found[0]} attempt row(s) "
        f"and {found[1]} Audit row(s), unchanged; {attempts - found[0]} attempt "
        f"row(s) and {audit - found[1]} Audit row(s) were added since"
    )
