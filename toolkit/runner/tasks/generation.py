"""Protocol task ``generation``: one attempt, phase by phase, to a journal record.

The phases and the failure rules are the classification attempt's
(:mod:`toolkit.runner.tasks.classification`): load (model, then each distinct batch of the
window once, untimed, so kernels load before timing, R8), warm-up by the protocol's rule,
the measured window (:func:`toolkit.runner.engines.causal_lm.run_window`, R9-R10), export of every
output with
its id and token counts, then the predictions file read back and checked: exact id set
(R7), agreement with the reference variant's outputs and chrF against the corpus's
``reference`` texts when every prompt has one (:mod:`toolkit.runner.tasks.agreement`).

Quality verdict: pass when the ids match, the metric (chrF when declared) reaches the
threshold, the token agreement with the reference variant is at least ``1 - tolerance``,
and chrF and each predeclared subgroup's chrF stay within the tolerance of the reference
variant's, recomputed from its predictions file (R16, the classification rule:
:func:`toolkit.runner.tasks.evaluation.tolerance_failures`; bf16 against fp32 from the same
prompts). Before the reference has a chrF the verdict is ``not evaluated``, as a
classification's.

Beside the classification columns the row fills the generation ones: prompt and generated
tokens, time to first token, decode tokens/s, the KV cache's peak, and decode tokens/s as
a fraction of the bandwidth ceiling (catalog bandwidth on a GPU, the peak probe's copy
bandwidth on a CPU) for the planner's bytes per step (weights + KV cache at the run's batch
and lengths). The FLOP columns are the classification attempt's (:mod:`..instruments.achieved`)
over the decoder's generation count (:mod:`..instruments.flops`): each output's prefill and
decode steps as real FLOPs, each batch's as padded. What cannot be known is empty with its
reason (R12).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from toolkit import layout
from toolkit.evidence import corpus
from toolkit.planner import memory
from toolkit.planner.gpus import load_catalog
from toolkit.plumbing import engines
from toolkit.plumbing.rss import peak_rss_bytes
from toolkit.runner.engines import causal_lm
from toolkit.runner.engines.contract import Generator
from toolkit.runner.engines.registry import load_generator
from toolkit.runner.instruments import (
    achieved,
    compilation,
    environment,
    flops,
    probes,
    reproducibility,
)
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks import agreement, columns, evaluation
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
from toolkit.runner.tasks.predictions import checked_reference, read_back, reference_changed
from toolkit.runner.tasks.process_state import Emit

if TYPE_CHECKING:  # the dispatcher ranks above the task kinds
    from toolkit.runner.attempt import InterruptGuard

#: The Protocol task this kind runs.
NAME = "generation"


def run(spec: AttemptSpec, emit: Emit, guard: InterruptGuard) -> dict[str, Any]:
    """Run one generation attempt (``guard`` its InterruptGuard); return its journal
    record. A failure is a row."""
    attempt = Generation(spec, emit, guard)
    attempt.run.run_steps(attempt)
    return attempt.record()


class Generation:
    """One generation attempt under way: the steps :meth:`AttemptRun.run_steps` runs, then
    export, evaluation, the Manifest and the row (:meth:`record`)."""

    def __init__(self, spec: AttemptSpec, emit: Emit, guard: InterruptGuard) -> None:
        self.spec, self.variant, self.protocol = spec, spec.variant, spec.protocol
        self.run = AttemptRun(spec, emit, guard)
        self.bounds = corpus.parse_stratum_bounds(self.protocol.get("stratum_bounds"))
        self.rule: causal_lm.DecodingRule | None = None
        self.generator: Generator | None = None
        self.window = causal_lm.GenerationWindow()
        self.notes: list[str] = []
        #: Which decode shapes the load phase covered (None until it ran them).
        self.decode_note: str | None = None

    # ---- the timed phases (AttemptRun.run_steps)

    def session(self) -> Any:
        """Read the Protocol's decoding rule, inside the phases (a bad one fails the load)."""
        return _RuleSession(self)

    def load(self) -> None:
        assert self.rule is not None
        self.generator = load_generator(self.variant, self.spec.base, self.rule)
        self.notes.extend(self.generator.engine_notes)
        items = corpus.read_corpus(self.run.corpus_path)
        lengths = [len(i.text) for i in items]  # the engine tokenizes: characters rank them
        on_gpu = self.generator.device.type != "cpu"
        batches = load_batches(items, lengths, int(self.variant["batch_size"]), on_gpu=on_gpu)
        for batch in batches:
            self.generator.generate(batch, causal_lm.GenerationWindow(), lambda d: None)
        self.decode_note = decode_shapes_note(len(batches), on_gpu)

    def phase_done(self, phase: str) -> None:
        """Nothing to count between phases (a generation is not compiled)."""

    def warm_pass(self, items: list[corpus.Item]) -> None:
        assert self.generator is not None
        self.generator.generate(
            items, causal_lm.GenerationWindow(), lambda d: self.run.after_batch(d, len(items))
        )

    def measure(self) -> None:
        assert self.generator is not None
        window = self.window
        window.items = corpus.read_corpus(self.run.corpus_path)
        total = len(window.items)
        self.generator.generate(window.items, window, lambda d: self.run.after_batch(d, total))

    # ---- after the phases

    def record(self) -> dict[str, Any]:
        """Export, evaluation, the Manifest and the row: the attempt's journal record."""
        run, window, notes = self.run, self.window, self.notes
        if run.error is not None:
            notes.append(_failure_note(run, run.error, window))
        baseline = run.baseline_note()
        if baseline is not None:
            notes.append(baseline)
        predictions_rel, predictions_sha, export_s = self._export()
        start = time.perf_counter()
        quality = _evaluate(
            self.spec, predictions_sha, window, complete=run.status == "completed", notes=notes
        )
        evaluation_s = time.perf_counter() - start
        peaks, rss = probes.cuda_peaks(run.device), peak_rss_bytes()
        env = environment.manifest_fields()
        probed, probe_cells = self._probe(env)
        truncated = window.truncated if run.status == "completed" else None
        entry = self._manifest(
            truncated,
            env,
            achieved.manifest_values(probe_cells, f"not probed: {run.status} attempt"),
        )
        cells = run.start_row(entry["manifest_id"])
        put = cells.put
        if run.device.type != "cuda":
            put("forward_device_s", None, CPU_NO_DEVICE_SPAN)
        else:
            put(
                "forward_device_s",
                None,
                "generation attempt: generate() runs many forward "
                "calls; the window's device span is device_s",
            )
        put("evaluation_s", seconds(evaluation_s))
        export_cell(
            put,
            export_s,
            bool(window.items and window.outputs),
            "nothing exported: no output was generated",
        )
        put("items_completed", len(window.outputs))
        put("expected_ids", len(window.items) or self.spec.corpus_items)
        _quality_cells(put, run.status, quality, notes)
        memory_cells(put, run.device, peaks, rss)
        partial = (
            None
            if run.status == "completed"
            else f"{run.status} after {len(window.outputs)} prompts: token counts cover a whole "
            "corpus only"
        )
        for name in ("padded_tokens", "padding_efficiency"):
            put(name, None, partial or "generation attempt: see prompt_tokens and generated_tokens")
        put(
            "truncated",
            truncated,
            None if truncated is not None else partial or "prompts not tokenised",
        )
        file_cells(put, predictions_rel, predictions_sha)
        for name, (value, why) in _work(
            run, self.generator, window, probed, probe_cells, notes
        ).items():
            put(name, value, why)
        _generation_cells(
            put,
            window=window,
            partial=partial,
            device=run.device,
            generator=self.generator,
            variant=self.variant,
            rule=self.rule,
            probed=probed,
        )
        self._closing_cells(put, predictions_rel)
        columns.finish(cells, NAME)
        if self.generator is not None:  # the next attempt of a shared process must not find it
            self.generator.close()
        self.generator = None
        return run.record(cells, entry)

    def _export(self) -> tuple[str | None, str | None, float | None]:
        """Every output (also a partial window's) to its file: (path, hash, seconds)."""
        window, spec = self.window, self.spec
        if not (window.items and window.outputs):
            return None, None, None
        start = time.perf_counter()
        try:
            rows = causal_lm.prediction_rows(
                window, self.bounds, evaluation.parse_subgroups(self.protocol.get("subgroups"))
            )
            sha = corpus.write_predictions(spec.predictions_file, rows)
            path = spec.predictions_file.relative_to(spec.base).as_posix()
            return path, sha, time.perf_counter() - start
        except OSError as exc:
            # Outputs that never reached their file are no result (as for classification).
            self.run.status = "failed" if self.run.status == "completed" else self.run.status
            self.notes.append(f"export failed: {error_text(exc)}")
            return None, None, None

    def _probe(self, env: dict[str, Any]) -> tuple[Any, dict[str, achieved.Cell] | None]:
        """The peak probe of a completed attempt (none for a failed or broken one)."""
        run = self.run
        if run.status != "completed" or run.broken:
            return None, None
        return achieved.probe_cells(
            str(self.variant["device"]),
            str(self.variant["precision"]),
            run.threads,
            env.get("gpu_name"),
            self.spec.campaign_key,
        )

    def _manifest(
        self, truncated: int | None, env: dict[str, Any], measured: dict[str, Any]
    ) -> dict[str, Any]:
        """The Manifest row, with the whole corpus's strata (R3), or none: never a part's."""
        window = self.window
        counts: dict[str, int] = {}
        whole = bool(window.items) and len(window.outputs) == len(window.items)
        for o in window.outputs if whole else ():
            name = corpus.stratum(o.prompt_tokens, self.bounds)
            counts[name] = counts.get(name, 0) + 1
        return _manifest(
            self.spec,
            generator=self.generator,
            rule=self.rule,
            window=window,
            counts=counts,
            bounds=self.bounds,
            truncated=truncated,
            threads=self.run.threads,
            seed=self.run.seed,
            env=env,
            measured=measured,
        )

    def _closing_cells(self, put: Put, predictions_rel: str | None) -> None:
        """The notes (with the decoding rule), no attention kernels or recompilations, the
        seed."""
        run, notes = self.run, self.notes
        if predictions_rel:
            notes.append(f"predictions: {predictions_rel}")
        if run.shared:
            notes.append(SHARED_RSS_NOTE)
        if self.decode_note is not None:
            notes.append(self.decode_note)
        notes.append(
            f"threads {run.threads}; warm-up {run.warmup.text!r}"
            + (f"; decoding {self.rule.text()}" if self.rule else "")
        )
        put("notes", "; ".join(notes))
        put("attention_kernels", None)
        put("recompilations", None)
        put("seed", run.seed)


