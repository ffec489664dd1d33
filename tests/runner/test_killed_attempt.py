"""A run killed (SIGKILL) during an attempt leaves a trace of the attempt that started: the
next run records it as an interrupted row, then runs its slot again (#14 item 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.builders import attempts, iteralab, kill_mid_attempt, make_campaign, variant
from toolkit.evidence import journal

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


@pytest.mark.slow
def test_an_attempt_killed_with_its_run_becomes_an_interrupted_row(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 24, [variant("b1-fp32", 1)], process_policy="fresh")
    pid = kill_mid_attempt(["run", str(book), "--quiet"], book)
    (started,) = journal.unfinished(book)
    assert journal.read(book) == []
    resumed = iteralab("run", str(book), "--resume", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    rows = attempts(book)
    assert [(r["attempt_id"][:-5], r["status"]) for r in rows] == [
        (started["attempt_id"][:-5], "interrupted"),
        ("a002-b1-fp32-r1", "completed"),
    ]
    assert rows[0]["notes"].startswith(
        f"interrupted: the run (pid {pid}) ended while this attempt ran and left no record"
    )
    assert rows[0]["measured_s"] is None and rows[0]["measured_s_reason"]
    assert journal.unfinished(book) == []
