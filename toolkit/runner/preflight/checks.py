"""The pre-flight of a campaign: every variant's model, head and engine, before the clock.

For each distinct model (model_path, head_path, device, precision, quantization, attention
backend, compile): resolve its files (a hub id must be in the local cache when offline, a
folder must exist), check that the head was fitted on this encoder (the SHA-256 of its
files, recorded in head.json), load it once and run one batch per variant that uses it,
twice (the second call is timed; the first paid one-off costs), as the attempts will. A
cuda variant on a machine without CUDA is resolved and its head checked, not loaded.
Every problem is collected, then raised at once naming the variants
(:class:`PreflightError`); nothing is written. What the timings are worth for an estimate
is :mod:`toolkit.runner.preflight.estimate`'s business.
"""

from __future__ import annotations

import gc
import time
import traceback
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import torch

from toolkit.errors import ModelError, ToolkitError
from toolkit.evidence import corpus
from toolkit.plumbing import engines
from toolkit.runner import decoding
from toolkit.runner.engines.causal_lm import GenerationWindow
from toolkit.runner.engines.model import model_files, read_head
from toolkit.runner.engines.plugin import PredictorError
from toolkit.runner.engines.registry import load_classifier, load_generator
from toolkit.runner.instruments import compilation, probes
from toolkit.runner.preflight.heard import SignalsHeard
from toolkit.runner.preflight.result import NO_CUDA_HERE, PreflightError, Problem, VariantCheck
from toolkit.runner.tasks.classification import Window, run_batches

#: Why a serving variant's model is not loaded here.
SERVED = (
    "served by its endpoint: nothing loads here; each attempt asks the endpoint who it is "
    "before its first request"
)
#: The Variants columns that make two variants load the same model.
MODEL_KEY = (
    "engine",
    "model_path",
    "head_path",
    "device",
    "precision",
    "quantization",
    "attention_backend",
    "compile",
)


def engine(variant: dict[str, Any], task: str) -> str:
    """How the variant's model runs, in words: the engine the runner uses for it."""
    name = engines.engine_of(variant)
    quantization = str(variant.get("quantization") or "none")
    if name != "torch":
        extra = f", {quantization}" if quantization != "none" else ""
        return f"{name}, {variant.get('device')}, {variant.get('precision')}{extra}"
    kind = (
        "causal LM (transformers generate, greedy)"
        if task == "generation"
        else "encoder + linear head (transformers, mean pooling)"
        if variant.get("head_path")
        else "sequence classifier (transformers)"
    )
    extras = [
        str(variant.get("device")),
        str(variant.get("precision")),
        f"attention {variant.get('attention_backend')}",
    ]
    if quantization != "none":
        extras.append(quantization)
    if variant.get("compile") == "yes":
        extras.append("torch.compile")
    return f"{kind}, {', '.join(extras)}"


def check(
    variants: Sequence[dict[str, Any]],
    protocol: dict[str, Any],
    workbook: Path,
    *,
    items: Sequence[corpus.Item],
    locked: bool,
    progress: Callable[[str], None] = lambda _: None,
    labels: Collection[str] = (),
) -> list[VariantCheck]:
    """Pre-flight ``variants`` of ``workbook`` (paths relative to its folder) on the first
    items of the corpus; one VariantCheck each, in order. ``labels``: the corpus's label
    set, which a classifier's predictions must stay in (empty: an unlabelled corpus, not
    checked). Raises PreflightError listing every problem found."""
    base = workbook.parent
    task = decoding.task_of(protocol)
    rule = decoding.decoding_rule(protocol) if task == "generation" else None
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for v in variants:
        groups.setdefault(tuple(str(v.get(c) or "") for c in MODEL_KEY), []).append(v)
    checks = {
        str(v["variant_id"]): VariantCheck(str(v["variant_id"]), engine(v, task)) for v in variants
    }
    problems: list[Problem] = []
    cuda = torch.cuda.is_available()
    with SignalsHeard() as heard:
        for members in groups.values():
            if task == "serving":  # the model is the endpoint's: each attempt asks it first
                for v in members:
                    checks[str(v["variant_id"])].not_loaded = SERVED
                continue
            try:
                problem = _check_group(
                    members,
                    base,
                    items,
                    rule=rule,
                    checks=checks,
                    labels=labels,
                    cuda=cuda,
                    progress=progress,
                )
            except (KeyboardInterrupt, SystemExit) as exc:
                problem = _stray_exit(members, exc, heard)
            if problem is not None:
                problems.append(problem)
    if problems:
        raise PreflightError(problems, locked, str(workbook))
    return [checks[str(v["variant_id"])] for v in variants]


