"""Protocol task ``serving``: one attempt is one load on one endpoint, to a journal record.

The variant's ``model_path`` names an OpenAI-compatible endpoint (``URL#MODEL``, engine
``openai-http``); nothing else about the server is assumed. The phases are every kind's
(:class:`toolkit.runner.tasks.phases.AttemptRun`), timed on this host (the client's):

- load: the Protocol's scenario read, the endpoint asked who it is
  (:func:`toolkit.serving.identify`); an endpoint that does not answer fails the attempt here
  with its reason (one that lists other models is noted, and its requests say the rest);
- warm-up: the Protocol's ``warmup_requests``, one at a time, recorded, never measured;
- measured: the variant's ``request_rate`` (Poisson, open loop, or a fixed concurrency) for
  the declared count or duration, to the Protocol's ``api`` route
  (:func:`toolkit.serving.loop.run_loop`); a completed attempt's ``measured_s`` is the
  requests file's window (first measured send to last measured end), the hours a cost per
  token divides.

Every request is a line of the attempt's requests file (its predictions file, synced line by
line, so Ctrl-C or SIGKILL keeps each request that ended); its SHA-256 is recorded as a
predictions file's, and every figure is computed back from it
(:func:`toolkit.serving.metrics.compute`). A failed request (HTTP error, stream cut,
unreachable, interrupted) is counted with its reason, never dropped.

Quality: chrF of the first completed output per prompt against the prompts' ``reference``
field, and agreement with the reference variant's outputs by prompt id, word by word (the
client sees text, not the server's token ids) or exact, against ``1 - tolerance``. The
corpus is accepted when every measured request completed and the quality passes; whether
the latency targets are met is ``targets_met``, read by the Summary's highest rate.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.errors import EndpointError, ToolkitError
from toolkit.evidence import corpus, scenario
from toolkit.plumbing import engines
from toolkit.plumbing.digests import file_sha256
from toolkit.runner.instruments import environment
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks import agreement, columns
from toolkit.runner.tasks.cells import Put, file_cells, seconds, verdict_cells
from toolkit.runner.tasks.failures import error_text
from toolkit.runner.tasks.manifest import manifest_content, manifest_row
from toolkit.runner.tasks.phases import AttemptRun
from toolkit.runner.tasks.process_state import Emit
from toolkit.serving import Arrivals, Identity, compute, identify, read_records
from toolkit.serving.bench import base_url
from toolkit.serving.client import Request
from toolkit.serving.loop import Endpoint, Prompt, run_loop
from toolkit.serving.metrics import Metrics
from toolkit.serving.records import MEASURED, RecordWriter

#: The Protocol task this kind runs.
NAME = "serving"
#: Seconds a request may wait for its next byte before it fails.
READ_TIMEOUT_S = 120.0
#: The measured columns of every kind a client cannot see: the server's own work.
SERVER_SIDE = {
    "forward_device_s": "serving attempt: the server's device span is not visible to its client",
    "mem_allocated_peak_bytes": "serving attempt: the server's memory is not visible to its client",
    "mem_reserved_peak_bytes": "serving attempt: the server's memory is not visible to its client",
    "host_rss_peak_bytes": "serving attempt: the server's memory is not visible to its client",
    "padded_tokens": "serving attempt: the server batches as it sees fit",
    "padding_efficiency": "serving attempt: the server batches as it sees fit",
    "truncated": "serving attempt: the server truncates as it sees fit",
    "real_flops": "serving attempt: the server's work is not visible to its client",
    "padded_flops": "serving attempt: the server's work is not visible to its client",
    "real_flop_rate": "serving attempt: the server's work is not visible to its client",
    "padded_flop_rate": "serving attempt: the server's work is not visible to its client",
    "utilisation": "serving attempt: the server's work is not visible to its client",
    "padding_waste": "serving attempt: the server batches as it sees fit",
    "probe_peak_flops": "serving attempt: no peak probe (this host is the client, not the server)",
    "probe_fp32_peak_flops": "serving attempt: no peak probe (this host is the client)",
    "probe_s": "serving attempt: no peak probe (this host is the client)",
    "probe_others_share": "serving attempt: no peak probe (this host is the client)",
}
#: The Metrics figures recorded as they are, by Attempts column.
FIGURES = (
    "ttft_p50_ms",
    "ttft_p90_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "itl_p99_ms",
    "output_tokens_per_s",
    "goodput_rps",
    "client_lag_p99_ms",
)


def run(spec: AttemptSpec, emit: Emit, guard: Any) -> dict[str, Any]:
    """Run one serving attempt (``guard`` its InterruptGuard); return its journal record.
    A failure is a row."""
    attempt = Serving(spec, emit, guard)
    attempt.run_steps()
    return attempt.record()


class Serving:
    """One serving attempt under way: its phases (:meth:`run_steps`, inside AttemptRun's
    block), then the figures, the quality, the Manifest and the row (:meth:`record`)."""

    def __init__(self, spec: AttemptSpec, emit: Emit, guard: Any) -> None:
        self.spec, self.variant, self.protocol = spec, spec.variant, spec.protocol
        self.run = AttemptRun(spec, emit, guard, device="cpu")
        self.scenario: scenario.Scenario | None = None
        self.endpoint: Endpoint | None = None
        self.identity: Identity | None = None
        self.prompts: list[corpus.Item] = []
        self.path: Path = spec.predictions_file
        self.writer: RecordWriter | None = None
        self.notes: list[str] = []

    # ---- the timed phases

    def run_steps(self) -> None:
        """Load, the warm-up requests (their own phase, when declared) and the measured
        load, inside AttemptRun's phases block with the requests file open."""
        run = self.run
        with run.phases(), _RequestsFile(self):
            with run.timed("load"):
                self.load()
            run.phase = "warm-up"
            assert self.scenario is not None
            if self.scenario.warmup:
                with run.timed("warm-up"):
                    self.send(measured=False)
            with run.others_meter(), run.timed("measured"):
                self.send(measured=True)

    def load(self) -> None:
        """Read the scenario and the endpoint; ask it who it is; refuse one that does not
        answer or does not serve the model."""
        self.scenario = scenario.read_scenario(self.protocol)
        url, model = scenario.split_endpoint(self.variant.get("model_path"))
        url = base_url(url)
        self.identity = identify(url)
        reason = self.identity.reason
        if reason is not None and reason.startswith("endpoint unreachable"):
            raise EndpointError(reason, hint="start the server, or correct model_path")
        if reason is not None:  # it answered, but lists no model: its requests will tell
            self.notes.append(reason)
        listed = self.identity.models or []
        if model is None:
            if len(listed) != 1:
                raise EndpointError(
                    f"{url} serves {len(listed)} models ({', '.join(listed)}): name one",
                    hint="write model_path as URL#MODEL",
                )
            model = listed[0]
        elif self.identity.lists(model) is False:
            self.notes.append(
                f"model {model!r} is not among the endpoint's models ({', '.join(listed)})"
            )
        request = Request(model, self.scenario.api, self.scenario.max_new_tokens)
        timeout = min(READ_TIMEOUT_S, self.spec.timeout_s or READ_TIMEOUT_S)
        self.endpoint = Endpoint(url, request, timeout)
        self.prompts = corpus.read_corpus(self.run.corpus_path)

    def send(self, measured: bool) -> None:
        """The warm-up requests one at a time, or the measured load: the variant's
        request_rate under the Protocol's arrival, for its count or duration."""
        assert self.scenario is not None and self.endpoint is not None
        assert self.writer is not None
        declared = self.scenario
        load = scenario.load_of(self.variant, declared.arrival)
        poisson = declared.arrival == "poisson"
        arrivals = Arrivals(
            rate=float(load) if poisson else None,
            concurrency=None if poisson else int(load),
            requests=declared.requests,
            duration_s=declared.duration_s,
            warmup=0 if measured else declared.warmup,
            seed=self.run.seed or 0,
        )
        prompts = [Prompt(item.id, item.text) for item in self.prompts]
        run_loop(self.endpoint, prompts, arrivals, self.writer, measured=measured)

    # ---- after the phases

    def record(self) -> dict[str, Any]:
        """The figures, the quality, the Manifest and the row: the attempt's journal record."""
        run, notes = self.run, self.notes
        if run.error is not None:
            notes.append(f"{run.status} during {run.phase}: {error_text(run.error)}")
        has_file = self.path.is_file() and self.path.stat().st_size > 0
        targets = self.scenario.targets if self.scenario else ()
        metrics = compute(self.path, targets) if has_file else None
        start = time.perf_counter()
        quality = _quality(self, metrics) if has_file else None
        evaluation_s = time.perf_counter() - start
        entry = self._manifest()
        cells = run.start_row(entry["manifest_id"])
        put = cells.put
        self._phase_cells(put)
        if run.status == "completed" and metrics is not None and metrics.window_s is not None:
            # The measured window is the requests file's: first measured send to last end.
            put("measured_s", seconds(metrics.window_s))
        put("evaluation_s", seconds(evaluation_s) if has_file else None, "no request was sent")
        put("export_s", None, "serving attempt: each request is written as it ends (no export)")
        for name, why in SERVER_SIDE.items():
            put(name, None, why)
        _figure_cells(put, metrics, targets, notes)
        _quality_cells(put, run.status, quality, metrics, notes)
        rel = self.path.relative_to(self.spec.base).as_posix() if has_file else None
        file_cells(put, rel, file_sha256(self.path) if has_file else None)
        if rel:
            notes.append(f"requests: {rel}")
        if self.scenario is not None:
            notes.append(f"scenario: {self.scenario.text()}")
        put("notes", "; ".join(notes))
        put("attention_kernels", None)
        put("recompilations", None)
        put("seed", run.seed)
        columns.finish(cells, NAME)
        return run.record(cells, entry)

    def _phase_cells(self, put: Put) -> None:
        """No device span on the client; no warm-up phase when none was declared."""
        put(
            "device_s",
            None,
            "serving attempt: the server's device span is not visible to its client",
        )
        declared = self.scenario
        if declared is not None and not declared.warmup and "measured" in self.run.spans:
            put("warmup_s", None, "warmup_requests is 0: no warm-up")

    def _manifest(self) -> dict[str, Any]:
        """The Manifest row: the variant's settings, the prompts, this host, the endpoint."""
        spec, run = self.spec, self.run
        content = manifest_content(spec, None, run.seed)
        content.update(
            {
                "corpus_sha256": corpus.fingerprint(self.prompts)
                if self.prompts
                else spec.corpus_sha256,
                "corpus_items": len(self.prompts) or spec.corpus_items,
                "processing_order": "prompts in file order, again from the first when they run out",
                "determinism": "greedy requests (temperature 0); the server's own settings are its own",
                "engine": _engine_text(),
                "endpoint": _identity_text(self.identity, self.endpoint),
            }
        )
        content.update(environment.manifest_fields())
        return manifest_row(content)