class _RuleSession:
    """Reads the Protocol's decoding rule when the phases start."""

    def __init__(self, attempt: Generation) -> None:
        self.attempt = attempt

    def __enter__(self) -> None:
        self.attempt.rule = causal_lm.decoding_rule(self.attempt.protocol)

    def __exit__(self, *exc: Any) -> None:
        return None


def _quality_cells(put: Put, status: str, quality: dict[str, Any] | None, notes: list[str]) -> None:
    """Ids, metric, the agreements with the reference, the verdict and the subgroups."""
    if quality is None:
        reason = "no predictions file: no output was generated"
        for name in (
            "observed_ids",
            "ids_match",
            "metric_value",
            "reference_agreement",
            "exact_agreement",
            "token_agreement",
        ):
            put(name, None, reason)
        verdict_cells(put, status, "not evaluated", None, ids_match=False)
        return
    put("observed_ids", quality["observed"])
    put("ids_match", layout.YES if quality["ids_match"] else layout.NO)
    put("metric_value", quality["metric"], quality["metric_reason"])
    agreed = quality["agreement"]
    why = quality["agreement_reason"]
    put("reference_agreement", None if agreed is None else round(agreed.tokens, 6), why)
    put("exact_agreement", None if agreed is None else round(agreed.exact, 6), why)
    put("token_agreement", None if agreed is None else round(agreed.tokens, 6), why)
    notes.extend(quality["notes"])
    verdict_cells(
        put, status, quality["verdict"], quality["subgroups"], ids_match=quality["ids_match"]
    )


