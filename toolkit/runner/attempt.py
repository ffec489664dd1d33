"""One attempt, phase by phase, to a journal record (R7-R10, R12-R13, R18).

Phases, each timed on its own:

1. **load**: resolve and hash the model, load tokenizer and weights on the
   device, then run the window's shortest, longest and last batch once: a compiled
   model compiles those shapes here, CUDA loads their kernels here, and the
   profiler names the attention kernel each ran (CUDA context creation comes
   before: the peak reset and the timer's first synchronise create it);
2. **warm-up**: the protocol's rule (e.g. the first 16 items once), untimed in
   the measured window, with the variant's batch size, padding and truncation;
3. **measured window** (R9): read the corpus, order it (length grouping is a
   variant), tokenize per batch, transfer, infer, predictions on the host;
4. **evaluation**: token lengths of every input (strata, truncation count),
   then, after export, the predictions file is read back and checked (ids,
   metric, subgroups, reference);
5. **export**: every prediction with its id, label and stratum to its own file.

``evaluation_s`` is the sum of the two evaluation steps. A failure (out of
memory, crash, timeout, Ctrl-C) still yields a record: status failed or
interrupted, items completed, the partial predictions written and checked,
and every missing timing empty with its reason (R12-R13).

Attempts may share a process (process policy ``shared``), so each starts from a
released baseline (collected, cache emptied, recorded in the notes) with float32
pinned to full precision, and ends by dropping its model and any traceback
holding its tensors; after a CUDA error other than out-of-memory, a shared
campaign stops.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from types import FrameType
from typing import Any

import torch

from toolkit import layout
from toolkit.errors import ModelError, ToolkitError
from toolkit.evidence import corpus, determinism, journal
from toolkit.plumbing import engines
from toolkit.plumbing.rss import peak_rss_bytes
from toolkit.runner import (
    achieved,
    compilation,
    decoding,
    environment,
    evaluation,
    flops,
    probes,
    reproducibility,
)
from toolkit.runner.attempt_parts import (
    AttemptTimeout,
    Cells,
    Emit,
    attempt_seed,
    checked_reference,
    error_text,
    export_cell,
    file_cells,
    identity_cells,
    manifest_content,
    manifest_row,
    memory_cells,
    read_back,
    seconds,
    verdict_cells,
)
from toolkit.runner.engines import onnx, predictor
from toolkit.runner.model import LoadedModel, load
from toolkit.runner.phases import CPU_NO_DEVICE_SPAN, SHARED_RSS_NOTE, AttemptRun
from toolkit.runner.spec import AttemptSpec


class InterruptGuard:
    """Ctrl-C stops the load, warm-up and measured window at once; later it waits.

    After the measured window the attempt finishes exporting and recording
    before the campaign stops, so a completed run is never lost to a late Ctrl-C.
    """

    def __init__(self) -> None:
        self.requested = False
        self.armed = True
        self._previous: Any = None

    def stop_campaign(self) -> None:
        """Ask the campaign to stop after this attempt, as a Ctrl-C does."""
        self.requested = True

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self.armed:
            raise KeyboardInterrupt("Ctrl-C")

    def __enter__(self) -> InterruptGuard:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


@dataclass
class Window:
    """What the measured window produced so far (kept when it fails midway)."""

    items: list[corpus.Item] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    predictions: list[tuple[int, str]] = field(default_factory=list)
    padded_tokens: int = 0
    real_tokens: int = 0
    #: For the FLOP count (runner.flops): inputs, and squared lengths real and padded.
    sequences: int = 0
    real_squares: int = 0
    padded_squares: int = 0


def _pad(encoded: dict[str, list[list[int]]], indexes: list[int], pad_id: int, width: int | None,
         left: bool) -> dict[str, torch.Tensor]:
    """Pad pre-tokenized rows to the batch's longest (or ``width``) as tensors."""
    size = width or max(len(encoded["input_ids"][i]) for i in indexes)
    out = {}
    for key, rows in encoded.items():
        fill = pad_id if key == "input_ids" else 0
        padded = []
        for i in indexes:
            extra = [fill] * (size - len(rows[i]))
            padded.append(extra + rows[i] if left else rows[i] + extra)
        out[key] = torch.tensor(padded)
    return out


