"""Read and verify the protocol lock (R1-R2, R8).

The lock is a SHA-256 over the normalised content of the Protocol and
Variants sheets, recorded in the Audit sheet with a snapshot of that content,
the time and the tool version. A later edit is found by comparing with the
snapshot, field by field: an edit to what the measurement depends on needs an
amendment; a bookkeeping edit (:data:`BOOKKEEPING`) is only logged
(:mod:`toolkit.evidence.bookkeeping`). Writing a lock or an amendment (which logs the
reason and marks earlier attempts as measured under the old protocol) is
:mod:`toolkit.evidence.locking`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.errors import ProtocolError
from toolkit.findings import Finding
from toolkit.workbook.model import WorkbookData

LOCKED_SHEETS = ("Protocol", "Variants")
#: Fields of the locked sheets that do not change the measurement: wording, links to the
#: money side, where a cluster runs it (gpu_slug, locked, says which GPU). Editing one after
#: the lock voids no attempt; :mod:`toolkit.evidence.bookkeeping` logs it in Audit.
BOOKKEEPING = {
    "Protocol": ("scenario",),
    "Variants": ("description", "notes", "rental_id", "label"),
}


@dataclass(frozen=True)
class Lock:
    """A protocol lock or amendment: its hash, when, and the content it covers."""

    sha256: str
    at: str
    action: str
    snapshot: dict[str, Any]
    #: Everything its Audit row's details hold (snapshot, changes, acknowledgements).
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def layout(self) -> int | None:
        """The layout it was made under; None for a lock made before layout 3 recorded it."""
        value = self.details.get("layout")
        return value if isinstance(value, int) else None


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def snapshot(data: WorkbookData) -> dict[str, Any]:
    """The normalised content a lock covers: Protocol fields and Variants rows.

    A blank field or column added after the first layout is left out, so a lock
    made before it existed still verifies (:func:`layout.added_after`).
    """

    def plain(sheet: layout.Sheet, values: dict[str, Any]) -> dict[str, Any]:
        return {
            k: _plain(v)
            for k, v in values.items()
            if v is not None or not layout.added_after(1, sheet, k)
        }

    return {
        "Protocol": plain(layout.PROTOCOL, data.forms["Protocol"]),
        "Variants": [plain(layout.VARIANTS, row) for row in data.tables["Variants"]],
    }


def content_hash(content: dict[str, Any]) -> str:
    """SHA-256 of a snapshot, independent of dict order and cell formatting."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def locks(data: WorkbookData) -> list[Lock]:
    """Every lock and amendment recorded in Audit, oldest first."""
    found = []
    for row in data.tables["Audit"]:
        if row.get("action") in ("lock", "amend"):
            try:
                details = json.loads(row.get("details") or "")
            except (ValueError, TypeError):
                details = {}
            details = details if isinstance(details, dict) else {}
            content = details.get("snapshot")
            found.append(
                Lock(
                    str(row.get("protocol_sha256")),
                    str(row.get("at")),
                    str(row.get("action")),
                    content if isinstance(content, dict) else {},
                    details,
                )
            )
    return found


def current_lock(data: WorkbookData) -> Lock | None:
    """The latest lock or amendment recorded in Audit, or None if never locked."""
    found = locks(data)
    return found[-1] if found else None


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[Finding]:
    """What differs between two snapshots in what the measurement depends on, one finding
    per changed field (:data:`BOOKKEEPING` fields left out)."""
    found: list[Finding] = []
    old_form, new_form = before.get("Protocol", {}), after.get("Protocol", {})
    fields = layout.PROTOCOL.names
    for name in fields:
        if name in BOOKKEEPING["Protocol"]:
            continue
        if old_form.get(name) != new_form.get(name):
            found.append(
                Finding(
                    "Protocol",
                    fields.index(name) + 2,
                    name,
                    "locked",
                    f"{name} changed after the lock ({old_form.get(name)!r} -> "
                    f"{new_form.get(name)!r}): undo the edit, or record it with `iteralab amend "
                    f"--reason ...` (attempts before it stay marked)",
                )
            )
    old_rows = {r.get("variant_id"): r for r in before.get("Variants", [])}
    new_rows = {r.get("variant_id"): (i, r) for i, r in enumerate(after.get("Variants", []))}
    for vid, old in old_rows.items():
        if vid not in new_rows:
            found.append(
                Finding(
                    "Variants",
                    None,
                    "variant_id",
                    "locked",
                    f"variant {vid!r} was removed after the lock: restore it, or "
                    "record the change with `iteralab amend --reason ...`",
                )
            )
            continue
        index, new = new_rows[vid]
        for name in layout.VARIANTS.names:
            if name in BOOKKEEPING["Variants"]:
                continue
            if old.get(name) != new.get(name):
                found.append(
                    Finding(
                        "Variants",
                        index + 2,
                        name,
                        "locked",
                        f"variant {vid!r}: {name} changed after the lock ({old.get(name)!r} -> "
                        f"{new.get(name)!r}): undo it, or `iteralab amend --reason ...`",
                    )
                )
    for vid, (index, _) in new_rows.items():
        if vid not in old_rows:
            found.append(
                Finding(
                    "Variants",
                    index + 2,
                    "variant_id",
                    "locked",
                    f"variant {vid!r} was added after the lock: declare it with "
                    "`iteralab amend --reason ...`",
                )
            )
    return found


def lock_findings(data: WorkbookData) -> list[Finding]:
    """Edits made since the lock to what the measurement depends on (empty when unlocked or
    unchanged); a snapshot that no longer hashes to its lock is a finding on Audit."""
    lock = current_lock(data)
    if lock is None:
        return []
    now = snapshot(data)
    if content_hash(now) == lock.sha256:
        return []
    if content_hash(lock.snapshot) != lock.sha256:
        return [
            Finding(
                "Audit",
                None,
                "protocol_sha256",
                "locked",
                "the locked content no longer matches its recorded hash: the "
                "Audit sheet was edited; restore it from the backup",
            )
        ]
    return changes(lock.snapshot, now)  # bookkeeping edits: toolkit.evidence.bookkeeping


def require_lock(data: WorkbookData, path: str | Path) -> str:
    """The current lock's hash; raises ProtocolError when unlocked or edited since."""
    existing = current_lock(data)
    if existing is None:
        raise ProtocolError(
            f"{path}: the protocol is not locked",
            hint=f"complete Protocol and Variants, then `iteralab lock {path}`",
        )
    edits = lock_findings(data)
    if edits:
        lines = "\n".join(f"  {f.location()}: {f.message}" for f in edits)
        raise ProtocolError(
            f"{path}: the protocol changed after its lock:\n{lines}",
            hint="undo the edits, or record them with `iteralab amend`",
        )
    return existing.sha256