def _failure_note(run: AttemptRun, error: BaseException, window: causal_lm.GenerationWindow) -> str:
    """The note of a failed generation: its kind, where, the error. A CUDA error other than
    out-of-memory stops a shared campaign (the note does not say so)."""
    where = run.where(len(window.outputs), len(window.items) or run.spec.corpus_items, "prompts")
    kind = (
        "interrupted"
        if isinstance(error, KeyboardInterrupt)
        else "out of memory"
        if isinstance(error, torch.OutOfMemoryError)
        else "timed out"
        if isinstance(error, AttemptTimeout)
        else "failed"
    )
    if run.broken and run.shared:
        run.guard.stop_campaign()
    return f"{kind} {where}: {error_text(error)}"


def _work(
    run: AttemptRun,
    generator: Generator | None,
    window: causal_lm.GenerationWindow,
    probed: Any,
    probe_cells: dict[str, achieved.Cell] | None,
    notes: list[str],
) -> dict[str, achieved.Cell]:
    """FLOPs, rates and utilisation (runner.achieved, the classification attempt's rule) of
    the measured window's generation (runner.flops), against the peak probed after it (or
    re-probed, which ``notes`` then says)."""
    measured = run.spans.get("measured")
    measured_s = measured.host_s if measured is not None else None
    status = run.status
    unfinished = (
        None
        if status == "completed" and measured_s
        else f"{status} after {len(window.outputs)} prompts: FLOPs cover a whole corpus only"
    )
    peak_reason = None
    if probed is None:
        peak_reason = (
            probe_cells["matmul_peak_flops"][1]
            if probe_cells is not None
            else f"not probed: the attempt ended {status} (the probe runs after a completed one)"
        )
    cost, cost_reason = (
        generator.flop_cost() if generator is not None else (None, "model not loaded")
    )
    variant = run.spec.variant
    reprobe = achieved.Reprobe(str(variant["device"]), str(variant["precision"]), run.threads)
    cells = achieved.work(
        cost,
        cost_reason=cost_reason,
        tally=flop_tally(window),
        measured_s=measured_s,
        unfinished=unfinished,
        variant=run.spec.variant,
        measured_peak=probed,
        peak_reason=peak_reason,
        reprobe=reprobe,
        window_share=run.window_share,
    )
    notes += [reprobe.note] if reprobe.note else []
    return cells


