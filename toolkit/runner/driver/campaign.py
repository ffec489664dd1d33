"""The campaign: every declared variant, the protocol's repetitions, rotated (R11, R14).

Reads the locked protocol and the variants, checks the corpus once, plans the
slots (1-4-8, 4-8-1, 8-1-4, ...), and runs each attempt under the protocol's
process policy: ``fresh`` runs each attempt in a new worker process (honest
memory peaks), forked from the run's fork server (:mod:`toolkit.runner.driver.forkserver`)
or started as ``python -m toolkit.runner.driver.worker``; ``shared`` runs them in this
process. Each
finished attempt is in the journal (fsync'd) before anything else; the workbook's Attempts
and Manifest catch up beside the next attempt, in a background thread, when the last
ingestion is 30 s old, and at the end with the derived sheets refreshed: no save waits on an
attempt's critical path, and a kill at any moment loses nothing ``iteralab ingest`` cannot
replay.

A worker that dies or hangs still leaves a row written here (failed, or
interrupted after Ctrl-C), with the items it reported done. Ctrl-C records the
running attempt as interrupted and stops; ``--resume`` runs the slots without a
completed or failed attempt, never redoing a settled one.

An :class:`Executor` runs the slots: :class:`LocalExecutor` on this machine, or a Ray
cluster's (``iteralab run --cluster``: one Ray task per attempt); :class:`Books` keeps this
process the only writer of ids, journal and workbook.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, NoReturn, Protocol

from toolkit import editing, layout
from toolkit.errors import ProtocolError, UsageError, WorkbookBusyError
from toolkit.evidence import corpus, journal, protocol, run_log
from toolkit.planner.identity import device_mismatches
from toolkit.plumbing import beside, engines
from toolkit.plumbing.clock import now_text
from toolkit.runner import decoding, lost, plan
from toolkit.runner.driver import breakdown, forkserver, worker
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks import evaluation
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

if TYPE_CHECKING:  # torch: imported where an attempt runs in this process only
    from toolkit.runner.attempt import InterruptGuard

#: Extra seconds a worker gets past its timeout before it is killed from outside.
KILL_GRACE_S = 30.0
#: Extra seconds an attempt in the campaign's process (process policy shared) gets past its
#: timeout before an alarm stops the call it is blocked in.
SHARED_GRACE_S = 5.0
#: How long a worker may take to record its attempt after Ctrl-C.
INTERRUPT_WAIT_S = 60.0


class Progress(Protocol):
    """What the campaign tells whoever shows its progress (the CLI's display)."""

    def start(self, total: int, done: int = 0) -> None:
        """The campaign has ``total`` slots, ``done`` of them recorded before."""

    def attempt(self, label: str) -> None:
        """An attempt starts."""

    def phase(self, name: str) -> None:
        """The running attempt enters a phase (load, warm-up, measured, ...)."""

    def items(self, done: int, total: int) -> None:
        """Items processed in the measured window so far."""

    def finished(self, record: dict[str, Any]) -> None:
        """An attempt's journal record, once written."""

    def echo(self, text: str) -> None:
        """A line for the user (warnings)."""

    def stop(self) -> None:
        """The campaign is over."""


@dataclass
class Options:
    """What to run and how: selection, resume, threads, timeout, ingestion."""

    series: int | None = None
    variant_ids: tuple[str, ...] = ()
    resume: bool = False
    threads: int | None = None
    timeout_s: float | None = None
    #: Ingest a finished attempt into the workbook when the last ingestion is at least this
    #: many seconds old (always at the end). The journal holds every record the moment it
    #: is written, so a crash loses nothing; saving after each attempt of a short campaign
    #: cost more wall time than its measured windows. 0: after each attempt.
    ingest_every_s: float = 30.0
    #: False when the attempts run on other machines (a cluster): each node checks its GPU.
    devices_here: bool = True

    def resume_command(self, workbook: Path, cluster: str | None = None) -> str:
        """The command that continues this run: ``workbook`` as the user gave it, the same
        selection, threads, timeout and cluster, with ``--resume`` (a bare ``--resume``
        would run every series of the campaign)."""
        words = ["iteralab", "run", str(workbook)]
        if self.series is not None:
            words += ["--series", str(self.series)]
        for variant_id in self.variant_ids:
            words += ["--variant", variant_id]
        if self.threads is not None:
            words += ["--threads", str(self.threads)]
        if self.timeout_s is not None:
            words += ["--timeout", f"{self.timeout_s:g}"]
        if cluster is not None:
            words += ["--cluster", cluster]
        return shlex.join([*words, "--resume"])


@dataclass
class Result:
    """What a campaign run did."""

    workbook: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    planned: int = 0
    already: int = 0
    interrupted: bool = False
    #: A shared campaign stopped by a CUDA error other than out-of-memory (its process's
    #: CUDA context cannot be trusted): not a Ctrl-C, though --resume continues it too.
    cuda_broken: bool = False
    ingest_pending: bool = False
    elapsed_s: float = 0.0
    #: Where the run's wall time went (:func:`breakdown.summary`); None on a cluster, whose
    #: attempts run side by side on several machines.
    time: dict[str, Any] | None = None

    @property
    def predictions_dir(self) -> Path:
        """The folder holding the predictions files."""
        return beside.predictions_folder(self.workbook)

    def counts(self) -> dict[str, int]:
        """Attempts recorded in this run, by status."""
        out = {s: 0 for s in layout.STATUSES}
        for entry in self.records:
            out[entry["attempt"]["status"]] += 1
        return out


@dataclass(kw_only=True)
class Campaign:
    """A prepared campaign: protocol, variants, corpus facts, slots to run."""

    workbook: Path
    protocol: dict[str, Any]
    protocol_sha256: str
    variants: dict[str, dict[str, Any]]
    slots: list[plan.Slot]
    todo: list[plan.Slot]
    known: list[dict[str, Any]]
    corpus_sha256: str
    corpus_items: int
    #: Journal records the catch-up did not ingest (attempt id -> why, naming the journal
    #: and what to do): the folder does not bear them out, so their slots count as not run.
    refused: dict[str, str] = field(default_factory=dict)


def known_attempts(data: WorkbookData, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Attempt rows of the workbook, then journal rows it lacks (each attempt once)."""
    rows = list(data.tables["Attempts"])
    have = {r.get("attempt_id") for r in rows}
    rows += [e["attempt"] for e in records if e["attempt"].get("attempt_id") not in have]
    return rows


def prepare(workbook: Path, options: Options) -> Campaign:
    """Read and check everything before the first attempt; plan the slots.

    Raises ProtocolError (not locked, edited since, unreadable warm-up rule),
    CorpusError (the corpus breaks an id/text rule), UsageError (unknown
    selection, a CUDA variant without CUDA, attempts already recorded without
    ``--resume``).
    """
    typed, workbook = workbook, workbook.resolve()
    # An attempt killed with an earlier run: its interrupted row (we hold the campaign lock).
    lost.journal_interrupted(workbook, journal.unfinished(workbook))
    records = journal.read(workbook)  # read once: nothing below writes the journal
    refused: dict[str, str] = {}
    if records:
        # Replay what an earlier run left in the journal only; a record the folder does not
        # bear out (provenance) stays out, and its slot is not counted as run.
        refused = editing.ingest(workbook, records, refresh_derived=True).refused
        records = [r for r in records if str(r["attempt"].get("attempt_id")) not in refused]
    data = store.read(workbook)
    store.check_keepable(data, workbook)  # before any attempt: its row could not be saved
    sha = protocol.require_lock(data, workbook)
    form = dict(data.forms["Protocol"])
    plan.parse_warmup(form.get("warmup_rule"))
    decoding.check_protocol(form)  # task and decoding rule: refused before any attempt
    subgroups = evaluation.parse_subgroups(form.get("subgroups"))
    corpus.parse_stratum_bounds(form.get("stratum_bounds"))
    repetitions = form.get("repetitions")
    if not isinstance(repetitions, int) or repetitions < 1:
        raise ProtocolError(
            f"Protocol repetitions {repetitions!r} is not a positive number",
            hint="lock a protocol with repetitions >= 1 (five full runs per variant are the rule)",
        )
    chosen = plan.select(data.tables["Variants"], options.series, options.variant_ids)
    if options.devices_here:
        check_devices(chosen)
    items = corpus.read_corpus(workbook.parent / str(form["corpus_path"]))
    corpus.check_subgroup_fields(items, subgroups, str(form["corpus_path"]))
    seeds = plan.seeds(form.get("seeds"))  # each repetition runs once per seed (R17)
    slots = plan.rotation(
        [str(v["variant_id"]) for v in chosen],
        repetitions,
        form.get("order_rotation") != "fixed",
        seeds,
    )
    known = known_attempts(data, records)
    current = [a for a in known if a.get("protocol_sha256") == sha]
    selected = {s.variant_id for s in slots}
    recorded = [a for a in current if a.get("variant_id") in selected]
    if recorded and not options.resume:
        raise UsageError(
            f"{workbook.name} already holds {len(recorded)} attempt(s) of these variants "
            "under the current protocol",
            hint=f"continue the campaign with `{options.resume_command(typed)}`"
            + ("" if options.devices_here else " and your --cluster address"),
        )
    fingerprint = corpus.fingerprint(items)
    _check_same_corpus(workbook, form, current, data, records, fingerprint)
    todo = plan.pending(slots, current, seeds[0] if seeds else None)
    return Campaign(
        workbook=workbook,
        protocol=form,
        protocol_sha256=sha,
        variants={str(v["variant_id"]): v for v in chosen},
        slots=slots,
        todo=todo,
        known=known,
        corpus_sha256=fingerprint,
        corpus_items=len(items),
        refused=refused,
    )


def _check_same_corpus(
    workbook: Path,
    form: dict[str, Any],
    current: list[dict[str, Any]],
    data: WorkbookData,
    records: list[dict[str, Any]],
    fingerprint: str,
) -> None:
    """Refuse to add attempts on a corpus other than the one this protocol's attempts ran on:
    their durations would be different work, silently mixed."""
    manifests = {m.get("manifest_id"): m for m in data.tables["Manifest"]}
    manifests.update(
        {e["manifest"].get("manifest_id"): e["manifest"] for e in records if e.get("manifest")}
    )
    recorded = {
        str(m.get("corpus_sha256"))
        for a in current
        if (m := manifests.get(a.get("manifest_id"))) and m.get("corpus_sha256")
    }
    if recorded and recorded != {fingerprint}:
        raise ProtocolError(
            f"{workbook.name}: the corpus {form.get('corpus_path')} changed since this "
            f"protocol's attempts ran on it (recorded {', '.join(sorted(r[:12] for r in recorded))}"
            f", now {fingerprint[:12]})",
            hint="restore the corpus the attempts ran on (its fingerprint is in the Manifest "
            "sheet), or amend the protocol for the new corpus: earlier attempts are then "
            "marked pre_amendment",
        )


def check_devices(variants: list[dict[str, Any]]) -> None:
    """UsageError unless this machine has the CUDA device the cuda variants declare (a
    cluster node runs it before each of its attempts)."""
    # An endpoint's card is the server's: this machine is only its client.
    here = [v for v in variants if engines.engine_of(v) != engines.OPENAI_HTTP]
    cuda = [str(v["variant_id"]) for v in here if v.get("device") == "cuda"]
    if not cuda:
        return
    import torch

    if not torch.cuda.is_available():
        raise UsageError(
            f"variant(s) {', '.join(cuda)} run on cuda, but torch sees no CUDA device here",
            hint="run them on a GPU machine, or select the cpu "
            "variants with --variant/--series (`iteralab env` shows this machine)",
        )
    props = torch.cuda.get_device_properties(torch.cuda.current_device())  # the one used
    wrong = device_mismatches(here, props.name, int(props.total_memory))
    if wrong:
        raise UsageError(
            "the GPU here is not the one declared (and priced): " + "; ".join(wrong),
            hint="run these variants on the rented card, or select others with "
            "--variant/--series; a wrong gpu_slug is corrected with `iteralab "
            "amend`",
        )


def reference_attempt(campaign: Campaign) -> dict[str, Any] | None:
    """The reference variant's first completed attempt with matching ids, under this protocol."""
    wanted = campaign.protocol.get("reference_variant")
    for row in campaign.known:
        if (
            row.get("protocol_sha256") == campaign.protocol_sha256
            and row.get("variant_id") == wanted
            and row.get("status") == "completed"
            and row.get("ids_match") == layout.YES
            and row.get("predictions_path")
        ):
            return {
                "variant_id": wanted,
                "attempt_id": row["attempt_id"],
                "predictions_path": row["predictions_path"],
                "predictions_sha256": row["predictions_sha256"],
            }
    return None


class Executor(Protocol):
    """Runs the pending slots: on this machine (:class:`LocalExecutor`) or on a Ray cluster
    (:class:`toolkit.cluster.executor.RayExecutor`); the bookkeeping stays in :class:`Books`."""

    def run(self, campaign: Campaign, books: Books) -> bool:
        """Run ``campaign.todo`` through ``books``; True when stopped early (Ctrl-C)."""


class Books:
    """The driver's bookkeeping, whoever executes the attempts: attempt ids, the journal's
    start lines, the records, the workbook's ingestion. The one writer of a run."""

    def __init__(
        self,
        campaign: Campaign,
        options: Options,
        display: Progress,
        result: Result,
        timeline: breakdown.Timeline | None = None,
    ) -> None:
        self.campaign, self.options, self.display, self.result = (
            campaign,
            options,
            display,
            result,
        )
        self.sequence = len({a.get("attempt_id") for a in campaign.known})
        self.tag = plan.run_tag()
        #: Several declared seeds: each id names its seed (R17).
        self.seeded = len(plan.seeds(campaign.protocol.get("seeds"))) > 1
        self.ingested_at = time.monotonic()
        self.timeline = timeline or breakdown.Timeline()
        self.saver = Saver(campaign.workbook, result, self.timeline)
        #: This run's id in ``NAME.runs.jsonl``; every start line it journals names it.
        self.run_id = run_log.new_run_id()
        #: The attempts this run journaled a start line for, in order.
        self.started: list[str] = []

    def spec(self, slot: plan.Slot, where: str | None = None) -> AttemptSpec:
        """The next attempt's spec, its start line journaled first."""
        campaign, options = self.campaign, self.options
        self.sequence += 1
        spec = AttemptSpec(
            workbook=str(campaign.workbook),
            attempt_id=plan.attempt_id(self.sequence, slot, self.tag, self.seeded),
            variant=campaign.variants[slot.variant_id],
            repetition=slot.repetition,
            order_position=slot.position,
            protocol=campaign.protocol,
            protocol_sha256=campaign.protocol_sha256,
            corpus_sha256=campaign.corpus_sha256,
            corpus_items=campaign.corpus_items,
            reference=reference_attempt(campaign),
            threads=options.threads,
            timeout_s=options.timeout_s,
            seed=slot.seed,
        )
        journal.append(
            campaign.workbook,
            journal.start(spec.attempt_id, json.loads(spec.to_json()), now_text(), self.run_id),
        )
        self.started.append(spec.attempt_id)
        self.display.attempt(spec.attempt_id + (f" on {where}" if where else ""))
        return spec

    def recorded(self, record: dict[str, Any], ingest: bool = True) -> None:
        """A finished attempt's record, already in the journal; ingested now unless the
        caller does it later (:meth:`ingest`)."""
        self.result.records.append(record)
        self.campaign.known.append(record["attempt"])
        self.display.finished(record)
        if ingest:
            self.ingest()

    def ingest(self) -> None:
        """Bring the workbook up to this run's records beside the next attempt when the last
        ingestion is old enough (:attr:`Options.ingest_every_s`); :func:`run` always does
        at the end."""
        if time.monotonic() - self.ingested_at >= self.options.ingest_every_s and self.saver.start(
            self.display
        ):
            self.ingested_at = time.monotonic()


def run(
    campaign: Campaign,
    options: Options,
    display: Progress,
    executor: Executor | None = None,
    timeline: breakdown.Timeline | None = None,
) -> Result:
    """Run the pending slots through ``executor`` (default :class:`LocalExecutor`: in order,
    on this machine); return what was recorded. ``timeline``: the run's clock, when its
    caller timed parts before (the pre-flight); a new one otherwise.

    Stops after an interrupted attempt (Ctrl-C). Ingests along the way
    (:attr:`Options.ingest_every_s`) and always at the end; a busy workbook (open
    in Excel) only delays ingestion: the records stay in the journal.
    """
    began = time.monotonic()
    result = Result(
        campaign.workbook,
        planned=len(campaign.slots),
        already=len(campaign.slots) - len(campaign.todo),
    )
    books = Books(campaign, options, display, result, timeline)
    run_log.started(campaign.workbook, books.run_id, pid=os.getpid())
    display.start(len(campaign.slots), result.already)
    previous = _stop_on_sigterm()
    local = executor is None or isinstance(executor, LocalExecutor)
    stopped: BaseException | None = None
    try:
        result.interrupted = (executor or LocalExecutor()).run(campaign, books)
    except KeyboardInterrupt:
        result.interrupted = True
    except BaseException as exc:  # e.g. a full disk: told once the saves below were tried
        stopped = exc
    books.timeline.enter("closing_s")
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)
    display.stop()
    try:
        books.timeline.enter("saves_s")  # the only saves a run waits for: at its end
        books.saver.wait()  # a background save's failure is raised here, in this thread
        _ingest(campaign.workbook, result, display)
        result.elapsed_s = time.monotonic() - began
        if local:
            result.time = breakdown.summary(books.timeline, result.records)
        run_log.ended(campaign.workbook, books.run_id, books.started, result.time)
    except Exception:
        if stopped is None:
            raise
        # The error that stopped the run is the one to tell (a second save on a full disk
        # fails the same way); the journal keeps what these saves would have added.
    if stopped is not None:
        raise stopped
    return result


class LocalExecutor:
    """Runs the pending slots on this machine, one after the other: in this process (process
    policy ``shared``) or each in a fresh worker process (forked by the fork server)."""

    def run(self, campaign: Campaign, books: Books) -> bool:
        """Run ``campaign.todo`` through ``books``; True when stopped early (Ctrl-C, or a
        broken CUDA context in a shared process)."""
        shared = (campaign.protocol.get("process_policy") or "fresh") == "shared"
        workers = Workers(campaign) if not shared and campaign.todo else None
        clock = books.timeline
        clock.launches = workers.launches if workers is not None else None
        try:
            for number, slot in enumerate(campaign.todo, 1):
                clock.enter("bookkeeping_s")
                spec = books.spec(slot)
                clock.enter("attempts_s")
                if workers is None:
                    record, stop = _in_process(spec, books.display)
                else:
                    more = number < len(campaign.todo)
                    record, stop = _in_worker(spec, books.display, workers, next_ahead=more)
                clock.enter("bookkeeping_s")
                # After the last attempt the final ingestion follows at once.
                books.recorded(record, ingest=number < len(campaign.todo))
                if stop:
                    # In a shared process only a broken CUDA context stops after a failed row.
                    books.result.cuda_broken = (
                        workers is None and record["attempt"]["status"] == "failed"
                    )
                    return True
            return False
        finally:
            if workers is not None:
                workers.close()


def _stop_on_sigterm() -> Callable[[int, FrameType | None], Any] | int | None:
    """Treat SIGTERM like Ctrl-C, so a stopped campaign still records its running attempt."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt("SIGTERM")

    return signal.signal(signal.SIGTERM, handler)


class Saver:
    """Ingests this run's records into the workbook in a background thread, beside the next
    attempt: the journal is the durable record meanwhile (a save is atomic, so a kill
    mid-save leaves the workbook as it was and the journal whole). Rows only: the derived
    sheets are refreshed once, at the end. At the run's priority: lowered to nice 19 on a
    busy machine, its saves crawled (95 s in all for a quick demo) and the run's end waited
    38 s for the last one."""

    def __init__(self, workbook: Path, result: Result, timeline: breakdown.Timeline) -> None:
        self.workbook, self.result, self.timeline = workbook, result, timeline
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self, display: Progress) -> bool:
        """Start a save of the records so far, unless one still runs; False then."""
        if self.thread is not None and self.thread.is_alive():
            return False
        self.wait()
        records = list(self.result.records)
        self.thread = threading.Thread(
            target=self._save, args=(records, display), name="iteralab-ingest", daemon=True
        )
        self.thread.start()
        return True

    def _save(self, records: list[dict[str, Any]], display: Progress) -> None:
        began = time.monotonic()
        try:
            _ingest(self.workbook, self.result, display, records, refresh=False)
        except BaseException as exc:  # raised again in the driver's thread (wait)
            self.error = exc
        self.timeline.overlapped(time.monotonic() - began)

    def wait(self) -> None:
        """Wait for the running save; raise what it raised."""
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        error, self.error = self.error, None
        if error is not None:
            raise error


def _ingest(
    workbook: Path,
    result: Result,
    display: Progress,
    records: list[dict[str, Any]] | None = None,
    refresh: bool = True,
) -> None:
    try:
        # `run` leaves the derived sheets current (refreshed at its end). Given records: this
        # run's (the journal is read once, at the end, while no worker appends to it).
        editing.ingest(workbook, records, refresh_derived=refresh)
        result.ingest_pending = False
    except WorkbookBusyError as exc:
        if not result.ingest_pending:
            display.echo(
                f"warning: {exc.message}; the attempts wait in "
                f"{journal.journal_path(workbook).name}"
            )
        result.ingest_pending = True


class ProcessExitRefused(Exception):
    """The attempt's code called ``os._exit`` in the campaign's own process."""


def _in_process(spec: AttemptSpec, display: Progress) -> tuple[dict[str, Any], bool]:
    """Run the attempt in this process (process policy ``shared``). What the attempt's code
    prints goes to stderr, never among the campaign's lines; its ``os._exit`` fails the
    attempt instead of ending the campaign without a row."""
    from toolkit.runner.attempt import InterruptGuard, run_attempt  # torch, in this process

    def show(event: dict[str, Any]) -> None:
        with original():
            _show(event, display)

    with InterruptGuard() as guard, worker.stdout_to_stderr() as original, _no_process_exit():
        with _time_limit(spec, guard):
            record = run_attempt(spec, show, guard)
        journal.append(spec.workbook, record)
    return record, guard.requested or record["attempt"]["status"] == "interrupted"


@contextmanager
def _time_limit(spec: AttemptSpec, guard: InterruptGuard) -> Iterator[None]:
    """Stop an attempt blocked inside its own code (a ``predict()`` that never returns
    checks no deadline) :data:`SHARED_GRACE_S` past its timeout: an alarm raises the
    attempt's timeout error in this process, while its phases run (a process of its own
    would be killed from outside instead)."""
    from toolkit.runner.tasks.failures import AttemptTimeout  # torch, imported already

    limit = spec.timeout_s + SHARED_GRACE_S if spec.timeout_s else None

    def expired() -> None:
        if guard.armed:  # the phases still run: after them the attempt only records itself
            raise AttemptTimeout(
                f"still running {limit:g} s after it started, past the attempt timeout of "
                f"{spec.timeout_s:g} s (blocked inside the attempt's code): stopped by the "
                "campaign"
            )

    with worker.alarm(limit, expired):
        yield


@contextmanager
def _no_process_exit() -> Iterator[None]:
    """Within the block, ``os._exit`` in this process raises :class:`ProcessExitRefused`
    (a failed attempt, said in its row) instead of ending the campaign at once with no row;
    in a child process the code forks it exits as asked."""
    real_exit, campaign_pid = os._exit, os.getpid()

    def refuse(status: int) -> NoReturn:
        if os.getpid() != campaign_pid:
            real_exit(status)
        raise ProcessExitRefused(
            f"os._exit({status}) was called in the campaign's own process (process policy "
            "shared); the attempt's code may not end the campaign"
        )

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = real_exit


def _show(event: dict[str, Any], display: Progress) -> None:
    if event.get("event") == "phase":
        display.phase(str(event.get("phase")))
    elif event.get("event") == "items":
        display.items(int(event["done"]), int(event["total"]))


def _reader(stream: IO[str], events: queue.Queue[dict[str, Any] | None]) -> None:
    def skipped(note: str) -> None:
        events.put({"event": "note", "text": note})

    for event in worker.read_events(stream, skipped):
        events.put(event)
    events.put(None)


def fork_refusal(campaign: Campaign) -> str | None:
    """Why the campaign's workers are not forked by a fork server; None when they are:
    every campaign of fresh processes, on the CPU or CUDA alike (the server never
    initialises CUDA: :mod:`toolkit.runner.driver.forkserver`), where the platform allows."""
    if (campaign.protocol.get("process_policy") or "fresh") == "shared":
        return "process policy shared: the attempts run in the campaign's own process"
    return forkserver.unavailable()


def forks(campaign: Campaign) -> bool:
    """Whether the campaign's workers are forked by a fork server (:func:`fork_refusal`)."""
    return fork_refusal(campaign) is None


