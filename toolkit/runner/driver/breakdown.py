"""Where a campaign run's wall time went, each part timed.

wall = measured windows + the protocol's floor (load, warm-up, evaluation, export: what the
Protocol fixes for every attempt; and an engine's one-off conversion, which the pre-flight
builds for the attempts) + the toolkit's own overhead (start-up, the pre-flight,
starting workers, the worker's work around its phases, bookkeeping between attempts,
workbook saves on the critical path, the closing ingestion). On a rented card the overhead
is paid time the protocol does not ask for.

The driver's main thread is always in exactly one part (:meth:`Timeline.enter`), from the
process's start to the end of the run, so the parts add up to the wall time by
construction. The attempt part is split with what each worker timed itself: its phases and
its own span (``elapsed_s``); the rest of the driver's span of an attempt is the worker's
start and hand-over (fork, reading the spec, sending the record, exit). Workbook saves run
beside the attempts (another thread, not on the clock: ``saves_beside_attempts_s``); the
run waits only for the last ones, at its end (``saves_s``).

``launcher`` says how the attempts' workers started: forked by the run's fork server, or
spawned as new interpreters (each paying the imports in ``worker_start_s``) and why; None when
the attempts ran in the campaign's own process (process policy ``shared``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from toolkit.plumbing import clock

if TYPE_CHECKING:
    from toolkit.runner.driver.forkserver import Launches

FORMAT = "iteralab-run-time/1"
#: The protocol's floor per attempt; the cold pass (repetition 1 of each variant) is one.
FLOOR = ("load_s", "warmup_s", "evaluation_s", "export_s", "cold_pass_s")
#: The driver's own parts, in the order a run passes through them.
PARTS = ("startup_s", "preflight_s", "attempts_s", "bookkeeping_s", "closing_s", "saves_s")


class Timeline:
    """The driver's main thread, always in one part; each second goes to the part it was in.

    Starts in ``startup_s`` at the ``iteralab`` process's start (:mod:`toolkit.plumbing.clock`),
    or at its creation in another program."""

    def __init__(self) -> None:
        self.from_process_start = clock.process_start is not None
        self.began = time.monotonic() if clock.process_start is None else clock.process_start
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.part, self.since = "startup_s", self.began
        self.ended: float | None = None
        #: Seconds of workbook saves done beside a running attempt (not on the clock).
        self.overlapped_saves_s = 0.0
        #: Of ``preflight_s``: the model's work on its batches (a faster device shortens it).
        self.preflight_work_s = 0.0
        #: Of ``preflight_s``: the engines' conversions it built (ONNX export, CTranslate2),
        #: which belong to the protocol's floor (an engine's load phase).
        self.conversion_s = 0.0
        #: How the attempts' workers were started; None: in the campaign's process.
        self.launches: Launches | None = None
        self._lock = threading.Lock()

    def enter(self, part: str) -> str:
        """Count the time since the last change to the current part, switch to ``part``;
        returns the part left (to come back to it)."""
        now = time.monotonic()
        left = self.part
        self.seconds[left] += now - self.since
        self.part, self.since = part, now
        return left

    def stop(self) -> None:
        """The run is over: close the current part."""
        self.enter(self.part)
        self.ended = self.since

    def overlapped(self, seconds: float) -> None:
        """A save that ran beside an attempt (another thread) took ``seconds``."""
        with self._lock:
            self.overlapped_saves_s += seconds


def summary(timeline: Timeline, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's breakdown (JSON-ready): ``wall_s`` = ``measured_s`` + ``floor_s`` +
    ``overhead_s``, each part named."""
    if timeline.ended is None:
        timeline.stop()
    assert timeline.ended is not None
    wall = timeline.ended - timeline.began
    attempts = [r["attempt"] for r in records]
    measured = sum(_number(a.get("measured_s")) for a in attempts)
    floor = {k: round(sum(_number(a.get(k)) for a in attempts), 3) for k in FLOOR}
    timed = [r for r in records if r.get("elapsed_s") is not None]
    inside = sum(_number(r.get("elapsed_s")) for r in timed)
    # Each worker's own span less its phases: environment, peak probe, the record.
    around = max(0.0, inside - sum(_phases(r["attempt"]) for r in timed))
    phases = measured + sum(floor.values())
    s = timeline.seconds
    conversion = min(timeline.conversion_s, s["preflight_s"])
    floor["conversion_s"] = round(conversion, 3)
    overhead = {
        "startup_s": s["startup_s"],
        "preflight_s": s["preflight_s"] - conversion,
        "worker_start_s": max(0.0, s["attempts_s"] - phases - around),
        "around_phases_s": around,
        "bookkeeping_s": s["bookkeeping_s"],
        "closing_s": s["closing_s"],
        "saves_s": s["saves_s"],
    }
    total = sum(overhead.values())
    n = len(records)
    return {
        "format": FORMAT,
        "attempts": n,
        "wall_s": round(wall, 3),
        "measured_s": round(measured, 3),
        "floor_s": round(sum(floor.values()), 3),
        "floor": floor,
        "overhead_s": round(total, 3),
        "overhead": {k: round(v, 3) for k, v in overhead.items()},
        "overhead_share": round(total / wall, 4) if wall > 0 else None,
        "overhead_per_attempt_s": round(total / n, 3) if n else None,
        "saves_beside_attempts_s": round(timeline.overlapped_saves_s, 3),
        "preflight_work_s": round(timeline.preflight_work_s, 3),
        "launcher": timeline.launches.summary() if timeline.launches is not None else None,
        "from_process_start": timeline.from_process_start,
    }


def _phases(attempt: dict[str, Any]) -> float:
    return sum(_number(attempt.get(k)) for k in ("measured_s", *FLOOR))


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