def flop_tally(window: causal_lm.GenerationWindow) -> achieved.Tally:
    """The window's passes: the real ones each output needs, the padded ones each batch ran
    (every row to the batch's last step, from its padded width)."""
    real = [flops.generation_passes(o.prompt_tokens, len(o.token_ids)) for o in window.outputs]
    padded = [(b.rows, flops.generation_passes(b.width, b.steps)) for b in window.batches]
    return achieved.Tally(
        sequences=sum(p.forwards for p in real),
        real_tokens=sum(p.tokens for p in real),
        padded_tokens=sum(rows * p.tokens for rows, p in padded),
        real_squares=sum(p.pairs for p in real),
        padded_squares=sum(rows * p.pairs for rows, p in padded),
        padded_sequences=sum(rows * p.forwards for rows, p in padded),
    )


def decode_shapes_note(batches: int, on_gpu: bool) -> str:
    """Which decode shapes (prompt widths, KV lengths) the load phase covered, for the notes:
    a declared warm-up on the corpus's own prompts, the engine's cache growing as it decodes
    (torch: transformers' dynamic cache); neither a static cache nor buckets."""
    which = "the first, the longest and the last batch" if on_gpu else "the first batch"
    return (
        f"decode shapes: no static cache or buckets; load ran {batches} batch(es) of the corpus's own "
        f"prompts ({which}) to its last new token; other prompt widths are first met in the "
        "window"
    )


