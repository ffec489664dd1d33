"""Protocol task ``classification``: one attempt, phase by phase, to a journal record
(R7-R10, R12-R13, R18).

Phases, each timed on its own (:class:`toolkit.runner.tasks.phases.AttemptRun`):

1. **load**: resolve and hash the model, load it through its engine
   (:mod:`toolkit.runner.engines.contract`); on repetition 1, the **cold pass**: the whole
   corpus once, before anything is warmed, timed apart (``cold_pass_s``, left out of
   ``load_s``); then the first calls (:func:`first_calls`): every bucket shape on
   synthetic token ids for ``bucket-N`` padding, else the window's shortest, longest and
   last batch once (an uncompiled model on a GPU: one batch of every shape the window
   runs): a compiled model compiles those shapes here, CUDA loads their kernels
   here, and the profiler names the attention kernel each ran (CUDA context creation
   comes before: the peak reset and the timer's first synchronise create it);
2. **warm-up**: the protocol's rule (e.g. the first 16 items once), untimed in
   the measured window, with the variant's batch size, padding and truncation;
3. **measured window** (R9): read the corpus, order it (length grouping is a
   variant), tokenize per batch, transfer, infer, predictions on the host (the input
   pipeline, sequential or overlapped, is a variant: :mod:`toolkit.runner.tasks.overlap`);
4. **evaluation**: token lengths of every input (strata, truncation count),
   then, after export, the predictions file is read back and checked (ids,
   metric, subgroups, reference);
5. **export**: every prediction with its id, label and stratum to its own file.

``evaluation_s`` is the sum of the two evaluation steps. A failure (out of
memory, crash, timeout, Ctrl-C) still yields a record: status failed or
interrupted, items completed, the partial predictions written and checked,
and every missing timing empty with its reason (R12-R13).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from toolkit import layout
from toolkit.errors import ModelError, ToolkitError
from toolkit.evidence import corpus
from toolkit.plumbing import engines, padding
from toolkit.plumbing.rss import peak_rss_bytes
from toolkit.runner.engines.contract import Predictor
from toolkit.runner.engines.plugin import reference_strata
from toolkit.runner.engines.registry import load_classifier
from toolkit.runner.instruments import achieved, compilation, environment, probes, reproducibility
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks import columns, evaluation, overlap
from toolkit.runner.tasks.cells import (
    Put,
    export_cell,
    file_cells,
    memory_cells,
    seconds,
    verdict_cells,
)
from toolkit.runner.tasks.failures import AttemptTimeout, error_text
from toolkit.runner.tasks.manifest import manifest_content, manifest_row
from toolkit.runner.tasks.phases import CPU_NO_DEVICE_SPAN, SHARED_RSS_NOTE, AttemptRun
from toolkit.runner.tasks.predictions import checked_reference, read_back
from toolkit.runner.tasks.process_state import Emit

if TYPE_CHECKING:  # the dispatcher ranks above the task kinds
    from toolkit.runner.attempt import InterruptGuard

#: The Protocol task this kind runs.
NAME = "classification"


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

    def tally(self, rows: int, lengths: list[int], width: int) -> None:
        """Count one batch's tokens: ``rows`` inputs of ``lengths`` padded to ``width``."""
        self.padded_tokens += rows * width
        self.real_tokens += sum(lengths)
        self.sequences += rows
        self.real_squares += sum(n * n for n in lengths)
        self.padded_squares += rows * width**2


