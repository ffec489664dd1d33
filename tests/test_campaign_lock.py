"""One campaign writer per workbook: a second `iteralab run` refuses at once, naming the
holder; a lock left by a killed run is taken over (toolkit.runner.driver.campaign_lock)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import make_campaign, variant

from toolkit.evidence import journal
from toolkit.runner.driver.campaign_lock import holder_path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _run(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolkit", "run", str(book), "--quiet", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


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
    first = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "run", str(book), "--quiet"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
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
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the run and its worker, as a crash would
        first.communicate()
    third = _run(book, "--resume")
    assert third.returncode == 0, third.stderr
    assert (
        f"note: took over the campaign lock of a run that ended without releasing it "
        f"(pid {first.pid} on {socket.gethostname()}"
    ) in third.stderr
    ids = [r["attempt"]["attempt_id"] for r in journal.read(book)]
    assert len(ids) == len(set(ids))  # no slot journaled twice
    assert json.loads(holder_path(book).read_text(encoding="utf-8"))["running"] is False
