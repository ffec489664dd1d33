"""A campaign killed with SIGKILL loses no attempt: the journal and `ingest` restore them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import filelock
import pytest

from tests.support.builders import iteralab, make_campaign, variant
from tests.support.paths import ROOT
from toolkit.evidence import journal
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


@pytest.mark.slow
def test_sigkill_between_journal_and_workbook_loses_nothing(tmp_path: Path) -> None:
    """The campaign is killed after its first attempt reached the journal, while the second
    runs (hung on purpose) and before any ingestion (the run ingests every 30 s; this test
    also holds the writer lock, as a second writer would): the workbook is untouched and
    readable, `ingest` adds the attempt and records the killed one as interrupted, the chain
    holds, and `run --resume` runs the killed slot again and finishes the campaign."""
    book = make_campaign(
        tmp_path,
        8,
        [variant("b1-fp32", 1), variant("b4-fp32", 4)],
        repetitions=2,
        process_policy="shared",
        threshold=0.4,
    )
    before = book.read_bytes()
    log = journal.journal_path(book)
    with filelock.FileLock(str(book) + ".lock"):
        campaign = subprocess.Popen(
            [sys.executable, "-m", "toolkit", "run", str(book), "--quiet"],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT), ITERALAB_INJECT_FAULT="hang@1:b4-fp32:1"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 240
        while not (log.exists() and journal.read(book)) and campaign.poll() is None:
            assert time.monotonic() < deadline, "no attempt reached the journal in 240 s"
            time.sleep(0.01)
        while not journal.unfinished(book) and campaign.poll() is None:
            assert time.monotonic() < deadline, "the second attempt never started"
            time.sleep(0.01)
        time.sleep(0.5)  # the second attempt runs, hung; nothing ingested yet
        os.killpg(campaign.pid, signal.SIGKILL)
        assert campaign.wait(timeout=30) == -signal.SIGKILL
    assert book.read_bytes() == before
    assert store.read(book).tables["Attempts"] == []
    (record,) = journal.read(book)

    (killed_start,) = journal.unfinished(book)
    ingested = iteralab("ingest", str(book))
    assert ingested.returncode == 0, ingested.stderr
    rows = store.read(book).tables["Attempts"]
    # The attempt killed with the run is on the record too, as interrupted (issue 38).
    assert [(r["attempt_id"], r["status"]) for r in rows] == [
        (record["attempt"]["attempt_id"], "completed"),
        (killed_start["attempt_id"], "interrupted"),
    ]
    assert validate(store.read(book), book) == []

    resumed = iteralab("run", str(book), "--resume", "--quiet")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = store.read(book)
    statuses = [(r["variant_id"], r["repetition"], r["status"]) for r in final.tables["Attempts"]]
    assert sorted(statuses) == [
        ("b1-fp32", 1, "completed"),
        ("b1-fp32", 2, "completed"),
        ("b4-fp32", 1, "completed"),
        ("b4-fp32", 1, "interrupted"),
        ("b4-fp32", 2, "completed"),
    ]
    (killed,) = [r for r in final.tables["Attempts"] if r["status"] == "interrupted"]
    assert "ended while this attempt ran and left no record" in killed["notes"]
    assert validate(final, book) == []