def _check_group(
    members: list[dict[str, Any]],
    base: Path,
    items: Sequence[corpus.Item],
    *,
    rule: Any,
    checks: dict[str, VariantCheck],
    labels: Collection[str],
    cuda: bool,
    progress: Callable[[str], None],
) -> Problem | None:
    """Load one model and run its variants' batches; the problem found, or None."""
    first, ids = members[0], tuple(str(v["variant_id"]) for v in members)
    try:
        if first.get("device") == "cuda" and not cuda:
            _resolve(first, base)
            for vid in ids:
                checks[vid].not_loaded = NO_CUDA_HERE
            return None
        progress(f"loading {first.get('model_path')} for {', '.join(ids)}")
        _load_and_run(members, base, items, rule, checks, labels)
    except ToolkitError as exc:  # its message may name the variant: the Problem does
        return Problem(ids, exc.message.removeprefix(f"variant {ids[0]}: "), exc.hint)
    except PredictorError as exc:  # a python: predictor's batch broke the contract
        return Problem(
            ids,
            str(exc)[:300],
            "predict(records) returns one {'id': ..., 'label': ...} per record of "
            "its batch: see the contract in docs/engines.md",
        )
    except Exception as exc:  # noqa: BLE001 - user code may raise anything: a refusal
        name = engines.engine_of(first)
        if name.startswith(engines.PYTHON_PREFIX):
            return _user_code_failed(ids, name, exc)
        if isinstance(exc, (RuntimeError, ValueError, OSError)):  # a batch that does not run
            return Problem(
                ids,
                f"{type(exc).__name__}: {_one_line(exc)}",
                "check batch_size, max_length, device and precision",
            )
        raise  # the toolkit's own fault: its traceback is the report
    return None


def _stray_exit(
    members: list[dict[str, Any]], exc: KeyboardInterrupt | SystemExit, heard: SignalsHeard
) -> Problem:
    """A KeyboardInterrupt or SystemExit out of a ``python:`` predictor while no Ctrl-C or
    SIGTERM reached the process: its own code raised it, a refusal naming that code (as an
    attempt's row does). Raised again otherwise: the run is being stopped."""
    name = engines.engine_of(members[0])
    if heard.signalled or not heard.listening or not name.startswith(engines.PYTHON_PREFIX):
        raise exc
    return _user_code_failed(tuple(str(v["variant_id"]) for v in members), name, exc)


def _user_code_failed(ids: tuple[str, ...], engine_name: str, exc: BaseException) -> Problem:
    """A ``python:`` predictor that raised while imported, built or run on its one batch:
    the exception's type, message and the line that raised it, as a refusal."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = (
        f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno}, in {frames[-1].name})"
        if frames
        else ""
    )
    said = _one_line(exc)
    stray = " with no Ctrl-C pressed" if isinstance(exc, KeyboardInterrupt) else ""
    return Problem(
        ids,
        f"{engine_name} raised {type(exc).__name__}{stray}{': ' + said if said else ''}{where}",
        f"the error is in {engine_name.removeprefix(engines.PYTHON_PREFIX)}'s code: import "
        "it, build it and call predict() on a few records by hand to see its traceback (the "
        "contract: docs/engines.md)",
    )


def _one_line(exc: BaseException) -> str:
    """The exception's message on one line, at most 300 characters."""
    return " ".join(str(exc).split())[:300]


def _resolve(variant: dict[str, Any], base: Path) -> None:
    """The model's files (ModelError for a hub id not cached offline, a missing folder) and
    the head's files and encoder hashes, without loading anything (a ``python:`` predictor
    names no model files: importing it is its load)."""
    if engines.engine_of(variant).startswith(engines.PYTHON_PREFIX):
        return
    files = model_files(str(variant["model_path"]), base)
    if variant.get("head_path"):
        read_head(str(variant["head_path"]), base, files.hashes)


