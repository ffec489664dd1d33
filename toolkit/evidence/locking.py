"""Locking and amending the protocol (R1, R2): the two actions that write its lock.

Each validates Protocol and Variants first (:mod:`toolkit.evidence.validate`),
then logs the action in the Audit sheet with a SHA-256 of the normalised
content and a snapshot of it; reading and checking a lock is
:mod:`toolkit.evidence.protocol`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolkit import __version__, layout
from toolkit.errors import ProtocolError, UsageError
from toolkit.evidence.protocol import LOCKED_SHEETS, changes, content_hash, current_lock, snapshot
from toolkit.evidence.validate import corpus_findings, sorted_findings, validate_sheets
from toolkit.findings import Finding
from toolkit.plumbing.clock import now_text
from toolkit.workbook.model import WorkbookData
from toolkit.workbook.text import EXCEL_CELL_LIMIT


def _require_valid(data: WorkbookData, verb: str, workbook: str | Path | None = None) -> None:
    findings = validate_sheets(data, LOCKED_SHEETS)
    if workbook is not None:
        findings = sorted_findings(findings + corpus_findings(data, workbook))
    if findings:
        lines = "\n".join(f"  {f.location()}: {f.message}" for f in findings[:20])
        more = f"\n  ... and {len(findings) - 20} more" if len(findings) > 20 else ""
        raise ProtocolError(
            f"cannot {verb}: Protocol/Variants have {len(findings)} finding(s):\n{lines}{more}",
            hint="fill or fix these cells, then run the command again",
        )


def _audit(data: WorkbookData, action: str, sha: str, reason: str | None,
           details: dict[str, Any]) -> None:
    text = json.dumps(details, sort_keys=True, ensure_ascii=False)
    if len(text) > EXCEL_CELL_LIMIT:
        raise ProtocolError(
            f"the protocol snapshot is {len(text):,} characters, over Excel's cell limit",
            hint="shorten long Protocol/Variants texts (keep long documents in files and "
            "refer to them)",
        )
    data.append("Audit", {"at": now_text(), "action": action, "protocol_sha256": sha,
                          "tool_version": __version__, "reason": reason, "details": text})


def lock(data: WorkbookData, workbook: str | Path | None = None) -> str:
    """Lock Protocol and Variants; return the lock's SHA-256.

    Refuses while they are incomplete or invalid, or when already locked;
    given the ``workbook``'s path, also while Protocol.corpus_path names no
    file beside it.
    """
    existing = current_lock(data)
    if existing is not None:
        raise ProtocolError(
            f"the protocol is already locked ({existing.sha256[:12]}, {existing.at})",
            hint="to change it, use `iteralab amend WORKBOOK --reason \"...\"`",
        )
    _require_valid(data, "lock", workbook)
    content = snapshot(data)
    sha = content_hash(content)
    _audit(data, "lock", sha, None, {"snapshot": content})
    return sha


def amend(data: WorkbookData, reason: str) -> tuple[str, list[Finding], int]:
    """Record the edits made since the lock as an amendment.

    Returns the new hash, the changes, and how many earlier attempts were
    marked ``pre_amendment``.
    """
    if not reason or not reason.strip():
        raise UsageError("an amendment needs a reason", hint='pass --reason "why it changed"')
    existing = current_lock(data)
    if existing is None:
        raise ProtocolError("the protocol is not locked: nothing to amend",
                            hint="lock it first with `iteralab lock WORKBOOK`")
    content = snapshot(data)
    found = changes(existing.snapshot, content)
    if not found:
        raise ProtocolError("Protocol and Variants are unchanged since the lock: nothing to amend",
                            hint="edit the workbook first, then amend with the reason")
    _require_valid(data, "amend")
    sha = content_hash(content)
    summary = [f"{f.sheet}!{f.row} {f.column}" for f in found]
    _audit(data, "amend", sha, reason.strip(), {"changed": summary, "snapshot": content})
    marked = 0
    for row in data.tables["Attempts"]:
        if row.get("pre_amendment") != layout.YES:
            row["pre_amendment"] = layout.YES
            marked += 1
    return sha, found, marked
