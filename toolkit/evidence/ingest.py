"""Adding journal records to a workbook's data: each attempt once, sealed as it enters.

Idempotent by ``attempt_id`` (and ``manifest_id``): replaying a journal adds
only what the data lacks. Pure on :class:`WorkbookData`; the locked
read-change-save around it is :func:`toolkit.editing.ingest`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from toolkit import layout
from toolkit.evidence import chain
from toolkit.evidence.protocol import current_lock
from toolkit.workbook.model import WorkbookData


@dataclass(frozen=True)
class IngestResult:
    """What an ingestion added and what the workbook already had."""

    attempts_added: int
    manifests_added: int
    already: int
    #: Records the folder does not bear out (attempt id -> why), left in the journal only.
    refused: dict[str, str] = field(default_factory=dict)


def missing_records(data: WorkbookData, records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records whose attempt the workbook data lacks, in journal order, once each."""
    have = {r.get("attempt_id") for r in data.tables["Attempts"]}
    out = []
    for entry in records:
        attempt_id = entry["attempt"].get("attempt_id")
        if attempt_id not in have:
            have.add(attempt_id)
            out.append(entry)
    return out


def add_records(data: WorkbookData, records: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """Append the records' attempt and manifest rows to ``data``; return the counts added.

    Manifest rows are added once per ``manifest_id``; the new attempt rows are
    sealed into the chain (``row_sha256``); one run under a protocol other than the current
    lock is marked ``pre_amendment`` (an unchained cell).
    """
    manifests = {r.get("manifest_id") for r in data.tables["Manifest"]}
    lock = current_lock(data)
    added: set[str] = set()
    added_attempts = added_manifests = 0
    for entry in records:
        manifest = entry.get("manifest")
        if manifest and manifest.get("manifest_id") not in manifests:
            data.append("Manifest", manifest)
            manifests.add(manifest.get("manifest_id"))
            added_manifests += 1
        row = dict(entry["attempt"])
        row["row_sha256"] = None
        if lock is not None and row.get("protocol_sha256") not in (None, lock.sha256):
            # Run under a protocol amended since (a copy merged late, a record ingested
            # after an amendment): out of the statistics, as amend marks the rows it finds.
            row["pre_amendment"] = layout.YES
        data.append("Attempts", row)
        added.add(str(row["attempt_id"]))
        added_attempts += 1
    chain.seal_new_rows(data, attempt_ids=added)
    return added_attempts, added_manifests
