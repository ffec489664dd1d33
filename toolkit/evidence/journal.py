"""Write-ahead journal of finished attempts, and its ingestion into the workbook.

Each finished attempt (its Attempts row, its Manifest row, its predictions
file's SHA-256) is first appended as one JSON line to ``NAME.journal.jsonl``
beside ``NAME.xlsx`` and flushed to disk (under a millisecond), then ingested
into the workbook. Ingestion is idempotent by ``attempt_id`` (and
``manifest_id``) and batched: one save for many records. So a crash, a busy
workbook (open in Excel) or a killed campaign never loses a row:
``iteralab ingest WORKBOOK`` replays what the workbook lacks.

This module is the file alone; adding its records to a workbook is
:mod:`toolkit.evidence.ingest` (rows sealed into the hash chain as they enter)
and :func:`toolkit.editing.ingest` (the locked read-change-save). Stdlib only.
"""

from __future__ import annotations

import json
import os
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
