"""A run killed mid-attempt is on the record the moment anyone looks (issue 38, item 1):
`ingest` and `report` record the attempt as interrupted, exactly as `run --resume` does,
once the run is gone; while a run holds the campaign lock, `validate` names the attempt
that has no row yet and `ingest` leaves it alone."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import filelock
import pytest

from tests.support.builders import attempts, iteralab, kill_mid_attempt, make_campaign, variant
from toolkit.evidence import journal, unfinished
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _kill_demo_mid_attempt(folder: Path, finished_first: int) -> Path:
    """Start `demo --quick`, SIGKILL it (and its workers) while an attempt runs after
    ``finished_first`` attempts reached the journal; return the demo's workbook."""
    book = folder / "example_campaign.xlsx"
    kill_mid_attempt(
        ["demo", str(folder), "--quick", "--quiet"],
        book,
        finished_first=finished_first,
        within_s=900,  # a shared 2-core machine: the pre-flight, two attempts
    )
    return book


@pytest.mark.slow
@pytest.mark.parametrize("finished_first", [0, 2])
def test_ingest_after_a_sigkill_of_the_demo_records_every_started_attempt(
    tmp_path: Path, finished_first: int
) -> None:
    book = _kill_demo_mid_attempt(tmp_path / "demo", finished_first)
    starts = [s["attempt_id"] for s in journal.unfinished(book)]
    finished = [r["attempt"]["attempt_id"] for r in journal.read(book)]
    assert len(starts) == 1 and len(finished) >= finished_first
    # Finished attempts the run had not saved yet (saves wait beside the next attempt) are
    # named too, as journal records to ingest; the killed one as unfinished.
    checks = [f.check for f in validate(store.read(book), book)]
    assert "unfinished" in checks and set(checks) <= {"journal", "unfinished"}

    ingested = iteralab("ingest", str(book))
    assert ingested.returncode == 0, ingested.stderr
    assert f"as interrupted: {starts[0]}" in ingested.stderr
    rows = {r["attempt_id"]: r for r in attempts(book)}
    assert set(rows) == {*finished, *starts}  # every attempt whose start was journaled
    assert {rows[a]["status"] for a in finished} <= {"completed", "failed"}
    killed = rows[starts[0]]
    assert killed["status"] == "interrupted"
    assert killed["notes"].startswith("interrupted: the run (pid ")
    assert "ended while this attempt ran and left no record" in killed["notes"]
    assert killed["measured_s"] is None and killed["measured_s_reason"]
    assert journal.unfinished(book) == []
    assert validate(store.read(book), book) == []
    again = iteralab("ingest", str(book))  # once only
    assert again.returncode == 0 and len(attempts(book)) == len(rows)


def _killed_campaign(tmp_path: Path) -> tuple[Path, str]:
    """A campaign whose run was SIGKILLed during its first attempt."""
    book = make_campaign(tmp_path, 16, [variant("b1-fp32", 1)], process_policy="fresh")
    kill_mid_attempt(["run", str(book), "--quiet"], book)
    (start,) = journal.unfinished(book)
    return book, str(start["attempt_id"])


@pytest.mark.slow
def test_while_a_run_holds_the_lock_validate_names_the_start_and_ingest_waits(
    tmp_path: Path,
) -> None:
    book, attempt_id = _killed_campaign(tmp_path)
    killed_holder = unfinished.holder_path(book).read_text(encoding="utf-8")
    with filelock.FileLock(str(unfinished.lock_path(book)), timeout=0):  # a run holds it
        unfinished.holder_path(book).write_text(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "running": True})
        )
        (finding,) = validate(store.read(book), book)
        assert (finding.sheet, finding.column, finding.check) == (
            "Attempts",
            "attempt_id",
            "unfinished",
        )
        assert finding.message.startswith(
            f"attempt {attempt_id!r} (variant 'b1-fp32', repetition 1) started "
        )
        assert "it is running now" in finding.message
        held = iteralab("ingest", str(book))
        assert held.returncode == 0, held.stderr
        assert "it is running now" in held.stderr
        assert attempts(book) == [] and len(journal.unfinished(book)) == 1
    unfinished.holder_path(book).write_text(killed_holder)
    (finding,) = validate(store.read(book), book)  # the run is gone now
    assert "left no record: its run (pid " in finding.message
    assert "`iteralab ingest campaign.xlsx` records it as interrupted" in finding.message


@pytest.mark.slow
def test_report_records_the_killed_attempt_as_resume_would(tmp_path: Path) -> None:
    book, attempt_id = _killed_campaign(tmp_path)
    reported = iteralab("report", str(book), "--no-png")
    assert reported.returncode == 0, reported.stderr
    assert f"as interrupted: {attempt_id}" in reported.stderr
    (row,) = attempts(book)
    assert (row["attempt_id"], row["status"]) == (attempt_id, "interrupted")
    text = (tmp_path / "campaign_report" / "report.md").read_text(encoding="utf-8")
    assert "finding(s)" not in text or "unfinished" not in text
    resumed = iteralab("run", str(book), "--resume", "--quiet")  # the slot runs again
    assert resumed.returncode == 0, resumed.stderr
    assert [r["status"] for r in attempts(book)] == ["interrupted", "completed"]
