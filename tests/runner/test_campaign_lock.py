"""One campaign writer per workbook: a second `iteralab run` refuses at once, naming the
holder; a lock left by a killed run is taken over (toolkit.runner.driver.campaign_lock)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.builders import iteralab, iteralab_running, make_campaign, variant
from toolkit.evidence import journal
from toolkit.runner.driver.campaign_lock import holder_path

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _run(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return iteralab("run", str(book), "--quiet", *args)


def _wait_running(book: Path, proc: subprocess.Popen[str]) -> dict[str, object]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            holder = json.loads(holder_path(book).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            holder = {}
        if holder.get("running") and holder.get("pid") == proc.pid:
            return holder
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the first run never took the campaign lock")


@pytest.mark.slow
def test_a_second_run_refuses_and_a_killed_runs_lock_is_taken_over(tmp_path: Path) -> None:
    book = make_campaign(
        tmp_path,
        60,
        [variant("b1-fp32", 1), variant("b4-fp32", 4)],
        repetitions=2,
        process_policy="fresh",
    )
    with iteralab_running("run", str(book), "--quiet") as first:  # killed as a crash would
        holder = _wait_running(book, first)
        started = time.monotonic()
        second = _run(book, "--resume")
        assert time.monotonic() - started < 30  # at once, not after the campaign
        assert second.returncode == 1
        assert second.stderr.startswith(
            f"error: {book}: a campaign is already running on it (pid {first.pid} on "
            f"{socket.gethostname()}, started {holder['started_at']})\n"
        )
        assert second.stdout == ""
    third = _run(book, "--resume")
    assert third.returncode == 0, third.stderr
    assert (
        f"note: took over the campaign lock of a run that ended without releasing it "
        f"(pid {first.pid} on {socket.gethostname()}"
    ) in third.stderr
    ids = [r["attempt"]["attempt_id"] for r in journal.read(book)]
    assert len(ids) == len(set(ids))  # no slot journaled twice
    assert json.loads(holder_path(book).read_text(encoding="utf-8"))["running"] is False