def run_batches(
    predictor: Predictor,
    variant: dict[str, Any],
    items: list[corpus.Item],
    window: Window,
    after_batch: Callable[[int], None],
    forward: probes.ForwardSpans | None = None,
) -> None:
    """Predict ``items`` by batches; append predictions and token tallies to ``window``.

    The variant sets batch size, length grouping and input pipeline (the predictor its
    padding and truncation); the same function serves the load phase's calls, the cold
    pass, warm-up and the measured window. ``forward`` (on CUDA) times each call of the
    model on the device, nothing around it (R10). Sequential: one batch after the other,
    its predictions on the host before the next; overlapped: :mod:`overlap`.
    """
    size = int(variant["batch_size"])
    count = len(items)
    if variant["length_grouping"] == "sorted":
        lengths = predictor.token_lengths([i.text for i in items], truncate=True, keep=True)
        if lengths is None:
            raise ModelError(
                f"length_grouping sorted needs token lengths: {predictor.engine} "
                f"gives none ({predictor.tokens_reason})",
                hint="declare length_grouping none for this engine",
            )
        order = sorted(range(count), key=lengths.__getitem__)
    else:
        order = list(range(count))
    window.order = order
    batches = [order[start : start + size] for start in range(0, count, size)]
    if overlap.is_overlapped(variant):
        flat = [i for indexes in batches for i in indexes]
        overlap.run(
            overlap.pipelined(predictor),
            [[items[i] for i in indexes] for indexes in batches],
            lambda k, ready: window.tally(len(batches[k]), ready.lengths, ready.width),
            after_batch,
            lambda labels: window.predictions.extend(zip(flat, labels, strict=False)),
            forward,
        )
        return
    for indexes in batches:
        batch = predictor.predict([items[i] for i in indexes], forward)
        window.tally(len(indexes), batch.lengths, batch.width)
        window.predictions.extend(zip(indexes, batch.outputs, strict=False))
        after_batch(len(window.predictions))


def shape_batches(
    lengths: list[int],
    size: int,
    width: int | None,
    *,
    sorted_order: bool,
    every_shape: bool = False,
) -> list[tuple[list[int], tuple[int, int]]]:
    """The measured window's extreme batches, each once per shape (rows, tokens): the
    ``size`` shortest inputs, the ``size`` longest, and the window's last, partial batch;
    ``every_shape``: then one window batch of each other shape the window will run.

    ``lengths``: token counts after truncation; ``width``: the fixed padded length (None:
    padded to each batch's longest); ``sorted_order``: the window batches length-sorted
    inputs. Indexes are listed shortest first.
    """
    by_length = sorted(range(len(lengths)), key=lengths.__getitem__)
    window = by_length if sorted_order else list(range(len(lengths)))
    rest = len(lengths) % size
    candidates = [by_length[:size], by_length[-size:]] + ([window[-rest:]] if rest else [])
    if every_shape:
        candidates += [window[start : start + size] for start in range(0, len(window), size)]
    batches: list[tuple[list[int], tuple[int, int]]] = []
    for indexes in candidates:
        shape = (len(indexes), width or max(lengths[i] for i in indexes)) if indexes else None
        if shape is not None and shape not in [known for _, known in batches]:
            batches.append((indexes, shape))
    return batches


def first_calls(
    predictor: Predictor, variant: dict[str, Any], items: list[corpus.Item]
) -> tuple[list[tuple[int, int]], str | None]:
    """The load phase's calls (R8), so a compiled model compiles the window's shapes and
    CUDA loads their kernels before the measured window; then the first two again under
    the profiler.

    ``bucket-N`` padding: every (rows, width) the buckets allow, on synthetic token ids
    (:func:`bucket_shapes`): no text of the corpus is tokenized here, only its item count
    read (the last batch's rows). ``dynamic`` and ``max_length``: each of
    :func:`shape_batches`, from the corpus's own texts. An uncompiled model on a GPU runs
    one batch of every shape the window will run: cuDNN's attention (bf16) sets up a plan
    per new shape, which on an H200 made each bf16 variant's first window 2.5-5x its
    second; a compiled model's graphs, dynamic after the second shape, cover the rest. On
    the CPU without compilation there is no kernel to load or graph to build, and torch's
    CPU attention choice does not depend on the sequence length (its flash/math gates look
    at dtype, head size, mask shape, dropout, never the length), so the shortest batch
    alone runs, under the profiler: the longest batch cost a quick campaign about a tenth
    of each window.

    Returns the shapes run and the attention kernel seen per profiled shape
    (``4x9: flash; 4x256: memory-efficient``), None when nothing ran (an engine without
    token lengths runs nothing here: its warm-up is its first call).
    """
    policy = padding.parse(variant["padding"])
    warm = getattr(predictor, "warm", None)
    if policy.kind == padding.BUCKET and warm is not None:
        shapes = bucket_shapes(policy, variant, len(items))
        for rows, tokens in shapes:
            warm(rows, tokens)
        kernels = [
            f"{rows}x{tokens}: {probes.attention_kernel(partial(warm, rows, tokens))}"
            for rows, tokens in shapes[:1] + shapes[-1:]
        ]
        return shapes, "; ".join(dict.fromkeys(kernels)) or None
    lengths = predictor.token_lengths([i.text for i in items], truncate=True)
    if lengths is None:
        return [], None
    max_length = int(variant["max_length"])
    width = None if policy.kind == padding.DYNAMIC else max_length
    compiled = variant.get("compile") == "yes"
    batches = shape_batches(
        lengths,
        int(variant["batch_size"]),
        width,
        sorted_order=variant["length_grouping"] == "sorted",
        every_shape=predictor.device.type != "cpu" and not compiled,
    )

    def call(indexes: list[int]) -> None:
        run_batches(predictor, variant, [items[i] for i in indexes], Window(), lambda done: None)

    if predictor.device.type == "cpu" and not compiled:
        batches = batches[:1]
    else:
        for indexes, _ in batches:
            call(indexes)
    kernels = [
        f"{rows}x{tokens}: {probes.attention_kernel(partial(call, indexes))}"
        for indexes, (rows, tokens) in batches[:2]
    ]
    return [shape for _, shape in batches], "; ".join(kernels) or None


