"""``iteralab run --cluster``: each attempt one Ray task on a node of its variant's label.

The driver (this process, on a node of the cluster, beside the workbook) keeps every
write: attempt ids, the journal's start lines and records, the predictions files
and the workbook (:class:`toolkit.runner.driver.campaign.Books`). Each attempt is one task
asking for one unit of its label's resource, so a node runs one attempt at a time;
the task runs in a fresh worker process (``max_calls=1``, like the local fresh
policy) and is never retried (``max_retries=0``, ``retry_exceptions=False``, Ray's
out-of-memory retries at 0): a failure stays a failed row (R13).

Within a label the slots run one after the other in the campaign's rotated order;
different labels run at the same time. The corpus is put in the object store once
and its fingerprint checked on the node; the predictions come back as bytes whose
SHA-256 the driver checks before writing them.

What becomes of an attempt that returns no record:

- the node was lost (``NodeDiedError``): an ``interrupted`` row with the reason; the
  label's other slots wait for ``--resume`` unless another node offers it;
- its worker process died on a node still there (``WorkerCrashedError``): a
  ``failed`` row, as a local worker killed mid-attempt;
- the node refused it (other toolkit version, other corpus, not the declared GPU),
  or Ray could not run it: an ``interrupted`` row with the reason, and the label
  stops (the next attempt there would meet the same problem);
- Ctrl-C: every running task is cancelled (each records its interrupted row on its
  node, or the driver writes one after a second Ctrl-C), and the run stops.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import ray

from toolkit import __version__
from toolkit.cluster import bundle, labels, task
from toolkit.cluster.workers import NODE_ENVIRONMENT
from toolkit.errors import ToolkitError, UsageError
from toolkit.evidence import journal
from toolkit.evidence.merge import inside_folder
from toolkit.plumbing.atomic import write_bytes
from toolkit.plumbing.clock import now_text
from toolkit.runner.driver.campaign import KILL_GRACE_S, Books, Campaign, reference_attempt

#: How long running attempts get to record themselves after Ctrl-C.
INTERRUPT_WAIT_S = 60.0
#: How often the driver looks at its running tasks (timeouts, Ctrl-C).
POLL_S = 0.5

_attempt_task = ray.remote(max_calls=1, max_retries=0, retry_exceptions=False, num_cpus=0)(
    task.run_on_node
)


@dataclass
class Running:
    """An attempt in flight: its label, spec, when it started, when it is killed."""

    label: str
    spec: Any
    started_at: str
    kill_at: float | None


@dataclass
class Timing:
    """The driver's own seconds per attempt id (benchmarks/cluster.py reads them): preparing
    and submitting it, then recording what came back (hash check, predictions file, journal,
    ingestion), outside any node's work."""

    submit_s: dict[str, float] = field(default_factory=dict)
    record_s: dict[str, float] = field(default_factory=dict)


def connect(address: str) -> None:
    """Join the cluster at ``address`` (``HOST:PORT`` or ``auto``) as its driver."""
    os.environ.update(NODE_ENVIRONMENT)  # read by the driver's core worker at init
    if ray.is_initialized():
        return
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level=logging.WARNING,
            namespace="iteralab",
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ToolkitError(
            f"cannot join the Ray cluster at {address}: {exc}",
            hint="start it with `iteralab worker start --head` on this machine "
            "(the driver runs on a node of the cluster), then pass its "
            "HOST:PORT, or `auto` when this machine is the head",
        ) from exc


def disconnect() -> None:
    """Leave the cluster (the nodes run on)."""
    ray.shutdown()


def offered_now() -> dict[str, int]:
    """The labels the alive nodes offer now (label -> node count)."""
    return labels.offered(n["Resources"] for n in ray.nodes() if n.get("Alive"))


