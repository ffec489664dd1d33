"""One attempt to a journal record: the dispatcher to the Protocol task's kind.

:func:`run_attempt` hands the attempt to its task kind (:mod:`toolkit.runner.tasks`):
``classification`` (:mod:`toolkit.runner.tasks.classification`) or ``generation``
(:mod:`toolkit.runner.tasks.generation`), each running the same phases
(:mod:`toolkit.runner.tasks.phases`) over its own engine (:mod:`toolkit.runner.engines.contract`).
:class:`InterruptGuard` is how Ctrl-C reaches an attempt; :func:`fallback_record` is the row
the campaign writes for a worker that died without writing its own.

Attempts may share a process (process policy ``shared``), so each starts from a
released baseline (collected, cache emptied, recorded in the notes) with float32
pinned to full precision, and ends by dropping its model and any traceback
holding its tensors; after a CUDA error other than out-of-memory, a shared
campaign stops.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

from toolkit.evidence import determinism, journal
from toolkit.runner.instruments import achieved, environment
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks import classification, columns
from toolkit.runner.tasks.cells import Cells, file_cells, identity_cells, verdict_cells
from toolkit.runner.tasks.kinds import kind_of
from toolkit.runner.tasks.process_state import Emit, attempt_seed, attempt_threads

__all__ = ["AttemptSpec", "InterruptGuard", "fallback_record", "run_attempt"]


class InterruptGuard:
    """Ctrl-C stops the load, warm-up and measured window at once; later it waits.

    After the measured window the attempt finishes exporting and recording
    before the campaign stops, so a completed run is never lost to a late Ctrl-C.
    """

    def __init__(self) -> None:
        self.requested = False
        self.armed = True
        self._previous: dict[int, Any] = {}

    def stop_campaign(self) -> None:
        """Ask the campaign to stop after this attempt, as a Ctrl-C does."""
        self.requested = True

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self.armed:
            raise KeyboardInterrupt("Ctrl-C" if signum == signal.SIGINT else "SIGTERM")

    def __enter__(self) -> InterruptGuard:
        # SIGTERM (a machine being stopped) stops the attempt as Ctrl-C does: heard here, so
        # the attempt is recorded interrupted, never as its own code's KeyboardInterrupt.
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:  # None: a handler not installed from Python
                signal.signal(signum, previous)
        self._previous = {}


def run_attempt(
    spec: AttemptSpec, emit: Emit, guard: InterruptGuard | None = None
) -> dict[str, Any]:
    """Run one attempt by its Protocol task's kind; return its journal record (Attempts
    row and Manifest row).

    Never raises for a failure of the attempt itself: that is a row. ``emit``
    receives progress events (phase changes, items done).
    """
    return kind_of(spec).run(spec, emit, guard or InterruptGuard())


def fallback_record(
    spec: AttemptSpec, status: str, items_done: int, note: str, phase: str | None, started_at: str
) -> dict[str, Any]:
    """The record the campaign writes when a worker died without writing its own.

    Only what the campaign saw is filled: items completed (from the worker's
    progress), the error, and the file its kind left on disk (a serving attempt's
    requests, each synced as it ended: path, SHA-256 and what it holds, in the notes);
    every measurement is empty with its reason.
    """
    kept = kind_of(spec).left_behind(spec)
    manifest = classification.manifest(
        spec,
        predictor=None,
        fingerprint=None,
        items=0,
        counts={},
        truncated=None,
        threads=attempt_threads(spec),
        seed=attempt_seed(spec),
        env=environment.manifest_fields(),
        state=determinism.NOT_READ + " (the worker ended without a record)",
        measured=achieved.manifest_values(None, "not probed: the worker ended without a record"),
    )
    cells = Cells()
    put = cells.put
    identity_cells(put, spec, started_at, status, manifest["manifest_id"])
    lost = f"worker process ended without a record ({status} during {phase or 'start-up'})"
    for column in columns.measured_columns():
        put(column.name, None, lost)
    put("items_completed", items_done)
    put("expected_ids", spec.corpus_items)
    verdict_cells(put, status, "not evaluated", None, ids_match=False)
    file_cells(put, kept[0] if kept else None, kept[1] if kept else None)
    put("notes", f"{note}; {kept[2]}" if kept else note)
    put("attention_kernels", None)
    put("recompilations", None)
    put("seed", attempt_seed(spec))
    columns.check(cells.row, "fallback")
    return journal.record(cells.row, manifest)
