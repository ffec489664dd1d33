"""One campaign writer at a time: `iteralab run` holds its workbook's campaign lock throughout.

The writer lock of :mod:`toolkit.workbook.store` covers each save; two runs on
one workbook would still both run the whole campaign, disturb each other's
timings and journal the same slots twice. The campaign lock is held from the
campaign's preparation to its last ingestion: a second run refuses at once,
naming the holder (pid, host, start time, from ``NAME.campaign.json`` beside the
workbook). The operating system releases the lock when its process dies, so a
lock left by a killed run is taken over, and the run says whose it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import filelock

from toolkit.errors import WorkbookBusyError
from toolkit.evidence.unfinished import holder, holder_path, lock_path, who
from toolkit.plumbing.atomic import write_text
from toolkit.plumbing.clock import now_text


@contextlib.contextmanager
def campaign_lock(workbook: Path) -> Iterator[str | None]:
    """Hold the campaign lock of ``workbook``; yields a note when a dead run's lock was taken
    over (None otherwise). Raises WorkbookBusyError naming the holder when a run holds it."""
    lock = filelock.FileLock(str(lock_path(workbook)), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise WorkbookBusyError(
            f"{workbook}: a campaign is already running on it ({who(holder(workbook))})",
            hint="wait for it to finish (or stop it with Ctrl-C), then `iteralab run "
            f"{workbook.name} --resume`; never two runs on one workbook",
        ) from exc
    try:
        previous = holder(workbook)
        note = None
        if previous.get("running"):
            note = (
                f"took over the campaign lock of a run that ended without releasing it "
                f"({who(previous)})"
            )
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": now_text(),
            "running": True,
        }
        write_text(holder_path(workbook), json.dumps(me, sort_keys=True) + "\n")

        def say_ended() -> None:
            ended = {**me, "running": False, "ended_at": now_text()}
            write_text(holder_path(workbook), json.dumps(ended, sort_keys=True) + "\n")

        try:
            yield note
        except BaseException:
            # The run's own error says more than this note (on a full disk it fails too;
            # the next run then takes the lock over, saying so).
            with contextlib.suppress(OSError):
                say_ended()
            raise
        say_ended()
    finally:
        lock.release()
