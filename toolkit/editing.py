"""One unit of work for changing a workbook: lock, read, change, refresh if asked, save.

Every command that writes a workbook goes through :func:`change`, and says
by name whether the derived sheets (Summary, Memory, Settlement, Schedule's
computed columns, the Decision draft, charts) are recomputed: only ``report``
and ``run`` do. The others (``lock``, ``amend``, ``exclude``, ``ingest``, ``merge``,
``ledger import``) change what they own and leave the derived sheets exactly as they
were read, formulas included (:mod:`toolkit.workbook.store`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit import __version__, layout
from toolkit.errors import ToolkitError, UsageError
from toolkit.evidence import audit, journal, provenance, run_log
from toolkit.evidence import merge as merging
from toolkit.evidence.anchor import anchor_findings, anchor_path, recorded_anchor, write_anchor
from toolkit.evidence.audit_chain import log, seal_older_rows
from toolkit.evidence.ingest import IngestResult, add_records, missing_records
from toolkit.evidence.protocol import current_lock
from toolkit.findings import Finding
from toolkit.money import incurred
from toolkit.money import ledger as book
from toolkit.money.tariffs import catalog_from_workbook
from toolkit.plumbing.atomic import copy_file
from toolkit.plumbing.clock import now_text
from toolkit.report.refresh import refresh
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData


@dataclass
class Edit:
    """The workbook's data under the writer lock; clear ``save`` to write nothing."""

    data: WorkbookData
    save: bool = True
    #: Write the chains' anchor even where the rows no longer reach it (a logged re-anchor).
    reanchor: bool = False


@contextlib.contextmanager
def change(path: str | Path, *, refresh_derived: bool) -> Iterator[Edit]:
    """Hold the writer lock, read the workbook, let the caller change it, save it.

    ``refresh_derived`` recomputes the derived sheets before the save. Nothing
    is saved when the block raises or clears ``edit.save``: the workbook stays
    byte for byte as it was. After a save of a workbook holding attempt or Audit rows the
    chains' anchor is written, still under the lock (a second writer never finds the
    workbook ahead of it).
    """
    path = Path(path)
    with store.writer_lock(path):
        edit = Edit(store.read(path))
        seal_older_rows(edit.data)  # an older layout's Audit rows, as read: saved sealed
        yield edit
        if edit.save:
            if refresh_derived:
                refresh(edit.data, path.parent)
            store.save(edit.data, path)
            if edit.data.tables["Attempts"] or edit.data.tables["Audit"]:
                # after the save: the chains reach their ends
                write_anchor(edit.data, path, over=edit.reanchor)


def ingest(
    workbook: str | Path, records: list[dict[str, Any]] | None = None, *, refresh_derived: bool
) -> IngestResult:
    """Add to the workbook every journal record it lacks, in one save.

    ``records`` defaults to the whole journal. Nothing is saved when nothing
    is missing, so ingesting twice changes nothing. A record the campaign folder does not
    bear out (a pair copied into the journal by hand: :mod:`toolkit.evidence.provenance`)
    stays out, named in the result's ``refused``. Raises ToolkitError when
    there is no journal to read, saying what the workbook holds without it.
    """
    entries = journal.read(workbook) if records is None else records
    with change(workbook, refresh_derived=refresh_derived) as edit:
        if records is None and not journal.journal_path(workbook).exists():
            raise _no_journal(Path(workbook), len(edit.data.tables["Attempts"]))
        kept, refused = _ingestible(edit.data, workbook, entries)
        already = len(entries) - len(kept) - len(refused)
        if not kept:
            edit.save = False
            return IngestResult(0, 0, already, refused)
        attempts, manifests = add_records(edit.data, kept)
    return IngestResult(attempts, manifests, already, refused)


