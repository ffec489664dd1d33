"""Prices and the schedule edited after the first attempt: visible, never silent.

Tariffs, Rentals and the Schedule's typed phases stay editable (a quote is
corrected, an invoice arrives), but once attempts exist an edit changes the
money a result is set against. So :func:`log_money_edits` records their
content in the Audit sheet (action ``prices``): first when attempts exist, then
at each change, with what changed. :func:`money_edit_findings` names every cell
that differs from the last record: validate reports it until ``iteralab
report`` (or ``run``) logs it.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from toolkit import __version__, layout
from toolkit.evidence.audit_chain import log
from toolkit.findings import Finding
from toolkit.plumbing.clock import now_text
from toolkit.workbook.model import WorkbookData

ACTION = "prices"
#: The typed columns of the sheets whose edits are logged (Schedule's grey ones excluded).
LOGGED = {
    sheet.name: [c.name for c in sheet.all_columns if not c.computed]
    for sheet in (layout.TARIFFS, layout.RENTALS, layout.SCHEDULE)
}
#: Longest "what changed" text kept in an Audit reason.
SUMMARY_LIMIT = 2000


def snapshot(data: WorkbookData) -> dict[str, list[dict[str, Any]]]:
    """The logged sheets' typed cells, row by row (blank cells left out)."""
    return {
        name: [
            {c: _plain(row.get(c)) for c in columns if row.get(c) is not None}
            for row in data.tables.get(name, [])
        ]
        for name, columns in LOGGED.items()
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):  # computed amounts, before a save makes them floats
        value = float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, (int, float, str, bool)) else str(value)


def _last(data: WorkbookData) -> dict[str, Any] | None:
    for row in reversed(data.tables["Audit"]):
        if row.get("action") == ACTION:
            try:
                found = json.loads(str(row.get("details") or ""))
            except ValueError:
                return None
            return found if isinstance(found, dict) else None
    return None


def _changes(before: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, int, str, Any, Any]]:
    """(sheet, row index, column, before, now) for each typed cell that differs; a row added
    or removed is one change with column "" and the whole row as its value."""
    out = []
    for name, columns in LOGGED.items():
        old, new = before.get(name) or [], now.get(name) or []
        for i in range(max(len(old), len(new))):
            if i >= len(old) or i >= len(new):
                out.append(
                    (
                        name,
                        i,
                        "",
                        old[i] if i < len(old) else None,
                        new[i] if i < len(new) else None,
                    )
                )
                continue
            out += [
                (name, i, c, old[i].get(c), new[i].get(c))
                for c in columns
                if old[i].get(c) != new[i].get(c)
            ]
    return out


def money_edit_findings(data: WorkbookData) -> list[Finding]:
    """A finding per logged cell edited since the last Audit record of the prices."""
    last = _last(data)
    if last is None or not data.tables["Attempts"]:
        return []
    found = []
    for name, i, column, old, new in _changes(last, snapshot(data)):
        what = (
            f"{column} changed"
            if column
            else "a row was added"
            if old is None
            else "a row was removed"
        )
        rows = len(data.tables.get(name, []))
        excel = data.excel_row(name, i) if i < rows else None
        found.append(
            Finding(
                name,
                excel,
                column,
                "edited-after-attempts",
                f"{what} after attempts were recorded ({_shown(old)} -> "
                f"{_shown(new)}) and is not logged yet: `iteralab report` logs "
                "it in Audit (or undo the edit)",
            )
        )
    return found


def _shown(value: Any) -> str:
    return "empty" if value is None else repr(value)


def log_money_edits(data: WorkbookData, protocol_sha256: str) -> str | None:
    """Record the prices in Audit when attempts exist and they differ from the last record;
    return what changed (None when nothing was logged)."""
    if not data.tables["Attempts"]:
        return None
    now, last = snapshot(data), _last(data)
    if last is not None and not _changes(last, now):
        return None
    if last is None:
        reason = "prices and schedule as the attempts were set against them"
    else:
        parts = [
            f"{name}!{i + 2} {column or 'row'}: {_shown(old)} -> {_shown(new)}"
            for name, i, column, old, new in _changes(last, now)
        ]
        reason = "edited after the first attempt: " + "; ".join(parts)
        if len(reason) > SUMMARY_LIMIT:
            reason = reason[: SUMMARY_LIMIT - 3] + "..."
    text = json.dumps(now, sort_keys=True, ensure_ascii=False)
    log(
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