def requests_held(path: Path) -> str:
    """What a requests file of whole lines, left by an attempt that ended without its
    record, holds: the requests finished by phase and outcome (or why they are not counted)."""
    try:
        records = read_records(path)
    except ToolkitError as exc:
        return f"its requests are not counted: {exc.message}"
    measured = [r for r in records if r.phase == MEASURED]
    completed = sum(r.ok for r in measured)
    return (
        f"{len(records)} requests finished before the attempt ended: {len(measured)} "
        f"measured ({completed} completed, {len(measured) - completed} failed) and "
        f"{len(records) - len(measured)} warm-up"
    )


class _RequestsFile:
    """Opens the attempt's requests file for the phases, and closes it whatever happens."""

    def __init__(self, attempt: Serving) -> None:
        self.attempt = attempt

    def __enter__(self) -> None:
        path = self.attempt.path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.attempt.writer = RecordWriter(path)

    def __exit__(self, *exc: Any) -> None:
        if self.attempt.writer is not None:
            self.attempt.writer.close()


def _engine_text() -> str:
    return f"{engines.OPENAI_HTTP} (httpx {engines.version('httpx')})"


def _identity_text(identity: Identity | None, endpoint: Endpoint | None) -> str | None:
    """The endpoint as it described itself, in one cell."""
    if identity is None:
        return None
    parts = [identity.base_url]
    if endpoint is not None:
        parts.append(f"model {endpoint.request.model} at {endpoint.request.route}")
    parts.append(
        f"lists {', '.join(identity.models)}"
        if identity.models is not None
        else str(identity.reason)
    )
    parts.append(f"server header {identity.server or 'none'}")
    for route, text in identity.versions.items():
        parts.append(f"{route}: {' '.join(text.split())[:300]}")
    return "; ".join(parts)