def run_batches(model: LoadedModel, variant: dict[str, Any], texts: list[str], window: Window,
                after_batch: Callable[[int], None],
                forward: probes.ForwardSpans | None = None) -> None:
    """Tokenize, transfer and infer ``texts`` by batches; append predictions to ``window``.

    The variant sets batch size, padding, truncation and length grouping; the
    same function serves warm-up and the measured window. ``forward`` (on CUDA) times
    each call of the model on the device, nothing around it (R10).
    """
    tokenizer, module, labels = model.tokenizer, model.module, model.labels
    device = model.device
    transfer = device.type != "cpu"
    size = int(variant["batch_size"])
    max_length = int(variant["max_length"])
    padding = "longest" if variant["padding"] == "dynamic" else "max_length"
    count = len(texts)
    encoded = None
    if variant["length_grouping"] == "sorted":
        encoded = dict(tokenizer(texts, truncation=True, max_length=max_length))
        lengths = [len(ids) for ids in encoded["input_ids"]]
        order = sorted(range(count), key=lengths.__getitem__)
    else:
        order = list(range(count))
    window.order = order
    fixed = max_length if padding == "max_length" else None
    left = getattr(tokenizer, "padding_side", "right") == "left"
    with torch.inference_mode():
        for start in range(0, count, size):
            indexes = order[start:start + size]
            if encoded is not None:
                inputs = _pad(encoded, indexes, tokenizer.pad_token_id, fixed, left)
            else:
                inputs = tokenizer([texts[i] for i in indexes], padding=padding, truncation=True,
                                   max_length=max_length, return_tensors="pt")
            mask = inputs["attention_mask"]
            window.padded_tokens += mask.numel()
            rows = mask.sum(dim=1)
            window.real_tokens += int(rows.sum())
            window.sequences += len(indexes)
            window.real_squares += int((rows * rows).sum())
            window.padded_squares += mask.shape[0] * mask.shape[1] ** 2
            if transfer:
                inputs = {k: v.to(device) for k, v in inputs.items()}
            if forward is None:
                logits = module(**inputs)
            else:
                with forward:
                    logits = module(**inputs)
            best = logits.argmax(dim=-1).tolist()
            window.predictions.extend((i, labels[p]) for i, p in zip(indexes, best, strict=False))
            after_batch(len(window.predictions))


def shape_batches(lengths: list[int], size: int, width: int | None, *, sorted_order: bool
                  ) -> list[tuple[list[int], tuple[int, int]]]:
    """The measured window's extreme batches, each once per shape (rows, tokens): the
    ``size`` shortest inputs, the ``size`` longest, and the window's last, partial batch.

    ``lengths``: token counts after truncation; ``width``: the fixed padded length (None:
    padded to each batch's longest); ``sorted_order``: the window batches length-sorted
    inputs. Indexes are listed shortest first.
    """
    by_length = sorted(range(len(lengths)), key=lengths.__getitem__)
    window = by_length if sorted_order else list(range(len(lengths)))
    rest = len(lengths) % size
    candidates = [by_length[:size], by_length[-size:]] + ([window[-rest:]] if rest else [])
    batches: list[tuple[list[int], tuple[int, int]]] = []
    for indexes in candidates:
        shape = (len(indexes), width or max(lengths[i] for i in indexes)) if indexes else None
        if shape is not None and shape not in [known for _, known in batches]:
            batches.append((indexes, shape))
    return batches