def load_batches(
    items: list[corpus.Item], lengths: list[int], size: int, *, on_gpu: bool
) -> list[list[corpus.Item]]:
    """The load phase's untimed passes: the first batch; on a GPU also the ``size`` longest
    prompts and the last, partial batch, each once, so the kernels (and cuDNN's plans) of the
    window's widest and narrowest batches load here, not inside the window (the first
    batch's width alone left them to the first window). On the CPU
    there is nothing to load: the first batch only. ``lengths``: each prompt's length (the
    caller's measure: characters, as the engine tokenizes)."""
    batches = [items[:size]]
    if not on_gpu:
        return batches
    longest = sorted(range(len(items)), key=lengths.__getitem__)[-size:]
    rest = len(items) % size
    for batch in ([items[i] for i in sorted(longest)], items[-rest:] if rest else []):
        if batch and batch not in batches:
            batches.append(batch)
    return batches


def _manifest(
    spec: AttemptSpec,
    *,
    generator: Generator | None,
    rule: causal_lm.DecodingRule | None,
    window: causal_lm.GenerationWindow,
    counts: dict[str, int],
    bounds: tuple[int, ...],
    truncated: int | None,
    threads: int,
    seed: int | None,
    env: dict[str, Any],
    measured: dict[str, Any],
) -> dict[str, Any]:
    """The Manifest row (the classification attempt's columns; the decoding rule and padding
    side in processing_order); id = hash of the content, the probe's columns left out but an
    unprobed attempt set apart (:func:`manifest_row`)."""
    variant, protocol = spec.variant, spec.protocol
    order = (
        "sorted by prompt tokens, ties in file order"
        if variant.get("length_grouping") == "sorted"
        else "file order"
    )
    if rule is not None:
        order += f"; padding side {variant.get('padding_side') or 'left'}; decoding {rule.text()}"
    row = manifest_content(spec, generator, seed)
    row.update(
        {
            "corpus_sha256": corpus.fingerprint(window.items)
            if window.items
            else spec.corpus_sha256,
            "corpus_items": len(window.items) or spec.corpus_items,
            "processing_order": order,
            "strata": corpus.strata_text(counts, bounds) if counts else None,
            "truncated": truncated,
            "determinism": reproducibility.state(protocol, threads),
            "compile_setup": compilation.NOT_COMPILED,
            "engine": generator.engine if generator is not None else engines.engine_of(variant),
            "engine_artifact": generator.engine_artifact if generator is not None else None,
        }
    )
    row.update(env)
    return manifest_row(row, measured)


def _generation_cells(
    put: Any,
    *,
    window: causal_lm.GenerationWindow,
    partial: str | None,
    device: torch.device,
    generator: Generator | None,
    variant: dict[str, Any],
    rule: causal_lm.DecodingRule | None,
    probed: Any,
) -> None:
    """The generation columns: token counts, TTFT, decode rate, KV cache, ceiling."""
    put("prompt_tokens", None if partial else window.prompt_tokens, partial)
    put("generated_tokens", None if partial else window.generated_tokens, partial)
    ttft = window.ttft_s()
    put(
        "ttft_s",
        None if partial or ttft is None else round(ttft, 6),
        partial or "no batch generated a token",
    )
    rate = window.decode_tokens_per_s()
    put(
        "decode_tokens_per_s",
        None if partial or rate is None else round(rate, 3),
        partial or "no decode step: every output ended at its first token",
    )
    put(
        "kv_cache_peak_bytes",
        None if partial else window.kv_cache_peak_bytes,
        partial
        or (
            generator.kv_cache_reason
            if generator is not None
            else "generate() returned no KV cache tensors"
        ),
    )
    ceiling, why = (
        (None, partial)
        if partial
        else bandwidth_ceiling(generator, variant, rule, window, device, probed)
    )
    put("bandwidth_ceiling_tokens_per_s", None if ceiling is None else round(ceiling, 3), why)
    if ceiling is not None and rate is not None:
        put("decode_ceiling_fraction", round(rate / ceiling, 6))
    else:
        put("decode_ceiling_fraction", None, why or "no decode tokens/s")