def _load_and_run(
    members: list[dict[str, Any]],
    base: Path,
    items: Sequence[corpus.Item],
    rule: decoding.DecodingRule | None,
    checks: dict[str, VariantCheck],
    labels: Collection[str] = (),
) -> None:
    """Load the members' model once, run one batch of each member's size, timed; a
    compiled model inside a compile session, as an attempt's (fresh cache folders removed
    after it, dynamo reset, compiling's expected warnings only), so the pre-flight leaves
    no compiled graph or cache behind for the attempts."""
    with compilation.session(members[0].get("compile") == "yes"):
        began = time.perf_counter()
        device = torch.device(str(members[0]["device"]))
        loaded: Any = (
            load_generator(members[0], base, rule) if rule else load_classifier(members[0], base)
        )
        load_s = time.perf_counter() - began
        # An engine's one-off conversion (ONNX export, CTranslate2): the load phase's by the
        # engine's definition, carried once per model by its first variant.
        checks[str(members[0]["variant_id"])].conversion_s = getattr(loaded, "conversion_s", 0.0)
        try:
            for v in members:
                size = min(int(v["batch_size"]), len(items))
                batch = list(items[:size])
                first = time.perf_counter()
                window = Window()
                for _ in range(2):  # the first call pays one-off costs; the second is timed
                    _synchronize(device)
                    start = time.perf_counter()
                    window = Window()
                    if rule is not None:
                        loaded.generate(batch, GenerationWindow(), lambda _: None)
                    else:
                        run_batches(loaded, v, batch, window, lambda _: None)
                    _synchronize(device)
                end = time.perf_counter()
                if rule is None:
                    predicted = [label for _, label in window.predictions]
                    _refuse_foreign_labels(v, _vocabulary(loaded), predicted, labels)
                check = checks[str(v["variant_id"])]
                check.load_s, check.batch_s, check.batch_items = load_s, end - start, size
                check.work_s = end - first
        finally:
            loaded.close()
            del loaded
            gc.collect()
            probes.release_memory(device, cuda=device.type == "cuda")


def _vocabulary(predictor: Any) -> list[str] | None:
    """The labels a transformers classifier can predict (its id2label, or its head's), None
    for an engine that declares none (a ``python:`` predictor, ONNX, ...)."""
    loaded = getattr(predictor, "loaded", None)
    labels = getattr(loaded, "labels", None)
    return [str(label) for label in labels] if isinstance(labels, list) else None


def _refuse_foreign_labels(
    variant: dict[str, Any],
    vocabulary: list[str] | None,
    predicted: Sequence[str],
    labels: Collection[str],
) -> None:
    """ModelError when a classifier answers in labels the corpus does not use: a model whose
    labels do not include the corpus's (LABEL_0, LABEL_1 of a head never fitted), or, for an
    engine that declares no labels, a sample answered wholly outside the corpus's label set.
    Every such prediction would count as wrong: a format error, not a quality result. A model
    may know labels a corpus (or a slice of one) lacks: some answers outside it are allowed."""
    corpus_labels = sorted({str(label) for label in labels})
    if not corpus_labels:
        return  # an unlabelled corpus: nothing to hold the answers against
    if vocabulary is not None:
        missing = [label for label in corpus_labels if label not in vocabulary]
        if not missing:
            return
        said = f"can only predict {_some(vocabulary)}, and the corpus's {_some(missing)} are not among them"
    else:
        foreign = sorted({str(p) for p in predicted} - set(corpus_labels))
        if not foreign or len(foreign) < len({str(p) for p in predicted}):
            return  # some answers are the corpus's labels: the format is right
        said = f"predicts {_some(foreign)}, outside the corpus's label set ({_some(corpus_labels)})"
    raise ModelError(
        f"variant {variant['variant_id']}: {said}",
        hint="use a model or head whose labels are the corpus's (its config's id2label, or "
        "the labels in head.json), or correct the corpus's labels",
    )


def _some(labels: Sequence[str], most: int = 8) -> str:
    """Labels quoted, the first ``most`` of them."""
    shown = ", ".join(repr(label) for label in labels[:most])
    return shown + (f" and {len(labels) - most} more" if len(labels) > most else "")


def _synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so the host clock spans the batch (R10)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
