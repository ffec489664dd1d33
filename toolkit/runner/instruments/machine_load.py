"""How much of the machine other processes took during a block: their CPU seconds.

From ``/proc/stat`` (every process's CPU time) less this process's own (and its finished
children's). Linux only; elsewhere the count is None. The one meter of the project: the
runner's measured window (Attempts ``others_cpu_s``, ``others_cpu_share``) and peak probe,
and the benchmarks, all read load through it, so a window or a probe taken while other jobs
ran is named so.

"Other processes" are every process but this one and the children it has waited for: on a
campaign that is the other jobs of the host, and also the campaign's own driver process,
which waits on the attempt's worker (a few milliseconds a second of progress events).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

#: The logical CPUs ``/proc/stat``'s first line adds up: the machine a share is out of.
MACHINE_CORES = os.cpu_count() or 1
#: Why the meter has no count on this machine.
NOT_MEASURABLE = "not measurable on this OS: no /proc/stat to read other processes' CPU time"


def machine_busy_s() -> float | None:
    """CPU seconds all processes have used on this machine (``/proc/stat``), None elsewhere."""
    try:
        fields = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()
        values = [int(v) for v in fields[1:9]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal: everything but idle and iowait is busy.
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds of this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class OthersMeter:
    """CPU seconds other processes used during a ``with`` block (``others_s``), the cores
    that is over its wall time (``cores``) and the machine's share (``share``); all None
    without ``/proc/stat``."""

    others_s: float | None = None
    cores: float | None = None
    wall_s: float | None = None

    def __enter__(self) -> OthersMeter:
        self._start = (time.perf_counter(), machine_busy_s(), own_cpu_s())
        return self

    def __exit__(self, *exc: object) -> None:
        wall0, busy0, own0 = self._start
        busy = machine_busy_s()
        self.wall_s = max(time.perf_counter() - wall0, 1e-9)
        if busy is not None and busy0 is not None:
            self.others_s = max(0.0, (busy - busy0) - (own_cpu_s() - own0))
            self.cores = self.others_s / self.wall_s

    @property
    def share(self) -> float | None:
        """``others_s / (wall seconds x MACHINE_CORES)``: the part of the whole machine's CPU
        other processes took, at most 1 (``/proc/stat`` counts in clock ticks, 10 ms, so a
        short block's count can overshoot by a tick or two)."""
        if self.cores is None:
            return None
        return min(1.0, self.cores / MACHINE_CORES)
