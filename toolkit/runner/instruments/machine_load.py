"""How much of the machine other processes took during a block: their CPU seconds.

From ``/proc/stat`` (every process's CPU time) less this process's own (and its finished
children's). Linux only; elsewhere the count is None. What the benchmarks' ``OthersMeter``
does, for the runner: a window or a peak probe taken while other jobs ran is named so.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


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
    """CPU seconds other processes used during a ``with`` block (``others_s``) and the cores
    that is over its wall time (``cores``); both None without ``/proc/stat``."""

    others_s: float | None = None
    cores: float | None = None

    def __enter__(self) -> OthersMeter:
        self._start = (time.perf_counter(), machine_busy_s(), own_cpu_s())
        return self

    def __exit__(self, *exc: object) -> None:
        wall0, busy0, own0 = self._start
        busy = machine_busy_s()
        if busy is not None and busy0 is not None:
            self.others_s = max(0.0, (busy - busy0) - (own_cpu_s() - own0))
            self.cores = self.others_s / max(time.perf_counter() - wall0, 1e-9)