def model_paths(campaign: Campaign) -> list[str]:
    """The campaign's model paths, each once: what the fork server preloads."""
    return sorted({str(v.get("model_path")) for v in campaign.variants.values()})


class Workers:
    """Starts one fresh worker process per attempt: forked from the run's fork server
    (:mod:`toolkit.runner.driver.forkserver`), or ``python -m toolkit.runner.driver.worker`` where
    there is none. :meth:`ahead` starts the next attempt's worker while the previous one is
    recorded: it waits for its spec on stdin, a process of its own that no attempt ran in."""

    def __init__(self, campaign: Campaign) -> None:
        self.env = forkserver.worker_env()
        self.server: forkserver.ForkServer | None = forkserver.take(self.env)
        #: The next attempt's worker and its stderr file, started ahead (:meth:`ahead`).
        self.spare: tuple[forkserver.Worker, IO[str]] | None = None
        #: How the workers were started: the run's breakdown says it.
        self.launches = forkserver.Launches()
        refusal = fork_refusal(campaign)
        if refusal is None and self.server is not None and self.server.failure is not None:
            # The pre-flight's fork failed: another server would fail the same way.
            refusal, self.server = self.server.failure, None
        if refusal is not None:
            self.launches.spawning(refusal)
            self.close()
            return
        try:
            self.server = self.server or forkserver.ForkServer(self.env)
            self.server.preload(campaign.workbook.parent, model_paths(campaign))
            self.server.ready()  # its imports are the run's start-up, not the first attempt's
        except forkserver.ForkServerError as exc:
            self.launches.spawning(str(exc))
            self.close()  # each worker then imports everything itself

    def start(self) -> tuple[forkserver.Worker, IO[str]]:
        """The next attempt's worker process (``subprocess.Popen`` or its forked equivalent)
        and the file its stderr goes to: the one started :meth:`ahead`, or a new one."""
        if self.spare is not None:
            spare, self.spare = self.spare, None
            return spare
        stderr = tempfile.TemporaryFile("w+", encoding="utf-8")
        try:
            return self._launch(stderr), stderr
        except BaseException:
            stderr.close()
            raise

    def ahead(self) -> None:
        """Start the next attempt's worker now (it waits for its spec), unless one waits."""
        if self.spare is None:
            self.spare = self.start()

    def _launch(self, stderr: IO[str]) -> forkserver.Worker:
        proc = forkserver.launch(self.server, self.env, stderr, self.launches)
        if not isinstance(proc, forkserver.ForkedWorker):
            self.server = None  # none, or it failed and was closed: the others spawn too
        return proc

    def close(self) -> None:
        """Stop a worker started ahead that no attempt needed, then the server."""
        if self.spare is not None:
            proc, stderr = self.spare
            self.spare = None
            proc.kill()
            assert proc.stdin is not None and proc.stdout is not None  # piped, as launched
            proc.stdin.close()
            proc.stdout.close()
            proc.wait()
            stderr.close()
        if self.server is not None:
            self.server.close()
            self.server = None