class RayExecutor:
    """Runs a prepared campaign's pending slots on the cluster the driver joined."""

    def __init__(self, wait_s: float | None = None) -> None:
        self.wait_s = wait_s
        self.timing = Timing()
        self.offered: dict[str, int] = {}

    def placement(self, campaign: Campaign) -> dict[str, str]:
        """Each pending variant's label, before the cluster is asked anything; UsageError for
        a campaign a cluster cannot run (shared process policy, absolute corpus path, a
        variant without a label)."""
        policy = campaign.protocol.get("process_policy")
        if policy == "shared":
            raise UsageError(
                "the protocol's process policy is shared, but on a cluster each "
                "attempt runs in a fresh Ray worker process",
                hint="amend the protocol to process_policy fresh, or run this "
                "campaign on one machine without --cluster",
            )
        corpus_path = str(campaign.protocol["corpus_path"])
        if Path(corpus_path).expanduser().is_absolute():
            raise UsageError(
                f"Protocol corpus_path {corpus_path} is absolute: a cluster run "
                "sends the corpus beside the workbook to the nodes",
                hint="put the corpus beside the workbook and name it relative "
                "to it (amend the protocol)",
            )
        wanted = {slot.variant_id for slot in campaign.todo}
        return {vid: labels.variant_label(campaign.variants[vid]) for vid in sorted(wanted)}

    def check(self, campaign: Campaign) -> dict[str, str]:
        """Before anything starts: each pending variant's label, offered by a node (waiting
        up to ``wait_s`` for it); UsageError otherwise, listing the labels the cluster has."""
        where = self.placement(campaign)
        # The driver's own torch import (specs, the rows it writes) happens here, before the
        # first attempt, not inside the first attempt's bookkeeping.
        from toolkit.runner import attempt  # noqa: F401

        deadline = time.monotonic() + (self.wait_s or 0)
        while True:
            self.offered = offered_now()
            absent = labels.missing(where.values(), self.offered)
            if not absent or time.monotonic() >= deadline:
                break
            time.sleep(1.0)
        if absent:
            waiting = f" after waiting {self.wait_s:g} s" if self.wait_s else ""
            users = ", ".join(v for v, lab in where.items() if lab in absent)
            raise UsageError(
                f"no node of the cluster offers label {', '.join(absent)}{waiting} (needed by "
                f"{users}); the cluster offers: {labels.described(self.offered)}",
                hint="start a node with `iteralab worker start --address HEAD:PORT --label "
                f"{absent[0]}`, or wait for one with --wait SECONDS",
            )
        return where

    def run(self, campaign: Campaign, books: Books) -> bool:
        """Run the pending slots; True when Ctrl-C stopped the run."""
        where = self.check(campaign) if not self.offered else self.placement(campaign)
        dispatch = _Dispatch(self, campaign, books, where)
        try:
            dispatch.until_done()
        except KeyboardInterrupt:
            self._interrupt(campaign, books, dispatch.running)
            return True
        return False

    def _interrupt(self, campaign: Campaign, books: Books, running: dict[Any, Running]) -> None:
        """Ctrl-C: cancel the running tasks (a KeyboardInterrupt on their node, which records
        the attempt interrupted); a second Ctrl-C, or no answer in time, and the driver writes
        their rows."""
        for ref in running:
            ray.cancel(ref)
        deadline = time.monotonic() + INTERRUPT_WAIT_S
        try:
            while running and time.monotonic() < deadline:
                ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    entry = running.pop(ref)
                    outcome = self._outcome(ref, entry, cancelled="interrupted by Ctrl-C")
                    record = self._record(campaign, entry, outcome)
                    journal.append(campaign.workbook, record)
                    books.recorded(record, ingest=False)
        except KeyboardInterrupt:
            pass
        for ref, entry in running.items():
            ray.cancel(ref, force=True)
            outcome = _Outcome(
                None,
                "interrupted",
                "interrupted by Ctrl-C; the Ray task was "
                "cancelled before it recorded the attempt; items completed not "
                "known (0 here is a lower bound)",
            )
            record = self._record(campaign, entry, outcome)
            journal.append(campaign.workbook, record)
            books.recorded(record, ingest=False)
        running.clear()

    def _outcome(self, ref: Any, entry: Running, cancelled: str | None = None) -> _Outcome:
        """What a finished task gave: its payload, or the status and reason of its loss."""
        try:
            payload = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            if cancelled:
                return _Outcome(
                    None,
                    "interrupted",
                    f"{cancelled}; the Ray task was "
                    "cancelled before it recorded the attempt; items completed "
                    "not known (0 here is a lower bound)",
                )
            return _Outcome(
                None,
                "failed",
                f"killed after the timeout of "
                f"{entry.spec.timeout_s:g} s + {KILL_GRACE_S:g} s grace",
            )
        except ray.exceptions.NodeDiedError as exc:
            alone = self.offered.get(entry.label, 0) <= 1
            return _Outcome(
                None,
                "interrupted",
                f"interrupted: the Ray node running it was "
                f"lost ({_first_line(exc)}); items completed not known (0 here is "
                "a lower bound); its slot runs again on --resume",
                stop_label="its node was lost" if alone else None,
            )
        except ray.exceptions.WorkerCrashedError as exc:
            return _Outcome(
                None,
                "failed",
                f"its Ray worker process died on a node still in "
                f"the cluster ({_first_line(exc)}); items completed not known "
                "(0 here is a lower bound)",
            )
        except ray.exceptions.RayError as exc:
            return _Outcome(
                None,
                "interrupted",
                f"interrupted: Ray could not run it "
                f"({type(exc).__name__}: {_first_line(exc)}); its slot runs again "
                "on --resume",
                stop_label="Ray could not run an attempt",
            )
        if "refused" in payload:
            return _Outcome(
                None,
                "interrupted",
                f"interrupted: node {_where(payload)} refused "
                f"it: {payload['refused']}; its slot runs again on --resume",
                stop_label=f"a node refused it ({payload['refused']})",
            )
        return _Outcome(payload, payload["record"]["attempt"]["status"], None)

    def _record(self, campaign: Campaign, entry: Running, outcome: _Outcome) -> dict[str, Any]:
        """The journal record of an attempt: the node's, its predictions written here after
        their hash is checked; or one the driver writes for an attempt that left none."""
        from toolkit.runner.attempt import fallback_record  # torch, on the driver's side

        payload = outcome.payload
        if payload is None:
            assert outcome.note is not None
            note = (
                f"{outcome.note}; label {entry.label}; its Manifest row describes the "
                "driver's machine: the node sent none"
            )
            return fallback_record(entry.spec, outcome.status, 0, note, None, entry.started_at)
        record: dict[str, Any] = payload["record"]
        row = record["attempt"]
        data: bytes | None = payload.get("predictions")
        if data is not None and not inside_folder(str(row.get("predictions_path"))):
            note = (
                f"interrupted: the node named the predictions path "
                f"{row.get('predictions_path')!r}, outside the campaign folder: nothing "
                "written; its slot runs again on --resume"
            )
            return fallback_record(entry.spec, "interrupted", 0, note, None, entry.started_at)
        if data is not None:
            sha = hashlib.sha256(data).hexdigest()
            if sha != row.get("predictions_sha256") or sha != payload["predictions_sha256"]:
                note = (
                    f"interrupted: the predictions came back with SHA-256 {sha[:12]}, the "
                    f"node recorded {str(row.get('predictions_sha256'))[:12]}: nothing "
                    "written; its slot runs again on --resume"
                )
                return fallback_record(entry.spec, "interrupted", 0, note, None, entry.started_at)
            target = campaign.workbook.parent / PurePosixPath(str(row["predictions_path"]))
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(target, data)
        where = (
            f"ran on Ray node {_where(payload)} (label {entry.label}) through "
            "`iteralab run --cluster`"
        )
        row["notes"] = "; ".join(n for n in (row.get("notes"), where) if n)
        return record


