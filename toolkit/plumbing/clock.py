"""The moment, as the workbook records it: local time with its UTC offset, to the second."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path


def now_text() -> str:
    """Now, e.g. ``2026-12-02T15:30:00+01:00`` (stdlib only: the runner imports it too)."""
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds")


#: When this process started, in ``time.monotonic()`` seconds; set by the ``iteralab``
#: command's entry (:func:`mark_process_start`). A campaign run from another program (a test,
#: a notebook) times itself from its own start instead.
process_start: float | None = None


def mark_process_start() -> None:
    """Remember when this process started (Linux /proc: interpreter start-up and imports
    included; elsewhere, now)."""
    global process_start
    process_start = time.monotonic() - (_process_age_s() or 0.0)


def _process_age_s() -> float | None:
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - int(stat[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None