def _ingestible(
    data: WorkbookData, workbook: str | Path, entries: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The records ``data`` lacks that the campaign folder bears out, and why each other
    one it lacks is refused (:func:`toolkit.evidence.provenance.refusals`)."""
    todo = missing_records(data, entries)
    refused = provenance.refusals(data, workbook, todo) if todo else {}
    return [r for r in todo if str(r["attempt"].get("attempt_id")) not in refused], refused


def reanchor(workbook: str | Path, reason: str) -> list[Finding]:
    """Anchor the chains to the rows as they stand, logging ``reason`` and the anchor it
    replaces in Audit; return the anchor findings it settles.

    For a copy saved over the workbook (a spreadsheet program's, opened mid-run) that lacks
    rows logged since it was opened, when its edits are to be kept rather than the .bak
    restored. Refuses when the anchor is reached (nothing to do), when the reason is blank,
    and while the journal holds attempts the sheet lacks (`iteralab ingest` restores them).
    """
    workbook = Path(workbook)
    if not reason.strip():
        raise UsageError("--reason is empty", hint="say why the anchor moves (logged in Audit)")
    with change(workbook, refresh_derived=False) as edit:
        found = [f for f in anchor_findings(edit.data, workbook) if f.check == "anchor"]
        if not found:
            raise UsageError(
                f"{workbook}: nothing to re-anchor: its rows reach {anchor_path(workbook).name}",
                hint="`iteralab verify` prints the campaign head as it stands",
            )
        todo, _ = _ingestible(edit.data, workbook, journal.read(workbook))
        if todo:
            raise ToolkitError(
                f"{workbook}: not re-anchored: its journal holds {len(todo)} attempt(s) the "
                "Attempts sheet lacks; nothing was written",
                hint="run `iteralab ingest` first (it restores them), then re-anchor what "
                "is still missing",
            )
        lock = current_lock(edit.data)
        details = {
            "anchor_before": recorded_anchor(workbook),
            "attempt_rows": len(edit.data.tables["Attempts"]),
            "audit_rows_before_this": len(edit.data.tables["Audit"]),
            "findings": [f.message for f in found],
        }
        log(
            edit.data,
            {
                "at": now_text(),
                "action": "reanchor",
                "protocol_sha256": lock.sha256 if lock else "not locked",
                "tool_version": __version__,
                "reason": reason.strip(),
                "details": json.dumps(details, sort_keys=True, ensure_ascii=False),
            },
        )
        edit.reanchor = True
    return found


def _journal_merged(workbook: Path, plan: merging.MergePlan) -> None:
    """Append the joining records this journal lacks, each after its start line, as one run
    of their own in ``NAME.runs.jsonl`` (the merge), so that they pass the ingestion's checks
    as the runner's own do."""
    todo = [r for r in plan.records if str(r["attempt"].get("attempt_id")) not in plan.journaled]
    if not todo:
        return
    run = run_log.new_run_id()
    run_log.started(workbook, run, merged_from=str(plan.source))
    for record in todo:
        attempt_id = str(record["attempt"].get("attempt_id"))
        start = plan.starts.get(attempt_id)
        journal.append(workbook, journal.merged_start(record, plan.source, start, run))
        journal.append(workbook, record)
    run_log.ended(workbook, run, [str(r["attempt"].get("attempt_id")) for r in todo])


def _no_journal(workbook: Path, attempts: int) -> ToolkitError:
    """No journal beside the workbook: nothing to ingest. Beside recorded attempts it is
    the runner's evidence gone missing, which deserves more than '0 ingested'."""
    path = journal.journal_path(workbook)
    if attempts:
        hint = (
            f"the runner writes every attempt there first: it is the evidence behind "
            f"those rows; if {workbook.name} was moved, move {path.name} beside it, "
            "if it was deleted, restore it from a backup"
        )
    else:
        hint = (
            f"the runner writes it when `iteralab run {workbook}` records an attempt; "
            "until then there is nothing to ingest"
        )
    return ToolkitError(
        f"{path}: no journal at this path, nothing to ingest; {workbook} is "
        f"unchanged ({attempts} attempt(s) recorded in it)",
        hint=hint,
    )


def merge(workbook: str | Path, other: Path) -> merging.MergePlan:
    """Join the attempts of another machine's copy of this campaign, in one save.

    Checks everything first (:func:`toolkit.evidence.merge.plan`: refuses the
    whole merge on any problem, writing nothing); then copies the predictions
    files, appends the records to this journal (so that an interrupted merge is
    finished by `ingest`), adds them to the workbook sealed into its chain, and
    logs the merge with its provenance in Audit. Merging twice adds nothing.
    """
    workbook = Path(workbook)
    with change(workbook, refresh_derived=False) as edit:
        plan = merging.plan(workbook, edit.data, other, journal.read(workbook))
        if not plan.records:
            edit.save = False
            return plan
        for source, target in plan.files:
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_file(source, target)
        _journal_merged(workbook, plan)
        add_records(edit.data, missing_records(edit.data, plan.records))
        for record in plan.records:  # excluded there (R14): excluded here, with its reason
            attempt_id = str(record["attempt"].get("attempt_id"))
            if attempt_id in plan.exclusions:
                audit.exclude(
                    edit.data,
                    attempt_id,
                    plan.exclusions[attempt_id]
                    or "excluded on the other copy (no reason recorded there)",
                )
        lock = current_lock(edit.data)
        log(
            edit.data,
            {
                "at": now_text(),
                "action": "merge",
                "protocol_sha256": lock.sha256 if lock else "",
                "tool_version": __version__,
                "reason": f"{len(plan.records)} attempt(s) from {plan.source.name} "
                f"({', '.join(plan.hosts)})",
                "details": json.dumps(merging.provenance(plan), sort_keys=True, ensure_ascii=False),
            },
        )
    return plan


@dataclass
class LedgerImport:
    """What ``ledger import`` did: the lines read, the earlier ones kept, and the
    reconciliation with Rentals (status per rental, ledger lines no rental names)."""

    entries: list[dict[str, Any]]
    kept: int
    status: dict[str, str]
    extra: list[dict[str, Any]]


def import_ledger(
    workbook: str | Path, export: Path, columns: tuple[str, ...], zone: dt.tzinfo | None = None
) -> LedgerImport:
    """Read a billing export into the Ledger sheet (replacing the lines an earlier import of
    the same file wrote) and reconcile it with Rentals, in one save; nothing is written when
    a line of the export is bad. ``columns``: ``FIELD=HEADER`` mappings; ``zone``: the
    export's time zone, for date-times written without a UTC offset."""
    label = book.source_label(export, Path(workbook))
    entries = book.read_ledger(export, book.parse_mapping(columns), label, zone)
    with change(workbook, refresh_derived=False) as edit:
        data = edit.data
        kept = [
            r
            for r in data.tables[layout.LEDGER.name]
            if not str(r.get("source") or "").startswith(f"{label}:")
        ]
        book.check_room(len(kept), len(entries), export)
        data.tables[layout.LEDGER.name] = []
        data.row_numbers[layout.LEDGER.name] = []
        for row in kept + entries:
            data.append(layout.LEDGER.name, row)
        try:
            catalog = catalog_from_workbook(data) if data.tables[layout.TARIFFS.name] else None
        except ToolkitError:  # a broken Tariffs sheet is validate's to report
            catalog = None
        status, extra = incurred.reconciliation(data, catalog)
    return LedgerImport(entries, len(kept), status, extra)
