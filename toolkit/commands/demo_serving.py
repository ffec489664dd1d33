"""The serving demo: a rate sweep on the sample causal LM, served by ``transformers serve``.

The endpoint's address is known only once its server listens, so the workbook is built here
rather than copied: the money sheets of samples/example_generation.xlsx (the shipped
tariffs, the demo host's EXAMPLE prices and rental, the schedule), an EXAMPLE metered price
for the demo host (what a cost per million tokens multiplies), a serving Protocol over the
sample prompts, and two variants, one per request rate, on the local endpoint; locked
before any request. No torch and no httpx here.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from toolkit.errors import UsageError
from toolkit.evidence import locking
from toolkit.plumbing.atomic import write_text
from toolkit.plumbing.shipped import SAMPLES, shipped
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

NAME = "example_serving.xlsx"
PROMPTS = "prompts.jsonl"
#: The server's log, kept beside the workbook.
SERVER_LOG = "transformers-serve.log"
#: The two rates of the sweep (requests per second) and the requests each attempt sends:
#: a CPU serves the sample model a request every second or two, so the low rate should
#: meet the targets and the high one show the queue growing.
RATES = (0.5, 2.0)
REQUESTS = {False: 16, True: 6}
REPETITIONS = {False: 2, True: 1}
PROMPT_LINES = 40
MONEY_SHEETS = ("Tariffs", "Rentals", "Schedule")
EXAMPLE_SOURCE = "EXAMPLE figure typed for the demo: not a quote, not a measurement"
#: What one hour of the demo host costs, metered: the price the cost per token multiplies.
DEMO_METER: dict[str, Any] = {
    "catalog_date": "2026-12-05",
    "gpu_name": "CPU host of the demo (example price)",
    "cards_per_lot": 1,
    "market": "on-demand",
    "price_per_hour": Decimal("0.20"),
    "billing_seconds": 1,
    "source": EXAMPLE_SOURCE,
}

PROTOCOL: dict[str, Any] = {
    "scenario": "Serving: the sample causal LM behind an OpenAI-compatible endpoint "
    "(transformers serve on this machine's CPU), the opening words of Jane Austen paragraphs "
    "sent as streamed completions at a declared rate; which rate does it carry within the "
    "latency targets, and what does a million output tokens cost there. A demo on a CPU, "
    "with EXAMPLE prices.",
    "corpus_path": PROMPTS,
    "tuning_data": "calibration.jsonl",
    "validated_corpus_definition": "every measured request completed; chrF of the outputs "
    "against the reference continuations at least the threshold; word agreement with the "
    "reference variant at least 1 - tolerance",
    "metric": "chrf",
    "threshold": 0.01,
    "tolerance": 0.5,
    "reference_variant": "rate-0.5",
    "subgroups": "none",
    "warmup_rule": "none",
    "repetitions": 2,
    "order_rotation": "rotate",
    "process_policy": "shared",
    "timing_boundary": "each request from its send to its stream's end, on the client's "
    "clock; the window from the first measured send to the last end",
    "exclusion_rule": "only a documented external cause, for every variant alike",
    "seeds": "0",
    "determinism": "greedy requests (temperature 0)",
    "reproduction_target": "business quality",
    "expected_outputs": 1,
    "deadline": "2026-12-11T09:00+01:00",
    "task": "serving",
    "max_new_tokens": 8,
    "arrival": "poisson",
    "request_count": 16,
    "warmup_requests": 2,
    "latency_targets": "ttft_p99_ms<=4000; tpot_p99_ms<=1000",
    "agreement_measure": "token",
    "api": "completions",  # the sample causal LM has no chat template
}


def prepare(directory: Path, endpoint: str, model: str, quick: bool) -> Path:
    """Write the prompts and the locked serving workbook for ``endpoint`` serving ``model``
    into ``directory``; return the workbook. Refuses a folder holding one already."""
    samples = shipped(SAMPLES)
    target = directory / NAME
    if target.exists():
        raise UsageError(
            f"{target} already exists: the demo does not overwrite a campaign",
            hint="give another folder: `iteralab demo --task serving OTHER_DIR`",
        )
    directory.mkdir(parents=True, exist_ok=True)
    lines = (samples / PROMPTS).read_text(encoding="utf-8").splitlines(keepends=True)
    write_text(directory / PROMPTS, "".join(lines[:PROMPT_LINES]))
    write_text(directory / "calibration.jsonl", (samples / "calibration.jsonl").read_text())
    data = _campaign(store.read(samples / "example_generation.xlsx"), endpoint, model, quick)
    locking.lock(data, target)
    store.create(data, target)
    return target


def _campaign(example: WorkbookData, endpoint: str, model: str, quick: bool) -> WorkbookData:
    data = WorkbookData.empty()
    for sheet in MONEY_SHEETS:
        for row in example.tables[sheet]:
            data.append(sheet, dict(row))
    host = example.tables["Rentals"][0]
    data.append("Tariffs", {**DEMO_METER, "gpu_slug": host["gpu_slug"]})
    protocol = {**PROTOCOL, "request_count": REQUESTS[quick], "repetitions": REPETITIONS[quick]}
    if quick:
        protocol["scenario"] += (
            f" QUICK DEMO: {REQUESTS[quick]} requests per attempt, one repetition; a smoke "
            "run, not the comparison."
        )
    data.forms["Protocol"].update(protocol)
    for rate in RATES:
        data.append("Variants", _variant(rate, f"{endpoint}#{model}", host))
    return data


def _variant(rate: float, model_path: str, host: dict[str, Any]) -> dict[str, Any]:
    """The Variants row of one request rate on the endpoint, priced as the demo host."""
    return {
        "variant_id": f"rate-{rate:g}",
        "series": 1,
        "description": f"{rate:g} requests per second, Poisson arrivals",
        "model_path": model_path,
        "engine": "openai-http",
        "request_rate": rate,
        "precision": "fp32",
        "quantization": "none",
        "batch_size": 1,
        "device": "cpu",
        "gpu_slug": host["gpu_slug"],
        "rental_id": host["rental_id"],
        "padding": "dynamic",
        "max_length": 96,
        "length_grouping": "none",
        "compile": "no",
        "attention_backend": "sdpa",
    }