def _figure_cells(put: Put, metrics: Metrics | None, targets: Any, notes: list[str]) -> None:
    """The serving columns from the requests file's figures, each empty with its reason."""
    if metrics is None:
        for name in columns.OWN[NAME]:
            put(name, None, "no request was sent")
        return
    put("requests_sent", metrics.requests_sent)
    put("requests_completed", metrics.requests_completed)
    put("requests_failed", metrics.requests_failed)
    for name in FIGURES:
        value = getattr(metrics, name)
        put(name, None if value is None else round(value, 6), metrics.reasons.get(name))
    done = metrics.requests_completed > 0
    why = "no measured request completed"
    put("good_output_tokens", metrics.good_output_tokens if done else None, None if done else why)
    met = all(t["met"] for t in metrics.targets.values()) and metrics.requests_failed == 0
    put("targets_met", (layout.YES if met else layout.NO) if done else None, None if done else why)
    if metrics.failures:
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(metrics.failures.items()))
        example = "; ".join(metrics.failure_examples.values())
        notes.append(f"failed requests: {counts} (e.g. {example[:400]})")
    if metrics.client_lagged:
        notes.append(metrics.reasons["client_lagged"])
    for name, target in metrics.targets.items():
        if not target["met"]:
            value = target["value_ms"]
            shown = "none" if value is None else f"{value:.1f} ms"
            notes.append(f"target {name}<={target['limit_ms']:g} missed: {shown}")


