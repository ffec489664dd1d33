"""Bookkeeping edits to a locked protocol: logged in Audit, never voiding an attempt.

The lock covers what the measurement depends on (work columns, corpus, thresholds,
...). The wording and the links around it (:data:`toolkit.evidence.protocol.BOOKKEEPING`:
the scenario's text, a variant's description, notes, rental_id, cluster label) may be
corrected after the runs: a rental linked late, a typo fixed. Such an edit is visible,
never silent: :func:`findings` names each cell that differs from the last record (the
lock's snapshot, or a later ``bookkeeping`` Audit row) until :func:`log` records it,
which ``iteralab report`` and ``run`` do as they refresh the workbook.
"""

from __future__ import annotations

import json
from typing import Any

from toolkit import __version__
from toolkit.evidence import audit_chain
from toolkit.evidence.protocol import BOOKKEEPING, current_lock, snapshot
from toolkit.findings import Finding
from toolkit.plumbing.clock import now_text
from toolkit.workbook.model import WorkbookData

ACTION = "bookkeeping"
#: Longest "what changed" text kept in an Audit reason.
SUMMARY_LIMIT = 2000

#: (sheet, variant_id or None, column): where one bookkeeping value sits.
Key = tuple[str, str | None, str]


def values(content: dict[str, Any]) -> dict[str, Any]:
    """The bookkeeping values of a lock snapshot (:func:`protocol.snapshot`), as JSON-ready
    ``{"Protocol": {field: value}, "Variants": {variant_id: {column: value}}}``."""
    form = content.get("Protocol") or {}
    rows = content.get("Variants") or []
    return {
        "Protocol": {f: form.get(f) for f in BOOKKEEPING["Protocol"]},
        "Variants": {
            str(r.get("variant_id")): {c: r.get(c) for c in BOOKKEEPING["Variants"]}
            for r in rows
            if isinstance(r, dict)
        },
    }


def _flat(recorded: dict[str, Any]) -> dict[Key, Any]:
    out: dict[Key, Any] = {
        ("Protocol", None, f): v for f, v in (recorded.get("Protocol") or {}).items()
    }
    for vid, row in (recorded.get("Variants") or {}).items():
        out.update({("Variants", vid, c): v for c, v in (row or {}).items()})
    return out


def _last(data: WorkbookData) -> dict[str, Any] | None:
    """The bookkeeping values last recorded in Audit: a lock's or amendment's snapshot, or a
    later bookkeeping row (None when never locked)."""
    found = None
    for row in data.tables["Audit"]:
        if row.get("action") not in ("lock", "amend", ACTION):
            continue
        try:
            details = json.loads(str(row.get("details") or ""))
        except ValueError:
            continue
        if not isinstance(details, dict):
            continue
        if row.get("action") == ACTION:
            found = details
        elif isinstance(details.get("snapshot"), dict):
            found = values(details["snapshot"])
    return found


def edits(data: WorkbookData) -> list[tuple[Key, Any, Any]]:
    """(where, recorded, now) for each bookkeeping cell that differs from the last record,
    in the variants the current lock knows (a variant added since is an amendment's)."""
    last = _last(data)
    if last is None or current_lock(data) is None:
        return []
    before, now = _flat(last), _flat(values(snapshot(data)))
    return [
        (key, before.get(key), now[key]) for key in now if key in before and before[key] != now[key]
    ]


def _where(data: WorkbookData, key: Key) -> tuple[int | None, str]:
    sheet, vid, column = key
    if sheet == "Protocol":
        from_form = list(data.forms["Protocol"])
        return (from_form.index(column) + 2 if column in from_form else None), column
    for i, row in enumerate(data.tables["Variants"]):
        if str(row.get("variant_id")) == vid:
            return data.excel_row("Variants", i), column
    return None, column


def _shown(value: Any) -> str:
    return "empty" if value is None else repr(value)


def findings(data: WorkbookData) -> list[Finding]:
    """A finding per bookkeeping cell edited since the last record and not yet logged."""
    found = []
    for key, old, new in edits(data):
        row, column = _where(data, key)
        who = f"variant {key[1]!r}: " if key[1] is not None else ""
        found.append(
            Finding(
                key[0],
                row,
                column,
                "bookkeeping-edit",
                f"{who}{column} changed after the lock ({_shown(old)} -> "
                f"{_shown(new)}): bookkeeping, no attempt is voided; not logged "
                "yet: `iteralab report` logs it in Audit (or undo the edit)",
            )
        )
    return found


def log(data: WorkbookData, protocol_sha256: str) -> str | None:
    """Record the bookkeeping values in Audit when one changed since the last record; return
    what changed (None when nothing was logged)."""
    changed = edits(data)
    if not changed:
        return None
    parts = [
        f"{sheet}{'' if vid is None else ' ' + vid} {column}: {_shown(old)} -> {_shown(new)}"
        for (sheet, vid, column), old, new in changed
    ]
    reason = "bookkeeping edited after the lock: " + "; ".join(parts)
    if len(reason) > SUMMARY_LIMIT:
        reason = reason[: SUMMARY_LIMIT - 3] + "..."
    text = json.dumps(values(snapshot(data)), sort_keys=True, ensure_ascii=False)
    audit_chain.log(
        data,
        {
            "at": now_text(),
            "action": ACTION,
            "protocol_sha256": protocol_sha256,
            "tool_version": __version__,
            "reason": reason,
            "details": text,
        },
    )
    return reason