def first_calls(model: LoadedModel, variant: dict[str, Any], texts: list[str]
                ) -> tuple[list[tuple[int, int]], str | None]:
    """The load phase's calls (R8): each of :func:`shape_batches` once, so a compiled model
    compiles those shapes and CUDA loads their kernels before the measured window; then the
    first two again under the profiler. On the CPU without compilation there is no kernel
    to load or graph to build, and torch's CPU attention choice does not depend on the
    sequence length (its flash/math gates look at dtype, head size, mask shape, dropout,
    never the length), so the shortest batch alone runs, under the profiler: the longest
    batch cost a quick campaign about a tenth of each window (issue 20).

    Returns the shapes run and the attention kernel seen per profiled shape
    (``4x9: flash; 4x256: memory-efficient``), None when nothing ran.
    """
    max_length = int(variant["max_length"])
    lengths = [len(ids) for ids in model.tokenizer(texts, truncation=True,
                                                   max_length=max_length)["input_ids"]]
    width = None if variant["padding"] == "dynamic" else max_length
    batches = shape_batches(lengths, int(variant["batch_size"]), width,
                            sorted_order=variant["length_grouping"] == "sorted")

    def call(indexes: list[int]) -> None:
        run_batches(model, variant, [texts[i] for i in indexes], Window(), lambda done: None)

    if model.device.type == "cpu" and variant.get("compile") != "yes":
        batches = batches[:1]
    else:
        for indexes, _ in batches:
            call(indexes)
    kernels = [f"{rows}x{tokens}: {probes.attention_kernel(partial(call, indexes))}"
               for indexes, (rows, tokens) in batches[:2]]
    return [shape for _, shape in batches], "; ".join(kernels) or None


def load_engine(variant: dict[str, Any], base: Any, threads: int
                ) -> LoadedModel | predictor.LoadedPredictor:
    """The variant's classifier under its engine: torch, an onnxruntime session, or a
    ``python:`` predictor (runner.engines)."""
    engine = engines.engine_of(variant)
    if engine == engines.ONNXRUNTIME:
        return onnx.load(variant, base, threads)
    if engine.startswith(engines.PYTHON_PREFIX):
        return predictor.load(variant, base)
    if engine != engines.TORCH:
        raise ModelError(f"variant {variant['variant_id']}: engine {engine!r} does not run "
                         "classification", hint="use torch, onnxruntime or python:MODULE:CALLABLE")
    return load(variant, base)


def _compile_notes(counts: dict[str, int], shapes: list[tuple[int, int]],
                   caches: compilation.Caches) -> list[str]:
    """What a compiled attempt compiled when, and its cache folders (nothing uncompiled)."""
    note = caches.note()
    if note is None:
        return []
    shown = ", ".join(f"{rows}x{tokens}" for rows, tokens in shapes) or "none"
    notes = [f"{counts.get('load', 0)} graph(s) compiled during load (batch shapes {shown})"]
    if counts.get("warm-up"):
        notes.append(f"{counts['warm-up']} graph(s) compiled during warm-up")
    return notes + [note]