def bandwidth_ceiling(
    generator: Generator | None,
    variant: dict[str, Any],
    rule: causal_lm.DecodingRule | None,
    window: causal_lm.GenerationWindow,
    device: torch.device,
    probed: Any,
) -> tuple[float | None, str | None]:
    """Decode tokens/s the memory bandwidth allows at the run's batch (the planner's rule:
    each step reads the weights and every row's KV cache once): batch * bandwidth /
    (weights + batch * KV per sequence), from the planner's estimate at the longest prompt
    plus max_new_tokens. Bandwidth: the catalog's for a GPU (gpu_slug), the peak probe's
    copy rate on a CPU."""
    if generator is None or rule is None:
        return None, "model not loaded"
    try:
        shape = memory.shape_from_config(Path(generator.folder) / "config.json")
        longest = max((o.prompt_tokens for o in window.outputs), default=0)
        batch = int(variant["batch_size"])
        est = memory.estimate(
            shape,
            precision=str(variant["precision"]),
            seq_len=max(longest + rule.max_new_tokens, 1),
            batch=batch,
        )
    except Exception as exc:  # noqa: BLE001 - no planner shape: the cell says why
        return None, f"planner cannot size this model: {error_text(exc)}"
    if device.type == "cuda":
        bandwidth, why = _catalog_bandwidth(str(variant.get("gpu_slug") or ""))
    else:
        bandwidth = getattr(probed, "bandwidth", None) if probed is not None else None
        why = None if bandwidth else "no copy bandwidth measured by the peak probe"
    if not bandwidth:
        return None, why
    step_bytes = est.term("weights").bytes + batch * est.kv_per_sequence
    return batch * float(bandwidth) / step_bytes, None


def _catalog_bandwidth(slug: str) -> tuple[float | None, str | None]:
    if not slug:
        return None, "cuda variant without gpu_slug: no catalog bandwidth"
    for gpu in load_catalog():
        if gpu.slug == slug:
            return float(gpu.bandwidth_gbps) * 1e9, None
    return None, f"gpu_slug {slug!r} not in the GPU catalog"


def _against_reference(
    spec: AttemptSpec,
    rows: list[dict[str, Any]],
    texts: dict[str, Any],
    kinds: Sequence[str],
    notes: list[str],
) -> tuple[agreement.Agreement | None, str | None, evaluation.Reference | None]:
    """The outputs against the reference variant's (R16): the agreement, or why there is
    none, and the reference's chrF recomputed from its file (None without a reference)."""
    protocol = spec.protocol
    chrf_declared = str(protocol.get("metric")) == "chrf"
    found: agreement.Agreement | None = None
    agreement_reason: str | None = "no reference comparison"
    reference: evaluation.Reference | None = None
    ref = spec.reference
    is_reference = str(spec.variant["variant_id"]) == str(protocol.get("reference_variant"))
    ref_path = checked_reference(spec, notes)
    if ref is None:
        agreement_reason = "no completed attempt of the reference variant yet"
    elif ref_path is None:
        agreement_reason = reference_changed(ref)
    else:
        ref_rows = corpus.read_predictions(ref_path)
        # The reference's chrF, overall and per subgroup, recomputed from its file against
        # the same corpus references, as a classification's reference metric is.
        ref_chrf, _, ref_groups = (
            agreement.chrf_scores(ref_rows, texts, kinds) if chrf_declared else (None, None, {})
        )
        reference = evaluation.Reference(
            str(ref["variant_id"]),
            str(ref["attempt_id"]),
            {str(r["id"]): str(r["prediction"]) for r in ref_rows},
            ref_chrf,
            ref_groups,
        )
        if not is_reference:
            found, agreement_reason = agreement.agreement(rows, ref_rows)
        if found is not None:
            notes.append(
                f"agreement with {ref['variant_id']} ({ref['attempt_id']}): "
                f"{found.exact:.1%} identical outputs, {found.tokens:.1%} tokens "
                f"over {found.compared} prompts"
            )
    if is_reference:
        agreement_reason = "this is the reference variant"
    return found, agreement_reason, reference


