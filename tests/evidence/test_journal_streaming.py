"""The journal read as a stream (toolkit.evidence.journal.Reading): one record at a time.

Real journal files written with ``append`` (and edited as a person or a crash would);
the readers built on the stream give what they gave when the journal was parsed whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolkit.errors import WorkbookError
from toolkit.evidence import journal, provenance, run_log
from toolkit.workbook.model import WorkbookData


def _entry(attempt_id: str, predictions: str | None = None, repetition: int = 1) -> dict[str, Any]:
    attempt = {
        "attempt_id": attempt_id,
        "variant_id": "b1-fp32",
        "status": "completed",
        "repetition": repetition,
        "seed": 0,
        "protocol_sha256": "p" * 64,
        "predictions_path": predictions or f"preds/{attempt_id}.jsonl",
        "predictions_sha256": "a" * 64,
    }
    return journal.record(attempt, {"manifest_id": "m-1"})


def _start(attempt_id: str) -> dict[str, Any]:
    return journal.start(
        attempt_id, {"variant": {"variant_id": "b1-fp32"}}, "2026-12-05T10:00", "run-1"
    )


def test_records_come_one_at_a_time_before_a_damaged_line_is_reached(tmp_path: Path) -> None:
    book = tmp_path / "camp.xlsx"
    for attempt_id in ("a1", "a2"):
        journal.append(book, _entry(attempt_id))
    with journal.journal_path(book).open("a", encoding="utf-8") as log:
        log.write("{not json\n")
    journal.append(book, _entry("a3"))

    stream = iter(journal.Reading(book))
    assert next(stream)["attempt"]["attempt_id"] == "a1"  # read before line 3 is
    assert next(stream)["attempt"]["attempt_id"] == "a2"
    with pytest.raises(WorkbookError, match="line 3 is not a journal record"):
        next(stream)


def test_a_start_line_spelt_with_escapes_still_makes_records_need_their_start(
    tmp_path: Path,
) -> None:
    """The bytes are searched for the start format to skip the check in journals without
    start lines; one written with JSON escapes (``\\u002d`` for ``-``) is still seen."""
    book = tmp_path / "camp.xlsx"
    journal.append(book, _entry("a0"))  # before any start: refused once a start exists
    escaped = json.dumps(_start("a1")).replace("attempt-start", "attempt\\u002dstart")
    assert journal.START_FORMAT.encode() not in escaped.encode()
    with journal.journal_path(book).open("a", encoding="utf-8") as log:
        log.write(escaped + "\n")
    journal.append(book, _entry("a1"))

    assert [r["attempt"]["attempt_id"] for r in journal.read(book)] == ["a1"]
    (refused,) = journal.unstarted(book)
    assert "attempt 'a0' has no start line before it" in refused


def test_a_journal_without_start_lines_keeps_every_record_and_has_none_unfinished(
    tmp_path: Path,
) -> None:
    book = tmp_path / "camp.xlsx"
    for attempt_id in ("a1", "a2", "a3"):
        journal.append(book, _entry(attempt_id))

    assert [r["attempt"]["attempt_id"] for r in journal.read(book)] == ["a1", "a2", "a3"]
    assert journal.unstarted(book) == []
    assert journal.unfinished(book) == []


def test_a_copied_pair_is_kept_by_the_journal_and_refused_by_its_provenance(
    tmp_path: Path,
) -> None:
    """The journal keeps every record with its own start; provenance, reading them as they
    stream, refuses a3 (a1's slot, a2's predictions file) and a4 (a2's file)."""
    book = tmp_path / "camp.xlsx"
    plan = [
        ("a1", "preds/a1.jsonl", 1),
        ("a2", "preds/a2.jsonl", 2),
        ("a3", "preds/a2.jsonl", 1),
        ("a4", "preds/a2.jsonl", 3),
    ]
    run_log.started(book, "run-1", pid=1)
    for attempt_id, predictions, repetition in plan:
        journal.append(book, _start(attempt_id))
        journal.append(book, _entry(attempt_id, predictions, repetition))

    records = journal.read(book)
    assert [r["attempt"]["attempt_id"] for r in records] == ["a1", "a2", "a3", "a4"]
    refused = provenance.refusals(WorkbookData.empty(), book, [provenance.slim(r) for r in records])
    assert sorted(refused) == ["a3", "a4"]
    assert (
        "attempt 'a3' names the predictions file preds/a2.jsonl of attempt 'a2'" in (refused["a3"])
    )
    assert (
        "attempt 'a4' names the predictions file preds/a2.jsonl of attempt 'a2'" in (refused["a4"])
    )
    # Their starts have their records: no attempt a run left unfinished.
    assert journal.unfinished(book) == []