def run_attempt(spec: AttemptSpec, emit: Emit, guard: InterruptGuard | None = None
                ) -> dict[str, Any]:
    """Run one attempt; return its journal record (Attempts row and Manifest row).

    Never raises for a failure of the attempt itself: that is a row. ``emit``
    receives progress events (phase changes, items done).
    """
    guard = guard or InterruptGuard()
    from toolkit.runner import generation_attempt  # Protocol task generation: its own phases

    if generation_attempt.generation_task(spec):
        return generation_attempt.run_generation_attempt(spec, emit, guard)
    variant = spec.variant
    run = AttemptRun(spec, emit, guard)
    device = run.device
    compiled = variant.get("compile") == "yes"

    forward = probes.ForwardSpans() if device.type == "cuda" else None
    model: LoadedModel | predictor.LoadedPredictor | None = None
    window = Window()
    notes: list[str] = []
    shapes: list[tuple[int, int]] = []
    kernels: str | None = None
    caches = compilation.Caches(None)  # what the notes show when the session fails to start
    count = compilation.GraphCount()
    compiled_in: dict[str, int] = {}  # graphs compiled, by phase

    def batches(items: list[corpus.Item], into: Window, after: Callable[[int], None],
                spans: probes.ForwardSpans | None = None) -> None:
        if isinstance(model, predictor.LoadedPredictor):
            predictor.run_batches(model, variant, items, into.predictions, after)
        else:
            assert model is not None
            run_batches(model, variant, [i.text for i in items], into, after, spans)

    def warm_pass(items: list[corpus.Item]) -> None:
        batches(items, Window(), lambda d: run.after_batch(d, len(items)))

    with run.phases(), compilation.session(compiled) as caches:  # noqa: F811 - see above
        with run.timed("load"):
            model = load_engine(variant, spec.base, run.threads)
            if isinstance(model, LoadedModel):
                shapes, kernels = first_calls(
                    model, variant, [i.text for i in corpus.read_corpus(run.corpus_path)])
        compiled_in["load"] = count.take()
        run.warm_up(warm_pass)
        compiled_in["warm-up"] = count.take()
        with run.timed("measured"):
            window.items = corpus.read_corpus(run.corpus_path)
            total = len(window.items)
            batches(window.items, window, lambda d: run.after_batch(d, total), forward)
    compiled_in[run.phase] = compiled_in.get(run.phase, 0) + count.take()
    if run.error is not None:
        notes.append(_failure_note(run, run.error, window))
    if compiled and compiled_in.get("measured"):
        notes.append(f"{compiled_in['measured']} graph(s) compiled inside the measured window: "
                     "measured_s includes compile time (R8)")
    baseline = run.baseline_note()
    if baseline is not None:
        notes.append(baseline + " (after collecting and emptying the cache)")
    notes += _compile_notes(compiled_in, shapes, caches)
    if model is not None:
        notes += model.engine_notes
    if isinstance(model, predictor.LoadedPredictor):
        closed = model.close()
        notes += [closed] if closed else []

    # ---- evaluation, part 1: token lengths (strata, truncation) and the fingerprint
    emit({"event": "phase", "phase": "evaluation"})
    eval_start = time.perf_counter()
    strata: dict[str, str] = {}
    truncated: int | None = None
    counts: dict[str, int] = {}
    items = window.items
    if not items:
        try:
            items = corpus.read_corpus(run.corpus_path)
        except ToolkitError as exc:
            notes.append(f"corpus unreadable: {exc.message}")
    fingerprint = corpus.fingerprint(items) if items else None
    if fingerprint and fingerprint != spec.corpus_sha256:
        notes.append(f"corpus fingerprint {fingerprint[:12]} differs from the campaign's "
                     f"{spec.corpus_sha256[:12]}: the corpus changed during the campaign")
    if isinstance(model, predictor.LoadedPredictor):
        strata = predictor.reference_strata(checked_reference(spec, []))
        for name in strata.values():
            counts[name] = counts.get(name, 0) + 1
        notes.append("strata as the reference attempt's tokenizer counted them"
                     if strata else "no reference attempt yet: strata unknown")
    elif model is not None and items:
        lengths = [len(ids) for ids in model.tokenizer([i.text for i in items],
                                                       truncation=False)["input_ids"]]
        max_length = int(variant["max_length"])
        truncated = sum(n > max_length for n in lengths)
        bounds = corpus.parse_stratum_bounds(spec.protocol.get("stratum_bounds"))
        for item, n in zip(items, lengths, strict=False):
            strata[item.id] = corpus.stratum(n, bounds)
            counts[strata[item.id]] = counts.get(strata[item.id], 0) + 1
    eval_first = time.perf_counter() - eval_start

    # ---- export: every prediction with its id, wrong ones included (R7)
    export_s: float | None = None
    predictions_sha = predictions_rel = None
    if window.items:
        emit({"event": "phase", "phase": "export"})
        try:
            start = time.perf_counter()
            fields = corpus.parse_subgroups(spec.protocol.get("subgroups"))
            rows = [corpus.prediction_row(window.items[i], p, strata.get(window.items[i].id),
                                          fields) for i, p in window.predictions]
            predictions_sha = corpus.write_predictions(spec.predictions_file, rows)
            export_s = time.perf_counter() - start
            predictions_rel = spec.predictions_file.relative_to(spec.base).as_posix()
        except OSError as exc:
            run.status = "failed" if run.status == "completed" else run.status
            notes.append(f"export failed: {error_text(exc)}")
    status = run.status

    # ---- evaluation, part 2: read the file back and check it
    start = time.perf_counter()
    verdicts = _evaluate(spec, predictions_sha, [i.id for i in items],
                           complete=status == "completed", notes=notes)
    eval_second = time.perf_counter() - start
    if fingerprint and fingerprint != spec.corpus_sha256 and verdicts is not None:
        verdicts.verdict = "fail"
    evaluation_s = eval_first + eval_second

    peaks = probes.cuda_peaks(device)
    rss = peak_rss_bytes()
    environment_info = environment.manifest_fields()
    work = _work(spec, model, window, run.spans.get("measured"), status, run.threads,
                 run.broken, environment_info.get("gpu_name"))
    manifest = _manifest(spec, model, fingerprint, len(items), counts, truncated, run.threads,
                         run.seed, environment_info, measured=work.manifest)
    cells = run.start_row(manifest["manifest_id"])
    put = cells.put
    measured_span = run.spans.get("measured")
    forward_s = forward.total_s() if forward is not None and measured_span is not None \
        and measured_span.device_s is not None else None
    if device.type != "cuda":
        put("forward_device_s", None, CPU_NO_DEVICE_SPAN)
    elif forward_s is not None:
        put("forward_device_s", seconds(forward_s))
    else:
        put("forward_device_s", None, f"{status}: the measured window did not finish")
    put("evaluation_s", seconds(evaluation_s))
    export_cell(put, export_s, bool(window.items),
                "nothing to export: the measured window was not reached")
    put("items_completed", len(window.predictions))
    put("expected_ids", len({i.id for i in items}) if items else spec.corpus_items)
    if verdicts is None:
        reason = "no predictions file: the measured window was not reached"
        put("observed_ids", None, reason)
        put("ids_match", None, reason)
        put("metric_value", None, reason)
        put("reference_agreement", None, reason)
        verdict = "not evaluated"
        subgroup_text = None
    else:
        put("observed_ids", verdicts.ids.observed)
        put("ids_match", layout.YES if verdicts.ids.match else layout.NO)
        put("metric_value", None if verdicts.metric is None else round(verdicts.metric, 6),
            verdicts.metric_reason)
        put("reference_agreement",
            None if verdicts.agreement is None else round(verdicts.agreement, 6),
            verdicts.agreement_reason or "no reference comparison")
        verdict = verdicts.verdict
        subgroup_text = evaluation.subgroups_text(verdicts.subgroups) or None
        notes.extend(verdicts.notes)
    verdict_cells(put, status, verdict, subgroup_text,
                  ids_match=verdicts is not None and verdicts.ids.match)
    memory_cells(put, device, peaks, rss)
    if isinstance(model, predictor.LoadedPredictor):
        put("padded_tokens", None, predictor.NO_TOKENS)
        put("padding_efficiency", None, predictor.NO_TOKENS)
    elif status == "completed" and window.padded_tokens:
        put("padded_tokens", window.padded_tokens)
        put("padding_efficiency", round(window.real_tokens / window.padded_tokens, 6))
    else:
        reason = f"{status} after {len(window.predictions)} items: token counts cover a whole " \
                 "corpus only"
        put("padded_tokens", None, reason)
        put("padding_efficiency", None, reason)
    put("truncated", truncated, None if truncated is not None else
        predictor.NO_TOKENS if isinstance(model, predictor.LoadedPredictor) else
        "tokenizer not loaded: token lengths unknown")
    file_cells(put, predictions_rel, predictions_sha)
    if predictions_rel:
        notes.append(f"predictions: {predictions_rel}")
    if run.shared:
        notes.append(SHARED_RSS_NOTE)
    notes.append(f"threads {run.threads}; warm-up {run.warmup.text!r}")
    put("notes", "; ".join(notes))
    put("attention_kernels", kernels)
    put("recompilations", compiled_in.get("measured") if compiled else None)
    put("seed", run.seed)
    for name in decoding.GENERATION_COLUMNS:  # Protocol task generation's columns
        put(name, None, decoding.CLASSIFICATION_REASON)
    for name, (figure, why) in work.attempt.items():
        put(name, figure, why)
    model = None  # the next attempt of a shared process must not find it in memory
    return run.record(cells, manifest)