def _in_worker(
    spec: AttemptSpec, display: Progress, workers: Workers, next_ahead: bool = False
) -> tuple[dict[str, Any], bool]:
    """Run the attempt in a fresh worker process; write its row if the worker cannot. With
    ``next_ahead``, the next attempt's worker starts as soon as this one has sent its record."""
    started_at = now_text()
    proc, stderr = workers.start()
    with stderr:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(spec.to_json())
        proc.stdin.close()
        events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, events), daemon=True).start()
        record, items_done, phase = None, 0, None
        interrupted = timed_out = False
        kill_at = (time.monotonic() + spec.timeout_s + KILL_GRACE_S) if spec.timeout_s else None
        stream_open = True
        while stream_open or proc.poll() is None:
            try:
                # Once its output has closed the worker is exiting: poll for its code often
                # rather than sleeping half a second per attempt.
                event = events.get(timeout=0.5 if stream_open else 0.02)
                if event is None:
                    stream_open = False
                elif (warning := _unusable(event, spec)) is not None:
                    display.echo(f"warning: {spec.attempt_id}: {warning}")
                elif event.get("event") == "record":
                    record = event["record"]
                    if (
                        next_ahead
                        and not interrupted
                        and record["attempt"]["status"] != ("interrupted")
                    ):
                        workers.ahead()  # while this one exits and its attempt is recorded
                else:
                    if event.get("event") == "phase":
                        phase = str(event.get("phase"))
                    elif event.get("event") == "items" and event.get("phase") == "measured":
                        items_done = int(event["done"])
                    _show(event, display)
            except queue.Empty:
                pass
            except KeyboardInterrupt:
                if interrupted:  # a second Ctrl-C: stop waiting
                    proc.kill()
                else:
                    interrupted = True
                    _signal(proc, signal.SIGINT)
                    kill_at = time.monotonic() + INTERRUPT_WAIT_S
            if kill_at is not None and time.monotonic() > kill_at and proc.poll() is None:
                timed_out = not interrupted
                proc.kill()
                kill_at = None
        code = proc.wait()
        proc.stdout.close()
        if record is None:
            record = _from_journal(spec)
        if record is None:
            from toolkit.runner.attempt import fallback_record  # torch: a worker failed

            stderr.seek(0)
            tail = " | ".join(stderr.read().strip().splitlines()[-3:])[-600:]
            status, why = _why_lost(spec, interrupted, timed_out, code)
            where = (
                f"after {items_done} of {spec.corpus_items} items (its last progress report)"
                if phase == "measured"
                else f"during {phase or 'start-up'}"
            )
            note = f"{why} {where}" + (f"; stderr: {tail}" if tail else "")
            record = fallback_record(spec, status, items_done, note, phase, started_at)
            journal.append(spec.workbook, record)
    stop = interrupted or record["attempt"]["status"] == "interrupted" or code == 130
    return record, stop