def _outputs(path: Path) -> dict[str, str]:
    """The first completed measured output per prompt id, in file order."""
    out: dict[str, str] = {}
    for record in read_records(path):
        if record.phase == MEASURED and record.ok:
            out.setdefault(record.prompt_id, record.text)
    return out


def _quality(attempt: Serving, metrics: Metrics | None) -> dict[str, Any]:
    """chrF against the prompts' references; agreement with the reference variant's outputs
    (by the Protocol's measure); the verdict."""
    spec, protocol = attempt.spec, attempt.protocol
    outputs = _outputs(attempt.path)
    references = {item.id: item.fields.get("reference") for item in attempt.prompts}
    ids = list(outputs)
    score, score_why = agreement.chrf([outputs[i] for i in ids], [references.get(i) for i in ids])
    measure = attempt.scenario.agreement if attempt.scenario else "token"
    agreed, agreed_why = _agreement(spec, outputs, measure)
    tolerance = float(protocol.get("tolerance") or 0)
    threshold = float(protocol.get("threshold") or 0)
    is_reference = spec.variant["variant_id"] == protocol.get("reference_variant")
    if score is None or (agreed is None and not is_reference):
        verdict = "not evaluated"
    elif score >= threshold and (agreed is None or agreed >= 1 - tolerance):
        verdict = "pass"
    else:
        verdict = "fail"
    complete = metrics is not None and metrics.requests_sent > 0 and metrics.requests_failed == 0
    return {
        "observed": len(ids),
        "ids_match": complete,
        "metric": None if score is None else round(score, 6),
        "metric_reason": score_why,
        "agreement": agreed,
        "agreement_reason": agreed_why,
        "verdict": verdict,
    }


def _agreement(
    spec: AttemptSpec, outputs: dict[str, str], measure: str
) -> tuple[float | None, str | None]:
    """Agreement with the reference variant's first completed attempt, by prompt id."""
    reference = spec.reference
    if reference is None:
        return None, "the reference variant has no completed attempt yet"
    theirs = _outputs(spec.base / str(reference["predictions_path"]))
    words = [{"id": i, "token_ids": t.split()} for i, t in outputs.items()]
    ref = [{"id": i, "token_ids": t.split()} for i, t in theirs.items()]
    found, why = agreement.agreement(words, ref)
    if found is None:
        return None, why
    return round(found.exact if measure == "exact" else found.tokens, 6), None


def _quality_cells(
    put: Put, status: str, quality: dict[str, Any] | None, metrics: Metrics | None, notes: list[str]
) -> None:
    """Answered prompts, whether every request completed, chrF, agreement, the verdict."""
    if quality is None:
        for name in ("observed_ids", "ids_match", "metric_value", "reference_agreement"):
            put(name, None, "no request was sent")
        put("items_completed", 0)
        put("expected_ids", 0)
        verdict_cells(put, status, "not evaluated", None, ids_match=False)
        return
    assert metrics is not None
    put("items_completed", metrics.requests_completed)
    put("expected_ids", metrics.requests_sent)
    put("observed_ids", quality["observed"])
    put("ids_match", layout.YES if quality["ids_match"] else layout.NO)
    put("metric_value", quality["metric"], quality["metric_reason"])
    put("reference_agreement", quality["agreement"], quality["agreement_reason"])
    if not quality["ids_match"]:
        notes.append("not every measured request completed: no accepted corpus")
    verdict_cells(put, status, quality["verdict"], None, ids_match=quality["ids_match"])