def _failure_note(run: AttemptRun, error: BaseException, window: Window) -> str:
    """The note of a failed classification; after a CUDA error other than out-of-memory it
    says why a shared campaign stops, and stops it."""
    where = run.where(len(window.predictions), len(window.items) or run.spec.corpus_items,
                      "items")
    if isinstance(error, KeyboardInterrupt):
        return f"interrupted {where} ({error_text(error)})"
    if isinstance(error, torch.OutOfMemoryError):
        return f"out of memory {where}: {error_text(error)}"
    if isinstance(error, AttemptTimeout):
        return f"timed out {where}: {error}"
    if run.broken and run.shared:
        run.guard.stop_campaign()
        return (f"failed {where}: {error_text(error)}, a CUDA error other than out-of-memory: "
                "this process's CUDA context cannot be trusted after it, so the shared "
                "campaign stops here (`--resume` continues in a new process)")
    return f"failed {where}: {error_text(error)}"


def _evaluate(spec: AttemptSpec, predictions_sha: str | None, expected: list[str], *,
              complete: bool, notes: list[str]) -> evaluation.Evaluation | None:
    """Read the predictions file back and evaluate it (None when there is no file)."""
    if predictions_sha is None:
        return None
    protocol = spec.protocol
    kinds = evaluation.parse_subgroups(protocol.get("subgroups"))
    rows = read_back(spec, predictions_sha, notes)
    reference = None
    ref, ref_path = spec.reference, checked_reference(spec, notes)
    if ref is not None and ref_path is not None:
        reference = evaluation.load_reference(ref_path, ref["variant_id"], ref["attempt_id"],
                                              protocol["metric"], kinds)
    return evaluation.evaluate(
        rows, expected, complete=complete, metric_name=protocol["metric"],
        threshold=float(protocol["threshold"]), tolerance=float(protocol["tolerance"]),
        kinds=kinds, reference=reference, reference_variant=str(protocol["reference_variant"]),
        variant_id=str(spec.variant["variant_id"]))