def bucket_shapes(
    policy: padding.Padding, variant: dict[str, Any], items: int
) -> list[tuple[int, int]]:
    """Every (rows, width) a bucketed window of ``items`` inputs can run: the batch size
    and the last batch's rows (when ``items`` is not a multiple of it), by every bucket
    width up to max_length, narrowest first."""
    size = int(variant["batch_size"])
    widths = policy.widths(int(variant["max_length"])) or []
    rows = sorted({min(size, items), items % size} - {0})
    return [(r, w) for w in widths for r in rows]


def warmed_text(policy: padding.Padding, shapes: list[tuple[int, int]]) -> str:
    """What the load phase warmed, for the row's notes."""
    if policy.kind == padding.BUCKET:
        return (
            f"load warmed {len(shapes)} shape(s) on synthetic token ids, no corpus text "
            f"(every bucket-{policy.step} width by the window's batch rows)"
        )
    shown = ", ".join(f"{rows}x{tokens}" for rows, tokens in shapes) or "none"
    return f"load warmed batch shape(s) {shown} taken from the corpus's own texts"


def _compile_notes(
    counts: dict[str, int], shapes: list[tuple[int, int]], caches: compilation.Caches
) -> list[str]:
    """What a compiled attempt compiled when, and its cache folders (nothing uncompiled)."""
    note = caches.note()
    if note is None:
        return []
    shown = ", ".join(f"{rows}x{tokens}" for rows, tokens in shapes) or "none"
    notes = [f"{counts.get('load', 0)} graph(s) compiled during load (batch shapes {shown})"]
    if counts.get("warm-up"):
        notes.append(f"{counts['warm-up']} graph(s) compiled during warm-up")
    return notes + [note]


def run(spec: AttemptSpec, emit: Emit, guard: InterruptGuard) -> dict[str, Any]:
    """Run one classification attempt; return its journal record (Attempts and Manifest
    rows). Never raises for a failure of the attempt itself: that is a row."""
    attempt = Classification(spec, emit, guard)
    attempt.run.run_steps(attempt)
    return attempt.record()


@dataclass
class Lengths:
    """Evaluation, part 1: every input's token length read back into strata."""

    items: list[corpus.Item]
    fingerprint: str | None
    strata: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    truncated: int | None = None
    seconds: float = 0.0