def _why_lost(spec: AttemptSpec, interrupted: bool, timed_out: bool, code: int) -> tuple[str, str]:
    """The status of an attempt whose worker ended without its record, and why it ended."""
    if interrupted:
        return "interrupted", "interrupted by Ctrl-C"
    if timed_out:
        return (
            "failed",
            f"killed after the timeout of {spec.timeout_s:g} s + {KILL_GRACE_S:g} s grace",
        )
    return "failed", f"worker exited with {_exit_text(code)}"


def _unusable(event: dict[str, Any], spec: AttemptSpec) -> str | None:
    """Why the campaign skips ``event`` of ``spec``'s worker (a note of :func:`_reader`, or
    a record of another attempt); None when it is used."""
    if event.get("event") == "note":  # made by _reader, never sent
        return str(event["text"])
    if event.get("event") != "record":
        return None
    said = event["record"]["attempt"].get("attempt_id")
    if said != spec.attempt_id:
        return f"skipped a record event of another attempt ({said!r})"
    return None


def _signal(proc: forkserver.Worker, sig: int) -> None:
    try:
        os.kill(proc.pid, sig)
    except ProcessLookupError:
        pass


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


def _from_journal(spec: AttemptSpec) -> dict[str, Any] | None:
    for entry in reversed(journal.read(spec.workbook)):
        if entry["attempt"].get("attempt_id") == spec.attempt_id:
            return entry
    return None
