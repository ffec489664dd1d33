"""The write-ahead journal: append, read back, ingest once, chain the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolkit import editing, layout
from toolkit.errors import WorkbookError
from toolkit.evidence import chain, journal
from toolkit.workbook import store


def _attempt(attempt_id: str, manifest_id: str = "m-1", measured: float = 1.25) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in layout.ATTEMPTS.names}
    row.update(
        {
            "attempt_id": attempt_id,
            "variant_id": "b1-fp32",
            "repetition": 1,
            "order_position": 1,
            "started_at": "2026-12-02T10:00:00+00:00",
            "status": "completed",
            "protocol_sha256": "f" * 64,
            "manifest_id": manifest_id,
            "measured_s": measured,
            "items_completed": 3,
            "expected_ids": 3,
            "quality_verdict": "pass",
            "corpus_accepted": "yes",
            "excluded": "no",
            "pre_amendment": "no",
            "host_rss_peak_bytes": 123_456_789,
            "padding_efficiency": 0.345678,
        }
    )
    return row


def _manifest(manifest_id: str = "m-1") -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in layout.MANIFEST.names}
    row.update(
        {
            "manifest_id": manifest_id,
            "recorded_at": "2026-12-02T10:00:00+00:00",
            "variant_id": "b1-fp32",
            "corpus_sha256": "c" * 64,
            "corpus_items": 3,
        }
    )
    return row


def test_journal_lives_beside_the_workbook(tmp_path: Path) -> None:
    assert journal.journal_path(tmp_path / "camp.xlsx") == tmp_path / "camp.journal.jsonl"


def test_records_read_back_in_order(tmp_path: Path) -> None:
    book = tmp_path / "camp.xlsx"
    for i in (1, 2):
        journal.append(book, journal.record(_attempt(f"a{i}"), _manifest()))
    assert [r["attempt"]["attempt_id"] for r in journal.read(book)] == ["a1", "a2"]
    assert journal.read(tmp_path / "none.xlsx") == []


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    """A crash mid-write leaves a partial last line: that attempt never finished writing."""
    book = tmp_path / "camp.xlsx"
    journal.append(book, journal.record(_attempt("a1"), _manifest()))
    with journal.journal_path(book).open("a", encoding="utf-8") as handle:
        handle.write('{"format": "iteralab-attempt/1", "attempt": {"attem')
    assert [r["attempt"]["attempt_id"] for r in journal.read(book)] == ["a1"]


def test_a_damaged_middle_line_is_an_error(tmp_path: Path) -> None:
    book = tmp_path / "camp.xlsx"
    journal.journal_path(book).write_text("garbage\n{}\n", encoding="utf-8")
    with pytest.raises(WorkbookError, match=r"line 1 is not a journal record"):
        journal.read(book)


def test_ingest_adds_what_the_workbook_lacks_once(filled_workbook: Path) -> None:
    """Ingesting twice adds nothing the second time; manifests are shared by id."""
    for i in (1, 2):
        journal.append(filled_workbook, journal.record(_attempt(f"a{i}"), _manifest()))
    first = editing.ingest(filled_workbook, refresh_derived=False)
    second = editing.ingest(filled_workbook, refresh_derived=False)
    data = store.read(filled_workbook)
    assert (first.attempts_added, first.manifests_added, first.already) == (2, 1, 0)
    assert (second.attempts_added, second.manifests_added, second.already) == (0, 0, 2)
    assert [r["attempt_id"] for r in data.tables["Attempts"]] == ["a1", "a2"]
    assert [r["manifest_id"] for r in data.tables["Manifest"]] == ["m-1"]


def test_ingest_replays_only_the_missing_records(filled_workbook: Path) -> None:
    journal.append(filled_workbook, journal.record(_attempt("a1"), _manifest()))
    editing.ingest(filled_workbook, refresh_derived=False)
    journal.append(filled_workbook, journal.record(_attempt("a2", "m-2"), _manifest("m-2")))
    result = editing.ingest(filled_workbook, refresh_derived=False)
    assert (result.attempts_added, result.manifests_added, result.already) == (1, 1, 1)


def test_ingested_rows_are_sealed_into_the_chain(filled_workbook: Path) -> None:
    """row_sha256 links each row to the previous one; the xlsx read back verifies."""
    for i, measured in ((1, 1.234567), (2, 20.5), (3, 3.0)):
        journal.append(
            filled_workbook, journal.record(_attempt(f"a{i}", measured=measured), _manifest())
        )
    editing.ingest(filled_workbook, refresh_derived=False)
    data = store.read(filled_workbook)
    rows = data.tables["Attempts"]
    assert rows[0]["row_sha256"] == chain.seal(None, rows[0])
    assert rows[1]["row_sha256"] == chain.seal(rows[0]["row_sha256"], rows[1])
    assert chain.chain_findings(data, journal.read(filled_workbook)) == []


def test_a_row_edited_after_ingestion_is_found_against_the_journal(filled_workbook: Path) -> None:
    journal.append(filled_workbook, journal.record(_attempt("a1"), _manifest()))
    editing.ingest(filled_workbook, refresh_derived=False)
    data = store.read(filled_workbook)
    data.tables["Attempts"][0]["measured_s"] = 0.5
    findings = chain.chain_findings(data, journal.read(filled_workbook))
    assert [(f.row, f.column, f.check) for f in findings] == [(2, "measured_s", "edited")]