def _work(spec: AttemptSpec, model: LoadedModel | predictor.LoadedPredictor | None,
          window: Window,
          measured: probes.Span | None, status: str, threads: int, broken: bool,
          gpu_name: str | None) -> achieved.Work:
    """FLOPs, rates and utilisation (runner.achieved), and the peak probe, run here after
    every timed phase, only when the window completed on a usable device."""
    variant = spec.variant
    measured_s = measured.host_s if measured is not None else None
    unfinished = (None if status == "completed" and measured_s else
                  f"{status} after {len(window.predictions)} items: FLOPs cover a whole "
                  "corpus only")
    found = achieved.Work()
    probed, cells = None, None
    peak_reason = f"not probed: the attempt ended {status} (the probe runs after a completed one)"
    if unfinished is None and not broken:
        probed, cells = achieved.probe_cells(str(variant["device"]), str(variant["precision"]),
                                             threads, gpu_name)
        peak_reason = (cells["matmul_peak_flops"][1] or "no peak") if probed is None else ""
    found.manifest = achieved.manifest_values(cells, peak_reason)
    cost, cost_reason = (model.module.cost if isinstance(model, LoadedModel)
                         and isinstance(model.module, onnx.OnnxLogits)
                         else flops.cost_of(model.module) if isinstance(model, LoadedModel)
                         else (None, predictor.NO_FLOPS) if model is not None
                         else (None, "model not loaded"))
    tally = achieved.Tally(window.sequences, window.real_tokens, window.padded_tokens,
                           window.real_squares, window.padded_squares)
    found.attempt = achieved.work(cost, cost_reason, tally, measured_s, unfinished, variant,
                                  probed, peak_reason or None)
    return found