class _Dispatch:
    """One run's queues, one per label, and the tasks in flight: a label runs its slots one
    after the other; labels held for the reference variant start after its first attempt."""

    def __init__(
        self, executor: RayExecutor, campaign: Campaign, books: Books, where: dict[str, str]
    ) -> None:
        self.executor, self.campaign, self.books, self.where = executor, campaign, books, where
        self.base = campaign.workbook.parent
        self.corpus_ref = ray.put((self.base / str(campaign.protocol["corpus_path"])).read_bytes())
        self.folders = {
            name: ray.put(bundle.pack(path, name))
            for name, path in bundle.local_folders(campaign.variants.values(), self.base).items()
        }
        self.queues: dict[str, deque[Any]] = {}
        for slot in campaign.todo:
            self.queues.setdefault(where[slot.variant_id], deque()).append(slot)
        self.running: dict[Any, Running] = {}
        self.reference = str(campaign.protocol.get("reference_variant"))
        self.held = _held_for_reference(campaign, where, self.reference)
        if self.held:
            books.display.echo(
                f"label(s) {', '.join(self.held)} wait for the first attempt of the reference "
                f"variant {self.reference} (label {where[self.reference]}): their tolerance is "
                "checked against its predictions"
            )

    def until_done(self) -> None:
        """Start each label that is not held, then settle what comes back until nothing
        runs or waits; a task past its time is cancelled (its node records it)."""
        for label in list(self.queues):
            if label not in self.held:
                self.submit(label)
        while self.running or self.held:
            if not self.running:
                self.release()
            ready, _ = ray.wait(list(self.running), num_returns=1, timeout=POLL_S)
            for ref in ready:
                entry = self.running.pop(ref)
                self.settle(entry, self.executor._outcome(ref, entry))
            now = time.monotonic()
            for ref, entry in list(self.running.items()):
                if entry.kill_at is not None and now > entry.kill_at:
                    ray.cancel(ref, force=True)
                    entry.kill_at = None

    def release(self) -> None:
        """Start the labels held for the reference variant."""
        for label in self.held:
            if self.queues.get(label):
                self.submit(label)
        self.held.clear()

    def submit(self, label: str) -> None:
        """Start the next slot of ``label`` as one Ray task asking for one unit of it."""
        began = time.perf_counter()
        slot = self.queues[label].popleft()
        spec = self.books.spec(slot, where=label)
        variant = spec.variant
        needs = {
            n: ref
            for n, ref in self.folders.items()
            if n in (variant.get("model_path"), variant.get("head_path"))
        }
        reference = None
        if spec.reference:
            reference = (self.base / spec.reference["predictions_path"]).read_bytes()
        ref = _attempt_task.options(
            resources={labels.resource(label): 1},
            num_gpus=1 if variant.get("device") == "cuda" else 0,
            name=f"iteralab {spec.attempt_id}",
        ).remote(spec.to_json(), self.corpus_ref, needs, reference, __version__)
        kill_at = time.monotonic() + spec.timeout_s + KILL_GRACE_S if spec.timeout_s else None
        self.running[ref] = Running(label, spec, now_text(), kill_at)
        self.executor.timing.submit_s[spec.attempt_id] = time.perf_counter() - began

    def settle(self, entry: Running, outcome: _Outcome) -> None:
        """Record what came back, start the label's next slot (or stop the label), release
        the held labels once the reference ran, then ingest."""
        began = time.perf_counter()
        record = self.executor._record(self.campaign, entry, outcome)
        journal.append(self.campaign.workbook, record)
        self.books.recorded(record, ingest=False)
        spent = time.perf_counter() - began
        if outcome.stop_label:
            left = len(self.queues.get(entry.label, ()))
            if left:
                self.books.display.echo(
                    f"label {entry.label}: {outcome.stop_label}; its "
                    f"{left} other attempt(s) wait for --resume"
                )
            self.queues[entry.label] = deque()
        elif self.queues.get(entry.label):
            self.submit(entry.label)
        if self.held and (
            entry.spec.variant.get("variant_id") == self.reference
            or outcome.stop_label
            and entry.label == self.where[self.reference]
        ):
            self.release()
        began = time.perf_counter()
        self.books.ingest()  # after the next attempt started: the node does not wait for it
        spent += time.perf_counter() - began
        self.executor.timing.record_s[entry.spec.attempt_id] = spent


def _held_for_reference(campaign: Campaign, where: dict[str, str], reference: str) -> list[str]:
    """The labels that wait for the reference variant's first attempt: all but its own, when
    it runs in this campaign and has no completed attempt yet (else their attempts would be
    'not evaluated', their tolerance unchecked, R16)."""
    if reference not in where or reference_attempt(campaign) is not None:
        return []
    return sorted(set(where.values()) - {where[reference]})


@dataclass
class _Outcome:
    """A task's end: its payload, or the status and note of a row the driver writes."""

    payload: dict[str, Any] | None
    status: str
    note: str | None
    stop_label: str | None = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _where(payload: dict[str, Any]) -> str:
    node = payload.get("node") or {}
    return f"{str(node.get('node_id'))[:12]} on host {node.get('host')}"