class Classification:
    """One classification attempt under way: the steps :meth:`AttemptRun.run_steps` runs,
    then evaluation, export, the row and the Manifest (:meth:`record`)."""

    def __init__(self, spec: AttemptSpec, emit: Emit, guard: InterruptGuard) -> None:
        self.spec, self.variant, self.emit = spec, spec.variant, emit
        self.run = AttemptRun(spec, emit, guard)
        self.compiled = self.variant.get("compile") == "yes"
        self.forward = probes.ForwardSpans() if self.run.device.type == "cuda" else None
        self.predictor: Predictor | None = None
        self.window = Window()
        self.notes: list[str] = []
        self.shapes: list[tuple[int, int]] = []
        self.kernels: str | None = None
        self.caches = compilation.Caches(None)  # what the notes show when no session starts
        self.count = compilation.GraphCount()
        self.compiled_in: dict[str, int] = {}  # graphs compiled, by phase
        #: The cold pass (repetition 1 only): the corpus once, before any warm-up.
        self.cold: probes.Span | None = None

    # ---- the timed phases (AttemptRun.run_steps)

    def session(self) -> Any:
        """The attempt's compilation session (fresh caches; nothing uncompiled)."""
        return _Session(self)

    def load(self) -> None:
        """Load the model; on repetition 1 the cold pass (timed apart from load_s); then the
        load phase's first calls (:func:`first_calls`)."""
        self.predictor = load_classifier(self.variant, self.spec.base)
        self.notes.extend(self.predictor.engine_notes)
        items = corpus.read_corpus(self.run.corpus_path)
        if self.spec.repetition == 1:
            with self.run.timed_apart() as self.cold:
                run_batches(
                    self.predictor,
                    self.variant,
                    items,
                    Window(),
                    lambda d: self.run.after_batch(d, len(items)),
                )
        self.shapes, self.kernels = first_calls(self.predictor, self.variant, items)

    def phase_done(self, phase: str) -> None:
        self.compiled_in[phase] = self.compiled_in.get(phase, 0) + self.count.take()

    def warm_pass(self, items: list[corpus.Item]) -> None:
        assert self.predictor is not None
        run_batches(
            self.predictor,
            self.variant,
            items,
            Window(),
            lambda d: self.run.after_batch(d, len(items)),
        )

    def measure(self) -> None:
        assert self.predictor is not None
        window = self.window
        window.items = corpus.read_corpus(self.run.corpus_path)
        total = len(window.items)
        run_batches(
            self.predictor,
            self.variant,
            window.items,
            window,
            lambda d: self.run.after_batch(d, total),
            self.forward,
        )
        self.predictor.synchronize()  # an engine's device work ends inside the window

    # ---- after the phases

    def record(self) -> dict[str, Any]:
        """Evaluation, export, the Manifest and the row: the attempt's journal record."""
        run, notes = self.run, self.notes
        self._phase_notes()
        self.emit({"event": "phase", "phase": "evaluation"})
        lengths = self._lengths()
        predictions_rel, predictions_sha, export_s = self._export(lengths.strata)
        start = time.perf_counter()
        verdicts = _evaluate(
            self.spec,
            predictions_sha,
            [i.id for i in lengths.items],
            complete=run.status == "completed",
            notes=notes,
        )
        evaluation_s = lengths.seconds + time.perf_counter() - start
        if (
            lengths.fingerprint
            and lengths.fingerprint != self.spec.corpus_sha256
            and verdicts is not None
        ):
            verdicts.verdict = "fail"
        peaks, rss = probes.cuda_peaks(run.device), peak_rss_bytes()
        environment_info = environment.manifest_fields()
        work = _work(
            self.spec,
            predictor=self.predictor,
            window=self.window,
            measured=run.spans.get("measured"),
            status=run.status,
            threads=run.threads,
            broken=run.broken,
            gpu_name=environment_info.get("gpu_name"),
            window_share=run.window_share,
        )
        entry = manifest(
            self.spec,
            predictor=self.predictor,
            fingerprint=lengths.fingerprint,
            items=len(lengths.items),
            counts=lengths.counts,
            truncated=lengths.truncated,
            threads=run.threads,
            seed=run.seed,
            env=environment_info,
            measured=work.manifest,
        )
        notes.extend(work.notes)
        cells = run.start_row(entry["manifest_id"])
        put = cells.put
        self._forward_cell(put)
        put("evaluation_s", seconds(evaluation_s))
        self._cold_cell(put)
        export_cell(
            put,
            export_s,
            bool(self.window.items),
            "nothing to export: the measured window was not reached",
        )
        put("items_completed", len(self.window.predictions))
        put(
            "expected_ids",
            len({i.id for i in lengths.items}) if lengths.items else self.spec.corpus_items,
        )
        _quality_cells(put, run.status, verdicts, notes)
        memory_cells(put, run.device, peaks, rss)
        self._token_cells(put, lengths.truncated)
        file_cells(put, predictions_rel, predictions_sha)
        self._closing_cells(put, predictions_rel)
        for name, (figure, why) in work.attempt.items():
            put(name, figure, why)
        columns.finish(cells, NAME)
        if self.predictor is not None:  # the next attempt of a shared process must not find it
            self.predictor.close()
        self.predictor = None
        return run.record(cells, entry)

    def _phase_notes(self) -> None:
        """How the phases ended: the failure, compilations inside the window, the baseline."""
        run, notes = self.run, self.notes
        if run.error is not None:
            notes.append(_failure_note(run, run.error, self.window))
        if self.compiled and self.compiled_in.get("measured"):
            notes.append(
                f"{self.compiled_in['measured']} graph(s) compiled inside the "
                "measured window: measured_s includes compile time"
            )
        baseline = run.baseline_note()
        if baseline is not None:
            notes.append(baseline + " (after collecting and emptying the cache)")
        notes.extend(_compile_notes(self.compiled_in, self.shapes, self.caches))

    def _lengths(self) -> Lengths:
        """Evaluation, part 1: token lengths (strata, truncation) and the fingerprint."""
        start = time.perf_counter()
        items = self.window.items
        if not items:
            try:
                items = corpus.read_corpus(self.run.corpus_path)
            except ToolkitError as exc:
                self.notes.append(f"corpus unreadable: {exc.message}")
        found = Lengths(items, corpus.fingerprint(items) if items else None)
        if found.fingerprint and found.fingerprint != self.spec.corpus_sha256:
            self.notes.append(
                f"corpus fingerprint {found.fingerprint[:12]} differs from the "
                f"campaign's {self.spec.corpus_sha256[:12]}: the corpus changed "
                "during the campaign"
            )
        lengths = (
            self.predictor.token_lengths([i.text for i in items], truncate=False)
            if self.predictor is not None and items
            else None
        )
        if self.predictor is not None and items and lengths is None:
            # An engine without the Protocol's tokenizer: the strata the reference attempt's
            # tokenizer recorded for the same ids, so subgroups compare like with like.
            found.strata = reference_strata(checked_reference(self.spec, []))
            for name in found.strata.values():
                found.counts[name] = found.counts.get(name, 0) + 1
            self.notes.append(
                "strata as the reference attempt's tokenizer counted them"
                if found.strata
                else "no reference attempt yet: strata unknown"
            )
        if lengths is not None:
            found.truncated = sum(n > int(self.variant["max_length"]) for n in lengths)
            bounds = corpus.parse_stratum_bounds(self.spec.protocol.get("stratum_bounds"))
            for item, n in zip(items, lengths, strict=False):
                found.strata[item.id] = corpus.stratum(n, bounds)
                found.counts[found.strata[item.id]] = found.counts.get(found.strata[item.id], 0) + 1
        found.seconds = time.perf_counter() - start
        return found

    def _export(self, strata: dict[str, str]) -> tuple[str | None, str | None, float | None]:
        """Every prediction with its id, wrong ones included (R7): (path, hash, seconds)."""
        window, spec = self.window, self.spec
        if not window.items:
            return None, None, None
        self.emit({"event": "phase", "phase": "export"})
        try:
            start = time.perf_counter()
            fields = corpus.parse_subgroups(spec.protocol.get("subgroups"))
            rows = [
                corpus.prediction_row(window.items[i], p, strata.get(window.items[i].id), fields)
                for i, p in window.predictions
            ]
            sha = corpus.write_predictions(spec.predictions_file, rows)
            export_s = time.perf_counter() - start
            return spec.predictions_file.relative_to(spec.base).as_posix(), sha, export_s
        except OSError as exc:
            self.run.status = "failed" if self.run.status == "completed" else self.run.status
            self.notes.append(f"export failed: {error_text(exc)}")
            return None, None, None

    def _cold_cell(self, put: Put) -> None:
        """The cold pass's seconds, or why there is none."""
        run, cold = self.run, self.cold
        if cold is not None and cold.host_s is not None:
            put("cold_pass_s", seconds(cold.host_s))
        elif self.spec.repetition != 1:
            put("cold_pass_s", None, "measured on repetition 1 only: one cold pass per variant")
        else:
            put("cold_pass_s", None, f"{run.status} during load: the cold pass did not finish")

    def _forward_cell(self, put: Put) -> None:
        """The forward calls' device time (R10): CUDA only, a finished window only."""
        run = self.run
        measured = run.spans.get("measured")
        forward_s = (
            self.forward.total_s()
            if self.forward is not None and measured is not None and measured.device_s is not None
            else None
        )
        if run.device.type != "cuda":
            put("forward_device_s", None, CPU_NO_DEVICE_SPAN)
        elif forward_s is not None:
            put("forward_device_s", seconds(forward_s))
        else:
            put("forward_device_s", None, f"{run.status}: the measured window did not finish")

    def _token_cells(self, put: Put, truncated: int | None) -> None:
        """Padded tokens and padding efficiency of a whole corpus; the truncation count."""
        window, status = self.window, self.run.status
        untokenized = self.predictor.tokens_reason if self.predictor is not None else None
        if untokenized is not None:
            for name in ("padded_tokens", "padding_efficiency", "truncated"):
                put(name, None, untokenized)
            return
        if status == "completed" and window.padded_tokens:
            put("padded_tokens", window.padded_tokens)
            put("padding_efficiency", round(window.real_tokens / window.padded_tokens, 6))
        else:
            reason = (
                f"{status} after {len(window.predictions)} items: token counts cover a "
                "whole corpus only"
            )
            put("padded_tokens", None, reason)
            put("padding_efficiency", None, reason)
        put(
            "truncated",
            truncated,
            None if truncated is not None else "tokenizer not loaded: token lengths unknown",
        )

    def _closing_cells(self, put: Put, predictions_rel: str | None) -> None:
        """The notes, the attention kernels, recompilations inside the window, the seed."""
        run, notes = self.run, self.notes
        if predictions_rel:
            notes.append(f"predictions: {predictions_rel}")
        if run.shared:
            notes.append(SHARED_RSS_NOTE)
            if self.cold is not None and self.cold.host_s is not None:
                notes.append(
                    "cold pass in a process shared with earlier attempts: kernels and plans "
                    "they set up were already there"
                )
        if self.shapes:
            notes.append(warmed_text(padding.parse(self.variant["padding"]), self.shapes))
        if overlap.is_overlapped(self.variant):
            notes.append(overlap.note(run.device))
        notes.append(f"threads {run.threads}; warm-up {run.warmup.text!r}")
        put("notes", "; ".join(notes))
        put("attention_kernels", self.kernels)
        put("recompilations", self.compiled_in.get("measured") if self.compiled else None)
        put("seed", run.seed)