def _evaluate(
    spec: AttemptSpec,
    predictions_sha: str | None,
    window: causal_lm.GenerationWindow,
    *,
    complete: bool,
    notes: list[str],
) -> dict[str, Any] | None:
    """Read the predictions file back: ids (R7), chrF, agreement with the reference (R16)."""
    if predictions_sha is None:
        return None
    protocol = spec.protocol
    rows = read_back(spec, predictions_sha, notes)
    expected = [i.id for i in window.items]
    ids = evaluation.check_ids(expected, [str(r["id"]) for r in rows])
    if not ids.match:
        notes.append(ids.notes())
    texts = {i.id: i.fields.get("reference") for i in window.items}
    kinds = evaluation.parse_subgroups(protocol.get("subgroups"))
    chrf_declared = str(protocol.get("metric")) == "chrf"
    metric, metric_reason = None, None
    by_group: dict[str, tuple[float, int]] = {}
    if not chrf_declared:
        metric_reason = (
            f"metric {protocol.get('metric')!r} is a classification metric: a "
            "generation protocol declares chrf"
        )
    elif not complete:
        metric_reason = "the window did not complete: chrF covers a whole corpus only"
    else:
        metric, metric_reason, by_group = agreement.chrf_scores(rows, texts, kinds)
    found, agreement_reason, reference = _against_reference(spec, rows, texts, kinds, notes)
    is_reference = str(spec.variant["variant_id"]) == str(protocol.get("reference_variant"))
    verdict = "pass"
    reasons = []
    unchecked = None
    if not complete or not ids.match:
        verdict = "fail"
        reasons.append("incomplete window or ids differ")
    threshold = _number(protocol.get("threshold"))
    if metric is not None and threshold is not None and metric < threshold:
        verdict = "fail"
        reasons.append(f"chrF {metric:.4f} below threshold {threshold}")
    tolerance = _number(protocol.get("tolerance"))
    if found is not None and tolerance is not None and found.tokens < 1 - tolerance:
        verdict = "fail"
        reasons.append(
            f"token agreement {found.tokens:.4f} below 1 - tolerance {1 - tolerance:.4f}"
        )
    if metric is not None and tolerance is not None and complete and ids.match:
        # R16, the classification rule (one implementation): chrF and every predeclared
        # subgroup's within the tolerance of the reference variant's.
        below, unchecked = evaluation.tolerance_failures(
            "chrF", metric, by_group, reference, str(protocol.get("reference_variant")), tolerance
        )
        if below:
            verdict = "fail"
            reasons.extend(below)
    if reasons:
        notes.append("quality: " + "; ".join(reasons))
    elif unchecked and not is_reference:
        verdict = "not evaluated"
        notes.append(unchecked)
    return {
        "observed": ids.observed,
        "ids_match": ids.match,
        "metric": None if metric is None else round(metric, 6),
        "metric_reason": metric_reason,
        "agreement": found,
        "agreement_reason": agreement_reason if found is None else None,
        "verdict": verdict,
        "notes": [],
        "subgroups": evaluation.subgroups_text(by_group) or None,
    }


def _number(value: Any) -> float | None:
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None
