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
from toolkit.evidence import subgroups, tuning
from toolkit.evidence.audit_chain import log
from toolkit.evidence.protocol import LOCKED_SHEETS, changes, content_hash, current_lock, snapshot
from toolkit.evidence.validate import corpus_findings, sorted_findings, validate_sheets
from toolkit.findings import Finding
from toolkit.plumbing.clock import now_text
from toolkit.workbook.model import WorkbookData
from toolkit.workbook.text import EXCEL_CELL_LIMIT


def _require_valid(data: WorkbookData, verb: str, workbook: str | Path | None = None) -> None:
    """Refuse while Protocol/Variants have findings; given the ``workbook``, also the files
    its Protocol names: the corpus (a file the runner reads), the tuning data, the subgroup
    fields."""
    findings = validate_sheets(data, LOCKED_SHEETS)
    if workbook is not None:
        findings = sorted_findings(
            findings
            + corpus_findings(data, workbook)
            + tuning.overlap(data, workbook)[1]
            + subgroups.field_findings(data, workbook)
        )
    if findings:
        lines = "\n".join(f"  {f.location()}: {f.message}" for f in findings[:20])
        more = f"\n  ... and {len(findings) - 20} more" if len(findings) > 20 else ""
        raise ProtocolError(
            f"cannot {verb}: Protocol/Variants have {len(findings)} finding(s):\n{lines}{more}",
            hint="fill or fix these cells, then run the command again",
        )


def _audit(
    data: WorkbookData,
    action: str,
    sha: str,
    reason: str | None,
    details: dict[str, Any],
    at: str | None = None,
) -> None:
    text = json.dumps(details, sort_keys=True, ensure_ascii=False)
    if len(text) > EXCEL_CELL_LIMIT:
        raise ProtocolError(
            f"the protocol snapshot is {len(text):,} characters, over Excel's cell limit",
            hint="shorten long Protocol/Variants texts (keep long documents in files and "
            "refer to them)",
        )
    log(
        data,
        {
            "at": at or now_text(),
            "action": action,
            "protocol_sha256": sha,
            "tool_version": __version__,
            "reason": reason,
            "details": text,
        },
    )


def lock(
    data: WorkbookData, workbook: str | Path | None = None, acknowledge_overlap: str | None = None
) -> str:
    """Lock Protocol and Variants; return the lock's SHA-256.

    Refuses while they are incomplete or invalid, or when already locked;
    given the ``workbook``'s path, also while Protocol.corpus_path names no
    file beside it that the runner reads, tuning_data names no readable file (or ``none``), or the
    tuning data shares an id or a text with the corpus (R2) and
    ``acknowledge_overlap`` gives no reason, which the Audit row then keeps.
    """
    existing = current_lock(data)
    if existing is not None:
        raise ProtocolError(
            f"the protocol is already locked ({existing.sha256[:12]}, {existing.at})",
            hint='to change it, use `iteralab amend WORKBOOK --reason "..."`',
        )
    _require_valid(data, "lock", workbook)
    content = snapshot(data)
    sha = content_hash(content)
    details: dict[str, Any] = {"snapshot": content, "layout": layout.LAYOUT_VERSION}
    at = now_text()
    note = _overlap_acknowledged(data, workbook, acknowledge_overlap, details, at, "lock")
    _audit(data, "lock", sha, note, details, at)
    return sha


def _overlap_acknowledged(
    data: WorkbookData,
    workbook: str | Path | None,
    acknowledge_overlap: str | None,
    details: dict[str, Any],
    at: str,
    verb: str,
) -> str | None:
    """R2: refuse tuning data that overlaps the corpus unless ``acknowledge_overlap`` gives a
    reason; record the acknowledgement in ``details`` and return the Audit note (None when
    there is no overlap). Without the workbook's path nothing can be read: None."""
    reason = (acknowledge_overlap or "").strip() or None
    if acknowledge_overlap is not None and reason is None:
        raise UsageError(
            "--acknowledge-overlap needs a reason",
            hint='say why the overlap is acceptable: --acknowledge-overlap "..."',
        )
    found = tuning.overlap(data, workbook)[0] if workbook is not None else None
    if not found:
        if reason is not None:
            raise UsageError(
                "--acknowledge-overlap: the tuning data shares no id and no text "
                "with the corpus, so there is nothing to acknowledge",
                hint=f"{verb} without --acknowledge-overlap",
            )
        return None
    if reason is None:
        amend_reason = ' --reason "..."' if verb == "amend" else ""
        lines = [f"  {f.location()}: {f.message}" for f in tuning.overlap_findings(found, None)]
        more = f"\n  ... and {len(lines) - 20} more" if len(lines) > 20 else ""
        raise ProtocolError(
            f"cannot {verb}: the tuning data {found.tuning_path} overlaps the comparison corpus "
            f"{found.corpus_path} ({found.summary()}):\n" + "\n".join(lines[:20]) + more,
            hint=f"keep tuning data apart from the corpus; to {verb} anyway, say why with "
            f"`iteralab {verb} WORKBOOK{amend_reason} "
            '--acknowledge-overlap "reason"` (logged in Audit, and `iteralab validate` keeps '
            "naming the overlap)",
        )
    details[tuning.ACKNOWLEDGED] = {
        "tuning_path": found.tuning_path,
        "ids": len(found.ids),
        "texts": len(found.texts),
        "reason": reason,
        "at": at,
        "action": verb,
    }
    return (
        f"tuning data {found.tuning_path} overlaps the corpus ({found.summary()}), "
        f"acknowledged: {reason}"
    )


def amend(
    data: WorkbookData,
    reason: str,
    workbook: str | Path | None = None,
    acknowledge_overlap: str | None = None,
) -> tuple[str, list[Finding], int]:
    """Record the edits made since the lock as an amendment.

    Given the ``workbook``'s path, refuses as :func:`lock` does a corpus_path that
    names no file the runner reads, tuning data that names no readable file or
    overlaps the corpus without ``acknowledge_overlap``, and subgroup fields the
    corpus lacks. Returns the new hash, the changes, and
    how many earlier attempts were marked ``pre_amendment``.
    """
    if not reason or not reason.strip():
        raise UsageError("an amendment needs a reason", hint='pass --reason "why it changed"')
    existing = current_lock(data)
    if existing is None:
        raise ProtocolError(
            "the protocol is not locked: nothing to amend",
            hint="lock it first with `iteralab lock WORKBOOK`",
        )
    content = snapshot(data)
    found = changes(existing.snapshot, content)
    if not found:
        raise ProtocolError(
            "what the measurement depends on in Protocol and Variants is unchanged since the "
            "lock: nothing to amend",
            hint="edit the workbook first, then amend with the reason; a bookkeeping edit "
            "(scenario wording, a variant's description, notes, rental_id, label) needs no "
            "amendment: `iteralab report` logs it in Audit",
        )
    _require_valid(data, "amend", workbook)
    sha = content_hash(content)
    summary = [f"{f.sheet}!{f.row} {f.column}" for f in found]
    details: dict[str, Any] = {
        "changed": summary,
        "snapshot": content,
        "layout": layout.LAYOUT_VERSION,
    }
    at = now_text()
    note = _overlap_acknowledged(data, workbook, acknowledge_overlap, details, at, "amend")
    _audit(data, "amend", sha, reason.strip() + (f"; {note}" if note else ""), details, at)
    marked = 0
    for row in data.tables["Attempts"]:
        if row.get("pre_amendment") != layout.YES:
            row["pre_amendment"] = layout.YES
            marked += 1
    return sha, found, marked