def _manifest(spec: AttemptSpec, model: LoadedModel | predictor.LoadedPredictor | None,
              fingerprint: str | None,
              items: int, counts: dict[str, int], truncated: int | None, threads: int,
              seed: int | None, env: dict[str, Any], state: str | None = None,
              measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Manifest row: variant, corpus, revisions, environment; id = hash of the content.

    ``state``: the determinism cell when this process's torch state is not the attempt's;
    ``measured``: the peak probe's columns (left out of the id, as ``recorded_at`` is).
    """
    variant = spec.variant
    row = manifest_content(spec, model, seed)
    row.update({
        "corpus_sha256": fingerprint or spec.corpus_sha256,
        "corpus_items": items or spec.corpus_items,
        "processing_order": ("sorted by token length, ties in file order"
                             if variant["length_grouping"] == "sorted" else "file order"),
        "strata": (corpus.strata_text(counts, corpus.parse_stratum_bounds(
            spec.protocol.get("stratum_bounds"))) if counts else None),
        "truncated": truncated,
        "determinism": state or reproducibility.state(spec.protocol, threads),
        "compile_setup": (compilation.SETUP if variant.get("compile") == "yes"
                          else compilation.NOT_COMPILED),
        "engine": model.engine if model is not None else engines.engine_of(variant),
        "engine_artifact": model.engine_artifact if model is not None else None,
    })
    row.update(env)
    return manifest_row(row, measured)


def fallback_record(spec: AttemptSpec, status: str, items_done: int, note: str,
                    phase: str | None, started_at: str) -> dict[str, Any]:
    """The record the campaign writes when a worker died without writing its own.

    Only what the campaign saw is filled: items completed (from the worker's
    progress), the error; every measurement is empty with its reason.
    """
    manifest = _manifest(spec, None, None, 0, {}, None, spec.threads or torch.get_num_threads(),
                         attempt_seed(spec), environment.manifest_fields(),
                         determinism.NOT_READ + " (the worker ended without a record)",
                         measured=achieved.manifest_values(None, "not probed: the worker ended "
                                                           "without a record"))
    cells = Cells()
    put = cells.put
    identity_cells(put, spec, started_at, status, manifest["manifest_id"])
    lost = f"worker process ended without a record ({status} during {phase or 'start-up'})"
    for column in ("load_s", "warmup_s", "measured_s", "device_s", "forward_device_s",
                   "evaluation_s", "export_s",
                   "observed_ids", "ids_match", "metric_value", "reference_agreement",
                   "mem_allocated_peak_bytes", "mem_reserved_peak_bytes",
                   "host_rss_peak_bytes", "padded_tokens", "padding_efficiency", "truncated",
                   *achieved.ATTEMPT_COLUMNS, *decoding.GENERATION_COLUMNS):
        put(column, None, lost)
    put("items_completed", items_done)
    put("expected_ids", spec.corpus_items)
    verdict_cells(put, status, "not evaluated", None, ids_match=False)
    file_cells(put, None, None)
    put("notes", note)
    put("attention_kernels", None)
    put("recompilations", None)
    put("seed", attempt_seed(spec))
    return journal.record(cells.row, manifest)