class _Session:
    """The attempt's compilation session, its caches kept for the notes."""

    def __init__(self, attempt: Classification) -> None:
        self.attempt = attempt
        self.context = compilation.session(attempt.compiled)

    def __enter__(self) -> None:
        self.attempt.caches = self.context.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self.context.__exit__(*exc)


def _quality_cells(
    put: Put, status: str, verdicts: evaluation.Evaluation | None, notes: list[str]
) -> None:
    """Ids, metric, agreement with the reference, the verdict and the subgroups' metrics."""
    if verdicts is None:
        reason = "no predictions file: the measured window was not reached"
        for name in ("observed_ids", "ids_match", "metric_value", "reference_agreement"):
            put(name, None, reason)
        verdict_cells(put, status, "not evaluated", None, ids_match=False)
        return
    put("observed_ids", verdicts.ids.observed)
    put("ids_match", layout.YES if verdicts.ids.match else layout.NO)
    put(
        "metric_value",
        None if verdicts.metric is None else round(verdicts.metric, 6),
        verdicts.metric_reason,
    )
    put(
        "reference_agreement",
        None if verdicts.agreement is None else round(verdicts.agreement, 6),
        verdicts.agreement_reason or "no reference comparison",
    )
    notes.extend(verdicts.notes)
    verdict_cells(
        put,
        status,
        verdicts.verdict,
        evaluation.subgroups_text(verdicts.subgroups) or None,
        ids_match=verdicts.ids.match,
    )


