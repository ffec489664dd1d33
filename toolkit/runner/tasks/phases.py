"""The phases every attempt (classification, generation) runs through, and how they end.

Load, warm-up and measured window are each timed on their own (a :class:`probes.Span`),
announced as a progress event, and run inside one block that turns a failure into the
attempt's status (completed, failed, interrupted) and remembers the phase it stopped in
(R12-R13). The measured window also counts the CPU time other processes of the machine took
meanwhile (:class:`machine_load.OthersMeter`), the same for every task kind and engine. After
the block, evaluation and export run untimed by the span; the row then says each phase's
duration or why it has none, the window's load, and :meth:`AttemptRun.record` closes the
attempt. What each kind of attempt loads, runs and checks is its task kind's
(:mod:`toolkit.runner.tasks`), given to :meth:`AttemptRun.run_steps` as :class:`Steps`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import torch

from toolkit.evidence import corpus, journal
from toolkit.plumbing.clock import now_text
from toolkit.runner import plan
from toolkit.runner.instruments import faults, machine_load, probes
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks.cells import Cells, Put, identity_cells, seconds
from toolkit.runner.tasks.failures import AttemptTimeout, breaks_cuda, forget_traceback
from toolkit.runner.tasks.process_state import Emit, start_process

if TYPE_CHECKING:  # the dispatcher ranks above the task kinds
    from toolkit.runner.attempt import InterruptGuard

#: Progress events are sent at most this often (seconds) while items are processed.
PROGRESS_EVERY_S = 0.2

#: The timed phases and their duration columns, in the order they run.
DURATION_COLUMNS = (("load", "load_s"), ("warm-up", "warmup_s"), ("measured", "measured_s"))

#: Why a CPU variant's device columns are empty.
CPU_NO_DEVICE_SPAN = "cpu variant: no device span"
#: What host_rss_peak_bytes means when attempts share one process.
SHARED_RSS_NOTE = "host RSS peak: lifetime peak of the shared campaign process"


class RaisedExit(Exception):
    """The attempt's own code raised KeyboardInterrupt with no Ctrl-C, or SystemExit: it
    fails that attempt, it does not stop the campaign."""

    def __init__(self, raised: BaseException) -> None:
        said = str(raised).strip()
        super().__init__(
            f"the attempt's code raised {type(raised).__name__}"
            + (f"({said})" if said else "")
            + (" with no Ctrl-C pressed" if isinstance(raised, KeyboardInterrupt) else "")
        )


class Steps(Protocol):
    """What a task kind does in each timed phase (:meth:`AttemptRun.run_steps`)."""

    def session(self) -> AbstractContextManager[Any]:
        """The context the phases run in (a compilation session; entered inside them)."""

    def load(self) -> None:
        """Load the model and make its first, untimed-in-the-window calls (R8)."""

    def phase_done(self, phase: str) -> None:
        """After ``phase`` (and after the phases, with the phase they ended in)."""

    def warm_pass(self, items: list[corpus.Item]) -> None:
        """One warm-up pass over ``items``."""

    def measure(self) -> None:
        """The measured window (R9)."""


class AttemptRun:
    """One attempt under way: its clock, process state, current phase and how it ended.

    Creating it puts the process in the state the attempt is measured in
    (:func:`process_state.start_process`). ``guard`` is the attempt's InterruptGuard
    (duck-typed: ``armed`` and ``stop_campaign``).
    """

    def __init__(
        self, spec: AttemptSpec, emit: Emit, guard: InterruptGuard, device: str | None = None
    ) -> None:
        self.spec = spec
        self.emit = emit
        self.guard = guard
        self.started_at = now_text()
        self.began = time.monotonic()
        #: Where the phases are timed: the variant's device, or ``device`` (a serving
        #: attempt's client times on the host whatever card the endpoint runs on).
        self.device = torch.device(device or spec.variant["device"])
        self.deadline = self.began + spec.timeout_s if spec.timeout_s else None
        self.threads, self.seed, self.baseline = start_process(spec, self.device)
        fault = faults.from_environment()  # a drill's failure inside the measured window
        self.fault = (
            fault
            if fault is not None and fault.applies(spec.variant["variant_id"], spec.repetition)
            else None
        )
        self.warmup = plan.parse_warmup(spec.protocol.get("warmup_rule"))
        self.corpus_path = spec.base / str(spec.protocol["corpus_path"])
        #: Process policy shared: attempts follow each other in one process (R18).
        self.shared = spec.protocol.get("process_policy") == "shared"
        self.phase = "load"
        self.spans: dict[str, probes.Span] = {}
        #: Steps timed inside a phase but recorded apart from its duration (the cold pass
        #: inside load), by the phase they ran in.
        self.apart: dict[str, list[probes.Span]] = {}
        #: Other processes' CPU time during the measured window (None until it is entered).
        self.others: machine_load.OthersMeter | None = None
        self.status = "completed"
        self.error: BaseException | None = None
        #: A CUDA error other than out-of-memory ended the phases (failures.breaks_cuda).
        self.broken = False
        self._last_emit = 0.0

    # ---- the phases

    @contextmanager
    def phases(self) -> Iterator[None]:
        """The block the timed phases run in: a failure ends it, not the attempt.

        Ctrl-C makes the status interrupted, any other exception failed; either way the
        guard is disarmed (a later Ctrl-C waits for the record), and a failure drops its
        traceback before memory is released (the frames hold activations and the model).
        """
        try:
            yield
        except KeyboardInterrupt as exc:
            if self.guard.requested:
                self.status, self.error = "interrupted", exc
            else:  # raised by the attempt's own code: no Ctrl-C asked the campaign to stop
                self.status, self.error = "failed", RaisedExit(exc)
        except SystemExit as exc:  # sys.exit() in a predictor: its attempt, not the campaign
            self.status, self.error = "failed", RaisedExit(exc)
        except Exception as exc:  # noqa: BLE001 - a failed attempt is a row, not a crash
            self.status, self.error = "failed", exc
        finally:
            self.guard.armed = False
        if self.error is not None:
            self.broken = breaks_cuda(self.error)
            forget_traceback(self.error)  # before emptying the cache
            probes.release_memory(self.device, cuda=not self.broken)

    @contextmanager
    def timed(self, name: str) -> Iterator[probes.Span]:
        """Enter phase ``name``: announce it and time it (on CUDA also on the device)."""
        self.phase = name
        self.emit({"event": "phase", "phase": name})
        with probes.Span(self.device) as span:
            self.spans[name] = span
            yield span

    @contextmanager
    def timed_apart(self) -> Iterator[probes.Span]:
        """Time a step of the current phase on its own (synchronised at both ends on
        CUDA), recorded apart: the phase's duration leaves it out."""
        with probes.Span(self.device) as span:
            yield span
        self.apart.setdefault(self.phase, []).append(span)

    def run_steps(self, steps: Steps) -> None:
        """The timed phases of a task kind: load, warm-up by the protocol's rule and the
        measured window, inside the kind's session and the :meth:`phases` block."""
        with self.phases(), steps.session():
            with self.timed("load"):
                steps.load()
            steps.phase_done("load")
            self.warm_up(steps.warm_pass)
            steps.phase_done("warm-up")
            with self.others_meter(), self.timed("measured"):
                steps.measure()
        steps.phase_done(self.phase)

    @contextmanager
    def others_meter(self) -> Iterator[None]:
        """Count other processes' CPU time over the block: around the measured window's span,
        so its wall covers the span's synchronised ends."""
        with machine_load.OthersMeter() as self.others:
            yield

    def warm_up(self, run_pass: Callable[[list[corpus.Item]], None]) -> None:
        """The warm-up phase by the protocol's rule: ``run_pass`` on its first items, once per
        pass. With no warm-up the phase is still entered (a failure from here on is "during
        warm-up"), announced and timed only when there is one."""
        self.phase = "warm-up"
        if self.warmup.none:
            return
        with self.timed("warm-up"):
            items = corpus.read_corpus(self.corpus_path)[: self.warmup.items]
            for _ in range(self.warmup.passes):
                run_pass(items)

    def report_items(self, done: int, total: int, *, force: bool = False) -> None:
        """Send an items event, at most every PROGRESS_EVERY_S unless the last or forced."""
        now = time.monotonic()
        if now - self._last_emit >= PROGRESS_EVERY_S or done == total or force:
            self._last_emit = now
            self.emit({"event": "items", "phase": self.phase, "done": done, "total": total})

    def check_deadline(self) -> None:
        """Stop the attempt once it runs past its timeout."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AttemptTimeout(f"ran past the attempt timeout of {self.spec.timeout_s:g} s")

    def after_batch(self, done: int, total: int) -> None:
        """What follows each batch: progress, an injected fault once its item count is
        reached inside the measured window (its progress sent first, so the campaign knows
        how far the window came), then the deadline."""
        firing = self.fault is not None and self.phase == "measured" and done >= self.fault.after
        self.report_items(done, total, force=firing)
        if firing:
            assert self.fault is not None
            if self.fault.kind == "interrupt":
                self.guard.stop_campaign()  # as the Ctrl-C it stands for, heard by the guard
            self.fault.fire(self.deadline)
        self.check_deadline()

    # ---- how the phases ended

    @property
    def failed_phase(self) -> str | None:
        """The phase a failure stopped in, None when the phases completed."""
        return self.phase if self.error is not None else None

    def where(self, done: int, total: int, unit: str) -> str:
        """Where the failure stopped, for its note: inside the window, how far it came."""
        if self.failed_phase == "measured":
            return f"after {done} of {total} {unit}"
        return f"during {self.failed_phase}"

    def baseline_note(self) -> str | None:
        """The CUDA memory the peaks were reset at (None off CUDA)."""
        if self.baseline is None:
            return None
        return (
            f"CUDA memory when the peaks were reset: allocated {self.baseline[0]:,} B, "
            f"reserved {self.baseline[1]:,} B"
        )

    # ---- the row

    def start_row(self, manifest_id: str) -> Cells:
        """The row's first cells: which attempt it is and how it ended, each timed phase's
        duration and the measured window's device span."""
        cells = Cells()
        identity_cells(cells.put, self.spec, self.started_at, self.status, manifest_id)
        self.duration_cells(cells.put)
        self.device_cell(cells.put)
        self.load_cells(cells.put)
        return cells

    def duration_cells(self, put: Put) -> None:
        """Each timed phase's duration, or why it has none (R12-R13)."""
        failed = self.failed_phase
        for name, column in DURATION_COLUMNS:
            timed = self.spans.get(name)
            if timed is not None and timed.host_s is not None:
                aside = sum(span.host_s or 0.0 for span in self.apart.get(name, []))
                put(column, seconds(timed.host_s - aside))
            elif name == "warm-up" and self.warmup.none and failed != "load":
                put(column, None, f"warm-up rule is {self.warmup.text!r}: no warm-up")
            elif failed == name:
                put(
                    column,
                    None,
                    f"{self.status} during {name}: an unfinished phase has no duration",
                )
            else:
                put(column, None, f"not reached: {self.status} during {failed}")

    def device_cell(self, put: Put) -> None:
        """The measured window's device span (R10): CUDA only, a finished window only."""
        measured = self.spans.get("measured")
        if self.device.type != "cuda":
            put("device_s", None, CPU_NO_DEVICE_SPAN)
        elif measured is not None and measured.device_s is not None:
            put("device_s", seconds(measured.device_s))
        else:
            put("device_s", None, f"{self.status}: the measured window did not finish")

    def load_cells(self, put: Put) -> None:
        """Other processes' CPU time during the measured window and their share of the
        machine: a finished window only (a failed one's count covers a part of it)."""
        measured = self.spans.get("measured")
        if measured is None or measured.host_s is None or self.others is None:
            why = f"{self.status}: the measured window did not finish"
            put("others_cpu_s", None, why)
            put("others_cpu_share", None, why)
        elif self.others.others_s is None or self.others.share is None:
            put("others_cpu_s", None, machine_load.NOT_MEASURABLE)
            put("others_cpu_share", None, machine_load.NOT_MEASURABLE)
        else:
            put("others_cpu_s", round(self.others.others_s, 3))
            put("others_cpu_share", round(self.others.share, 4))

    @property
    def window_share(self) -> float | None:
        """The part of the machine other processes took during the finished measured window
        (``others_cpu_share``); None when the window did not finish or the OS does not say."""
        measured = self.spans.get("measured")
        if measured is None or measured.host_s is None or self.others is None:
            return None
        return self.others.share

    def record(self, cells: Cells, manifest: dict[str, Any]) -> dict[str, Any]:
        """Close the attempt: the done event, then its journal record with the time it took.

        The caller drops its model first, so that releasing memory here frees it (the next
        attempt of a shared process must not find it in memory).
        """
        self.emit({"event": "phase", "phase": "done", "status": self.status})
        record = journal.record(cells.row, manifest)
        record["elapsed_s"] = round(time.monotonic() - self.began, 3)
        probes.release_memory(self.device, cuda=not self.broken)
        return record
