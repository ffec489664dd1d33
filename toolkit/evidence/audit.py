"""Logged actions: what may change an attempt row without breaking the chain.

An exclusion (R14) must be logged in Audit, and :func:`exclude` is the one
allowed rewrite of an attempt; an attempt's protocol hash must be one the
Audit sheet locked; ``pre_amendment`` must agree with it.
"""

from __future__ import annotations

import json
from typing import Any

from toolkit import __version__, layout
from toolkit.errors import UsageError
from toolkit.evidence.audit_chain import log
from toolkit.evidence.chain import REASON_LIMIT, SHEET, cell_value, shown
from toolkit.findings import Finding
from toolkit.plumbing.clock import now_text
from toolkit.workbook.model import Row, WorkbookData
from toolkit.workbook.text import cell_text


def _audit_rows(data: WorkbookData, action: str) -> list[tuple[int, Row]]:
    return [
        (data.excel_row("Audit", k), r)
        for k, r in enumerate(data.tables["Audit"])
        if r.get("action") == action
    ]


def _details(row: Row) -> dict[str, Any]:
    try:
        details = json.loads(str(row.get("details") or ""))
    except ValueError:
        return {}
    return details if isinstance(details, dict) else {}


def action_findings(data: WorkbookData) -> list[Finding]:
    """Unchained Attempts cells that disagree with the Audit sheet's log.

    An exclusion without its Audit entry (or undone, or with another reason),
    an attempt whose protocol hash no lock or amendment recorded, and a
    ``pre_amendment`` mark that contradicts the protocol hash.
    """
    found: list[Finding] = []
    rows = data.tables[SHEET]
    index = {str(r.get("attempt_id")): i for i, r in enumerate(rows)}
    logged: dict[str, tuple[int, Row]] = {}
    for excel_audit, entry in _audit_rows(data, "exclude"):
        attempt_id = str(_details(entry).get("attempt_id"))
        logged[attempt_id] = (excel_audit, entry)
        if attempt_id not in index:
            found.append(
                Finding(
                    "Audit",
                    excel_audit,
                    "details",
                    "logged",
                    f"the exclusion of attempt {attempt_id!r} names no row of "
                    "Attempts: the attempt was deleted; restore it",
                )
            )
    for attempt_id, i in index.items():
        row, excel = rows[i], data.excel_row(SHEET, i)
        excluded = cell_value(row.get("excluded")) == layout.YES
        if attempt_id in logged:
            excel_audit, entry = logged[attempt_id]
            if not excluded:
                found.append(
                    Finding(
                        SHEET,
                        excel,
                        "excluded",
                        "logged",
                        f"attempt {attempt_id!r} was excluded (Audit row "
                        f"{excel_audit}) but is no longer: set excluded back "
                        "to yes; an exclusion is not undone",
                    )
                )
            elif cell_value(row.get("exclusion_reason")) != cell_value(entry.get("reason")):
                found.append(
                    Finding(
                        SHEET,
                        excel,
                        "exclusion_reason",
                        "logged",
                        f"attempt {attempt_id!r}: exclusion_reason differs from "
                        f"the reason logged in Audit row {excel_audit}: restore "
                        f"{shown(cell_value(entry.get('reason')))}",
                    )
                )
        elif excluded:
            found.append(
                Finding(
                    SHEET,
                    excel,
                    "excluded",
                    "logged",
                    f"attempt {attempt_id!r} is excluded without an Audit entry: "
                    f"exclude it with `iteralab exclude WORKBOOK {attempt_id} "
                    "--reason ...` (set excluded back to no first)",
                )
            )
    found += _protocol_hash_findings(data)
    return found


def _protocol_hash_findings(data: WorkbookData) -> list[Finding]:
    locks = [r for r in data.tables["Audit"] if r.get("action") in ("lock", "amend")]
    if not locks:
        return []  # validate reports attempts recorded without a lock
    known = {cell_value(r.get("protocol_sha256")) for r in locks}
    current = cell_value(locks[-1].get("protocol_sha256"))
    amended = any(r.get("action") == "amend" for r in locks)
    found = []
    for i, row in enumerate(data.tables[SHEET]):
        excel = data.excel_row(SHEET, i)
        name = f"attempt {row.get('attempt_id')!r}"
        sha = cell_value(row.get("protocol_sha256"))
        marked = cell_value(row.get("pre_amendment")) == layout.YES
        if sha is not None and sha not in known:
            found.append(
                Finding(
                    SHEET,
                    excel,
                    "protocol_sha256",
                    "protocol-hash",
                    f"{name} ran under protocol {str(sha)[:12]}, which no lock or "
                    "amendment in the Audit sheet recorded: the Audit sheet or "
                    "this cell was edited; restore it from a copy",
                )
            )
        elif sha is not None and sha != current and not marked:
            found.append(
                Finding(
                    SHEET,
                    excel,
                    "pre_amendment",
                    "pre-amendment",
                    f"{name} ran under protocol {str(sha)[:12]}, amended since "
                    f"(now {str(current)[:12]}): set pre_amendment to yes",
                )
            )
        elif marked and not amended:
            found.append(
                Finding(
                    SHEET,
                    excel,
                    "pre_amendment",
                    "pre-amendment",
                    f"{name} is marked pre_amendment but the protocol was never "
                    "amended: set pre_amendment to no",
                )
            )
    return found


def exclude(data: WorkbookData, attempt_id: str, reason: str) -> int:
    """Exclude one attempt for a documented external cause (R14) and log it in Audit.

    Sets ``excluded`` = yes and ``exclusion_reason``; the chain is untouched.
    Returns the attempt's Excel row. Raises UsageError for a blank or overlong
    reason, an unknown attempt id, or an attempt already excluded.
    """
    reason = cell_text(reason or "").strip()
    if not reason:
        raise UsageError(
            "an exclusion needs its documented external cause",
            hint='pass --reason "what happened, and where it is documented"',
        )
    if len(reason) > REASON_LIMIT:
        raise UsageError(
            f"the reason is {len(reason):,} characters; at most {REASON_LIMIT:,}",
            hint="summarise it and point to the document that holds the details",
        )
    rows = data.tables[SHEET]
    matches = [i for i, r in enumerate(rows) if str(r.get("attempt_id")) == attempt_id]
    if not matches:
        known = ", ".join(str(r.get("attempt_id")) for r in rows[:5]) or "none"
        raise UsageError(
            f"no attempt {attempt_id!r} in the Attempts sheet",
            hint=f"use an attempt_id of the sheet (first ones: {known})",
        )
    i = matches[0]
    row, excel = rows[i], data.excel_row(SHEET, i)
    if cell_value(row.get("excluded")) == layout.YES:
        raise UsageError(
            f"attempt {attempt_id!r} (Attempts!{excel}) is already excluded: "
            f"{row.get('exclusion_reason')}",
            hint="an exclusion is logged once and never undone",
        )
    row["excluded"] = layout.YES
    row["exclusion_reason"] = reason
    locks = [r for r in data.tables["Audit"] if r.get("action") in ("lock", "amend")]
    protocol = (
        (locks[-1].get("protocol_sha256") if locks else None)
        or row.get("protocol_sha256")
        or "not locked"
    )
    details = {"attempt_id": attempt_id, "row": excel, "row_sha256": row.get("row_sha256")}
    log(
        data,
        {
            "at": now_text(),
            "action": "exclude",
            "protocol_sha256": protocol,
            "tool_version": __version__,
            "reason": reason,
            "details": json.dumps(details, sort_keys=True, ensure_ascii=False),
        },
    )
    return excel
