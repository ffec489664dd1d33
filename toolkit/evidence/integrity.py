"""All the integrity checks of a workbook's evidence, in one pass.

The attempt chain against the journal (:mod:`toolkit.evidence.chain`), every
row's predictions file hashed once (:mod:`toolkit.evidence.predictions`), and
the logged actions (:mod:`toolkit.evidence.audit`). The chain and journal checks
(:class:`RecordChecks`) run in a helper process on a large campaign, beside the
schemas and the refresh of ``iteralab validate`` and ``iteralab report``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.evidence import journal, provenance
from toolkit.evidence.anchor import anchor_findings
from toolkit.evidence.audit import action_findings
from toolkit.evidence.audit_chain import audit_findings
from toolkit.evidence.chain import (
    SHEET,
    Recorded,
    chain_findings,
    recorded,
    unrecorded_findings,
)
from toolkit.evidence.predictions import (
    PredictionsCheck,
    predictions_checks,
    predictions_findings,
)
from toolkit.findings import Finding
from toolkit.plumbing.digests import Digests
from toolkit.plumbing.helper import Helper, HelperFailed
from toolkit.workbook.model import WorkbookData

#: Below this many attempts a helper process costs more than it saves.
HELPER_MIN_ATTEMPTS = 1000


@dataclass
class Integrity:
    """The attempt rows, the journal, the logged actions and the predictions files checked."""

    findings: list[Finding]
    predictions: list[PredictionsCheck]


class RecordChecks:
    """:func:`record_checks` of ``data`` as it is now (as read from ``workbook``): in a
    helper process (:mod:`toolkit.plumbing.helper`) when there are enough attempts, so that
    the caller checks the schemas or refreshes meanwhile on another core; here and at once
    otherwise. A helper that fails has them checked here (the refresh rewrites only computed
    sheets: same function, same findings). Use as a context manager: leaving it early stops
    the helper."""

    def __init__(self, data: WorkbookData, workbook: Path | None) -> None:
        self._data, self._workbook = data, workbook
        self._found: list[Finding] | None = None
        self._helper: Helper | None = None
        if workbook is not None and len(data.tables[SHEET]) >= HELPER_MIN_ATTEMPTS:
            self._helper = Helper("toolkit.evidence.integrity:record_checks", data, workbook)
        else:
            self._found = record_checks(data, workbook)

    def result(self) -> list[Finding]:
        """The findings, waiting for the helper if one runs."""
        if self._found is None and self._helper is not None:
            with contextlib.suppress(HelperFailed):
                self._found = self._helper.result()
        if self._found is None:
            self._found = record_checks(self._data, self._workbook)
        return self._found

    def __enter__(self) -> RecordChecks:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._helper is not None:
            self._helper.close()


def record_checks(
    data: WorkbookData, workbook: Path | None, records: list[dict[str, Any]] | None = None
) -> list[Finding]:
    """The attempt chain against the journal beside ``workbook`` (``records``, when the
    caller has read it already), the Manifest rows, the chain's anchor and the logged
    actions: every check but the predictions files'. The journal is read once, each record
    compared with its rows as it is read and let go."""
    found: list[Finding] = []
    seen: Recorded | None = None
    torn: list[str] = []
    kept: list[dict[str, Any]] = []
    starts: dict[str, dict[str, Any]] | None = None  # read again by provenance when None
    if records is not None:
        seen = recorded(data, records)
        torn = journal.notes(workbook) if workbook is not None else []
        kept = records
    elif workbook is not None:
        seen, torn, starts = _journal_compared(data, workbook, found, kept)
    if seen is not None and workbook is not None:
        _name_unborne(data, workbook, kept, seen, found, starts)
    found += chain_findings(data, seen)
    if seen is not None:
        found += unrecorded_findings(data, seen, torn) + seen.manifest_findings()
    if workbook is not None:
        found += anchor_findings(data, workbook)
    return found + audit_findings(data) + action_findings(data)


def files_checks(data: WorkbookData, workbook: Path, digests: Digests) -> Integrity:
    """Every row's predictions file (relative to ``workbook``'s folder) against its hash."""
    checks = predictions_checks(data, workbook.parent, digests)
    return Integrity(predictions_findings(data, checks), checks)


def _journal_compared(
    data: WorkbookData, workbook: Path, found: list[Finding], kept: list[dict[str, Any]]
) -> tuple[Recorded | None, list[str], dict[str, dict[str, Any]] | None]:
    """The rows compared with the journal beside ``workbook``, its notes of torn lines and
    its start lines by attempt id; (None, [], None) when there is none. An unreadable
    journal becomes a finding. ``kept`` gets what provenance reads of each record, and the
    start lines keep what it reads of them (a few cells, not the whole record): one pass
    over the journal serves the chain and provenance."""
    if not journal.journal_path(workbook).exists():
        return None, [], None  # the anchor names a journal gone missing beside attempts
    reading = journal.Reading(workbook, keep_starts=provenance.slim_start)

    def slimmed() -> Iterator[dict[str, Any]]:
        for entry in reading:
            kept.append(provenance.slim(entry))
            yield entry

    try:
        seen = recorded(data, slimmed())
    except (ToolkitError, OSError) as exc:
        found.append(
            Finding(
                SHEET,
                None,
                "",
                "journal",
                f"the journal cannot be read, so edits are checked by the chain alone: {exc}",
            )
        )
        return None, [], None
    found += [
        Finding(SHEET, None, "attempt_id", "journal", f"{line}; remove that line")
        for _, line in reading.refused
    ]
    return seen, reading.skipped, journal.by_attempt(reading.starts)


def _name_unborne(
    data: WorkbookData,
    workbook: Path,
    records: list[dict[str, Any]],
    seen: Recorded,
    found: list[Finding],
    starts: dict[str, dict[str, Any]] | None,
) -> None:
    """Name each record the folder does not bear out (a copied or renamed pair): on its
    Attempts row when an ingestion let it in (the chain still compares the row with it), on
    the sheet when it was refused (then it is no journal record the sheet lacks)."""
    refused = provenance.refusals(data, workbook, records, starts)
    rows = {
        str(r.get("attempt_id")): data.excel_row(SHEET, i) for i, r in enumerate(data.tables[SHEET])
    }
    for attempt_id, message in refused.items():
        found.append(Finding(SHEET, rows.get(attempt_id), "attempt_id", "journal", message))
        if attempt_id not in rows:
            seen.attempt_ids.pop(attempt_id, None)