def _failure_note(run: AttemptRun, error: BaseException, window: Window) -> str:
    """The note of a failed classification; after a CUDA error other than out-of-memory it
    says why a shared campaign stops, and stops it."""
    where = run.where(len(window.predictions), len(window.items) or run.spec.corpus_items, "items")
    if isinstance(error, KeyboardInterrupt):
        return f"interrupted {where} ({error_text(error)})"
    if isinstance(error, torch.OutOfMemoryError):
        return f"out of memory {where}: {error_text(error)}"
    if isinstance(error, AttemptTimeout):
        return f"timed out {where}: {error}"
    if run.broken and run.shared:
        run.guard.stop_campaign()
        return (
            f"failed {where}: {error_text(error)}, a CUDA error other than out-of-memory: "
            "this process's CUDA context cannot be trusted after it, so the shared "
            "campaign stops here (`--resume` continues in a new process)"
        )
    return f"failed {where}: {error_text(error)}"


def _evaluate(
    spec: AttemptSpec,
    predictions_sha: str | None,
    expected: list[str],
    *,
    complete: bool,
    notes: list[str],
) -> evaluation.Evaluation | None:
    """Read the predictions file back and evaluate it (None when there is no file)."""
    if predictions_sha is None:
        return None
    protocol = spec.protocol
    kinds = evaluation.parse_subgroups(protocol.get("subgroups"))
    rows = read_back(spec, predictions_sha, notes)
    reference = None
    ref, ref_path = spec.reference, checked_reference(spec, notes)
    if ref is not None and ref_path is not None:
        reference = evaluation.load_reference(
            ref_path, ref["variant_id"], ref["attempt_id"], protocol["metric"], kinds
        )
    return evaluation.evaluate(
        rows,
        expected,
        complete=complete,
        metric_name=protocol["metric"],
        threshold=float(protocol["threshold"]),
        tolerance=float(protocol["tolerance"]),
        kinds=kinds,
        reference=reference,
        reference_variant=str(protocol["reference_variant"]),
        variant_id=str(spec.variant["variant_id"]),
    )


