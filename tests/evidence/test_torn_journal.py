"""A journal whose last line was torn by a crash, then appended to (toolkit.evidence.journal).

Real files throughout: the journal is written with ``append``, cut as a crash cuts it,
and read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.errors import WorkbookError
from toolkit.evidence import journal
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData


def _entry(attempt_id: str) -> dict[str, Any]:
    attempt = {
        "attempt_id": attempt_id,
        "variant_id": "b1-fp32",
        "status": "completed",
        "predictions_sha256": "a" * 64,
    }
    return journal.record(attempt, {"manifest_id": "m-1"})


def _ids(book: Path) -> list[str]:
    return [r["attempt"]["attempt_id"] for r in journal.read(book)]


def _torn_journal(tmp_path: Path) -> tuple[Path, bytes]:
    """Records a1 and a2, then a3 cut in the middle of its line (no newline)."""
    book = tmp_path / "camp.xlsx"
    for attempt_id in ("a1", "a2", "a3"):
        journal.append(book, _entry(attempt_id))
    log = journal.journal_path(book)
    whole = log.read_bytes()
    third = whole.rindex(b"\n", 0, len(whole) - 1) + 1
    cut = third + (len(whole) - third) // 2
    log.write_bytes(whole[:cut])
    return book, whole[third:cut]


def test_an_append_after_a_torn_tail_keeps_every_finished_attempt(tmp_path: Path) -> None:
    book, torn = _torn_journal(tmp_path)
    assert _ids(book) == ["a1", "a2"]  # the torn a3 never finished writing

    kept = journal.append(book, _entry("a4"))

    assert kept == tmp_path / "camp.journal.torn-1"
    assert kept.read_bytes() == torn
    assert _ids(book) == ["a1", "a2", "a4"]
    assert journal.notes(book) == [
        f"camp.journal.jsonl: line 3 ({len(torn):,} bytes) was cut short by an interrupted "
        "write and is skipped: no finished attempt is lost; its bytes are kept in "
        "camp.journal.torn-1"
    ]
    journal.append(book, _entry("a5"))  # later appends and reads go on as usual
    assert _ids(book) == ["a1", "a2", "a4", "a5"]
    assert journal.torn_files(book) == [kept]


def test_the_torn_tail_is_noted_before_the_next_append(tmp_path: Path) -> None:
    book, torn = _torn_journal(tmp_path)
    assert journal.notes(book) == [
        f"camp.journal.jsonl: line 3 ({len(torn):,} bytes, no newline) was cut short by an "
        "interrupted write: no finished attempt is lost; the next append keeps it in "
        "camp.journal.torn-N"
    ]
    assert journal.torn_files(book) == []


def test_a_second_torn_tail_gets_its_own_file(tmp_path: Path) -> None:
    book, first = _torn_journal(tmp_path)
    journal.append(book, _entry("a4"))
    log = journal.journal_path(book)
    with log.open("ab") as handle:
        handle.write(b'{"attempt":{"attempt_id":"a5"')
    second = journal.append(book, _entry("a6"))
    assert second == tmp_path / "camp.journal.torn-2"
    assert second.read_bytes() == b'{"attempt":{"attempt_id":"a5"'
    assert (tmp_path / "camp.journal.torn-1").read_bytes() == first
    assert _ids(book) == ["a1", "a2", "a4", "a6"]
    assert len(journal.notes(book)) == 2


def test_a_whole_record_missing_only_its_newline_is_kept_in_the_journal(tmp_path: Path) -> None:
    """A write cut just before its newline left a finished record: it stays a record."""
    book = tmp_path / "camp.xlsx"
    journal.append(book, _entry("a1"))
    journal.append(book, _entry("a2"))
    log = journal.journal_path(book)
    log.write_bytes(log.read_bytes()[:-1])

    assert journal.append(book, _entry("a3")) is None
    assert _ids(book) == ["a1", "a2", "a3"]
    assert journal.torn_files(book) == []
    assert journal.notes(book) == []


def test_a_crash_between_keeping_and_ending_the_tail_reuses_the_kept_copy(tmp_path: Path) -> None:
    """The torn bytes were already copied when the crash came: no second copy is made."""
    book, torn = _torn_journal(tmp_path)
    (tmp_path / "camp.journal.torn-1").write_bytes(torn)
    assert journal.append(book, _entry("a4")) == tmp_path / "camp.journal.torn-1"
    assert journal.torn_files(book) == [tmp_path / "camp.journal.torn-1"]
    assert _ids(book) == ["a1", "a2", "a4"]


def test_a_damaged_middle_line_that_no_torn_file_holds_is_still_an_error(tmp_path: Path) -> None:
    book, _ = _torn_journal(tmp_path)
    journal.append(book, _entry("a4"))
    log = journal.journal_path(book)
    log.write_bytes(log.read_bytes().replace(b'"a2"', b'"a2', 1))
    with pytest.raises(WorkbookError) as caught:
        journal.read(book)
    assert caught.value.message.startswith(f"{log}: line 2 is not a journal record (")


def test_ingest_says_what_it_set_aside(tmp_path: Path) -> None:
    """The note reaches the user: `iteralab ingest` prints it on stderr, adds a1, a2, a4."""
    book, _ = _torn_journal(tmp_path)
    store.save(WorkbookData.empty(), book)
    journal.append(book, _entry("a4"))
    result = CliRunner().invoke(cli, ["ingest", str(book)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ingested 3 attempt(s)")
    assert result.stderr == (f"note: {journal.notes(book)[0]}\n")
    assert "line 3 (" in result.stderr and "no finished attempt is lost" in result.stderr
