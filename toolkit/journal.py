"""Write-ahead journal of finished attempts, and its ingestion into the workbook.

Each finished attempt (its Attempts row, its Manifest row, its predictions
file's SHA-256) is first appended as one JSON line to ``NAME.journal.jsonl``
beside ``NAME.xlsx`` and flushed to disk (under a millisecond), then ingested
into the workbook. Ingestion is idempotent by ``attempt_id`` (and
``manifest_id``) and batched: one save for many records. So a crash, a busy
workbook (open in Excel) or a killed campaign never loses a row:
``iteralab ingest WORKBOOK`` replays what the workbook lacks.

Attempt rows are sealed into the hash chain (:mod:`toolkit.chain`) as they
enter the workbook. Stdlib plus the workbook store; no torch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.errors import WorkbookError

FORMAT = "iteralab-attempt/1"

def journal_path(workbook: str | Path) -> Path:
    """``NAME.journal.jsonl`` beside ``NAME.xlsx``."""
    workbook = Path(workbook)
    return workbook.with_name(workbook.stem + ".journal.jsonl")


def record(attempt: dict[str, Any], manifest: dict[str, Any] | None) -> dict[str, Any]:
    """A journal record for one finished attempt."""
    return {
        "format": FORMAT,
        "attempt": attempt,
        "manifest": manifest,
        "predictions_sha256": attempt.get("predictions_sha256"),
    }


def append(workbook: str | Path, entry: dict[str, Any]) -> None:
    """Append one record as a JSON line and fsync it before returning."""
    line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"
    path = journal_path(workbook)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def read(workbook: str | Path) -> list[dict[str, Any]]:
    """The journal's records in order; an empty list when there is no journal.

    A last line cut short by a crash (no newline, not JSON) is ignored: its
    attempt never finished writing. Any other unreadable line is an error.
    """
    path = journal_path(workbook)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # the torn tail of an interrupted write
                break
            raise WorkbookError(f"{path}: line {number} is not a journal record ({exc.msg})",
                                hint="the journal is written by `iteralab run`; restore it "
                                "from a copy or remove the damaged line") from exc
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            raise WorkbookError(f"{path}: line {number} is not an {FORMAT} record",
                                hint="the journal is written by `iteralab run`; do not edit it")
        records.append(entry)
    return records


@dataclass(frozen=True)
class IngestResult:
    """What an ingestion added and what the workbook already had."""

    attempts_added: int
    manifests_added: int
    already: int


def missing_records(data: Any, records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records whose attempt the workbook data lacks, in journal order, once each."""
    have = {r.get("attempt_id") for r in data.tables["Attempts"]}
    out = []
    for entry in records:
        attempt_id = entry["attempt"].get("attempt_id")
        if attempt_id not in have:
            have.add(attempt_id)
            out.append(entry)
    return out


def add_records(data: Any, records: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """Append the records' attempt and manifest rows to ``data``; return the counts added.

    Manifest rows are added once per ``manifest_id``; the new attempt rows are
    sealed into the chain (``row_sha256``).
    """
    from toolkit import chain

    manifests = {r.get("manifest_id") for r in data.tables["Manifest"]}
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
        data.append("Attempts", row)
        added.add(str(row["attempt_id"]))
        added_attempts += 1
    chain.seal_new_rows(data, attempt_ids=added)
    return added_attempts, added_manifests


def ingest(workbook: str | Path, records: list[dict[str, Any]] | None = None) -> IngestResult:
    """Add to the workbook every journal record it lacks, in one save.

    ``records`` defaults to the whole journal. Nothing is saved when nothing
    is missing, so ingesting twice changes nothing.
    """
    from toolkit.workbook import store

    entries = read(workbook) if records is None else records
    with store.writer_lock(workbook):
        data = store.read(workbook)
        todo = missing_records(data, entries)
        if not todo:
            return IngestResult(0, 0, len(entries))
        attempts, manifests = add_records(data, todo)
        store.save(data, workbook)
    return IngestResult(attempts, manifests, len(entries) - len(todo))