def _work(
    spec: AttemptSpec,
    *,
    predictor: Predictor | None,
    window: Window,
    measured: probes.Span | None,
    status: str,
    threads: int,
    broken: bool,
    gpu_name: str | None,
    window_share: float | None,
) -> achieved.Work:
    """FLOPs, rates and utilisation (runner.achieved), and the peak probe, run here after
    every timed phase, only when the window completed on a usable device."""
    variant = spec.variant
    measured_s = measured.host_s if measured is not None else None
    unfinished = (
        None
        if status == "completed" and measured_s
        else f"{status} after {len(window.predictions)} items: FLOPs cover a whole corpus only"
    )
    found = achieved.Work()
    probed, cells = None, None
    peak_reason = f"not probed: the attempt ended {status} (the probe runs after a completed one)"
    if unfinished is None and not broken:
        probed, cells = achieved.probe_cells(
            str(variant["device"]), str(variant["precision"]), threads, gpu_name, spec.campaign_key
        )
        peak_reason = (cells["matmul_peak_flops"][1] or "no peak") if probed is None else ""
    found.manifest = achieved.manifest_values(cells, peak_reason)
    cost, cost_reason = (
        predictor.flop_cost() if predictor is not None else (None, "model not loaded")
    )
    tally = achieved.Tally(
        window.sequences,
        window.real_tokens,
        window.padded_tokens,
        window.real_squares,
        window.padded_squares,
    )
    reprobe = achieved.Reprobe(str(variant["device"]), str(variant["precision"]), threads)
    found.attempt = achieved.work(
        cost,
        cost_reason=cost_reason,
        tally=tally,
        measured_s=measured_s,
        unfinished=unfinished,
        variant=variant,
        measured_peak=probed,
        peak_reason=peak_reason or None,
        reprobe=reprobe,
        window_share=window_share,
    )
    found.notes += [reprobe.note] if reprobe.note else []
    return found


def manifest(
    spec: AttemptSpec,
    *,
    predictor: Predictor | None,
    fingerprint: str | None,
    items: int,
    counts: dict[str, int],
    truncated: int | None,
    threads: int,
    seed: int | None,
    env: dict[str, Any],
    state: str | None = None,
    measured: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The Manifest row: variant, corpus, revisions, environment; id = hash of the content.

    ``state``: the determinism cell when this process's torch state is not the attempt's;
    ``measured``: the peak probe's columns (left out of the id, as ``recorded_at`` is).
    """
    variant = spec.variant
    row = manifest_content(spec, predictor, seed)
    row.update(
        {
            "corpus_sha256": fingerprint or spec.corpus_sha256,
            "corpus_items": items or spec.corpus_items,
            "processing_order": (
                "sorted by token length, ties in file order"
                if variant["length_grouping"] == "sorted"
                else "file order"
            ),
            "strata": (
                corpus.strata_text(
                    counts, corpus.parse_stratum_bounds(spec.protocol.get("stratum_bounds"))
                )
                if counts
                else None
            ),
            "truncated": truncated,
            "determinism": state or reproducibility.state(spec.protocol, threads),
            "compile_setup": (
                compilation.SETUP if variant.get("compile") == "yes" else compilation.NOT_COMPILED
            ),
            "engine": predictor.engine if predictor is not None else engines.engine_of(variant),
            "engine_artifact": predictor.engine_artifact if predictor is not None else None,
        }
    )
    row.update(env)
    return manifest_row(row, measured)
