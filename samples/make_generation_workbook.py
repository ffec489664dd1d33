#!/usr/bin/env python3
"""Build samples/example_generation.xlsx: the generation campaign of the sample, filled and locked.

Protocol (task generation): continue the 200 prompts of prompts.jsonl (opening words of
paragraphs of corpus.jsonl) with the sample causal LM in causal_lm/ (trained on
calibration.jsonl only, R2), greedy, at most 16 new tokens, stopping at the end-of-sequence
token; a prompt past the variant's max_length is truncated and counted (R3). Quality: chrF
against each prompt's reference continuation at least 0.05, and token agreement with the
reference variant b4-fp32 at least 1 - 0.15 (R16).
Variants: series 1 = batch 4, 8, 16 in fp32 (batch is the only variable); series 2 = batch 8
in bf16; series 3 = batch 8 fp32 padded on the right (a declared variant whose outputs the
quality check compares). Tariffs, rental and schedule: those of example_campaign.xlsx.

Usage: python samples/make_generation_workbook.py [OUT.xlsx]   (overwrites OUT)
`iteralab demo --task generation` copies the committed file and runs it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import make_example_workbook as example  # noqa: E402

from toolkit.workbook.model import WorkbookData  # noqa: E402

OUT = HERE / "example_generation.xlsx"

PROTOCOL: dict[str, Any] = {
    **example.PROTOCOL,
    "scenario": "Offline batch generation over a fixed corpus of prompts: the opening words of "
    "200 paragraphs of Jane Austen's novels, each continued by a small causal LM, processed as "
    "one batch job. Not an interactive service (R24). The model (causal_lm/) was trained on "
    "calibration.jsonl only, chapters kept apart from the prompts (R2).",
    "task": "generation",
    "corpus_path": "prompts.jsonl",
    "tuning_data": "calibration.jsonl",
    "validated_corpus_definition": "A predictions file with exactly the prompt ids, one output "
    "each with its token count; chrF against the reference continuations at least the "
    "threshold; token agreement with the reference variant at least 1 - tolerance.",
    "metric": "chrf",
    "threshold": 0.05,
    "tolerance": 0.15,
    "reference_variant": "b4-fp32",
    "subgroups": "stratum",
    "stratum_bounds": "12, 24",
    "warmup_rule": "first 8 items once, not timed; no compilation in any variant",
    "timing_boundary": "read prompts, tokenize, generate, decode outputs on the host; "
    "evaluation and export timed apart (R9)",
    "max_new_tokens": 16,
    "stop_rule": "eos",
    "long_prompts": "truncate",
}

COMMON: dict[str, Any] = {
    "model_path": "causal_lm",
    "head_path": None,
    "precision": "fp32",
    "quantization": "none",
    "device": "cpu",
    "gpu_slug": example.DEMO_HOST,
    "rental_id": "demo-rental",
    "padding": "dynamic",
    "max_length": 96,
    "length_grouping": "none",
    "compile": "no",
    "attention_backend": "sdpa",
    "resume_of": None,
    "padding_side": "left",
}

VARIANTS: list[dict[str, Any]] = [
    *example.batch_series((4, 8, 16), "fp32, file order, left padding, prompts up to 96 tokens"),
    example.BF16_VARIANT,
    {
        "variant_id": "b8-fp32-right",
        "series": 3,
        "batch_size": 8,
        "padding_side": "right",
        "base_variant": "b8-fp32",
        "changes": "padding_side",
        "description": "b8-fp32 padded on the right: a declared variant; its outputs are "
        "checked against the reference like any other",
    },
]


def build() -> WorkbookData:
    """The example generation campaign's data, locked."""
    return example.campaign(PROTOCOL, COMMON, VARIANTS, OUT)


def main(argv: list[str]) -> int:
    """Write the example workbook to argv[0] (default samples/example_generation.xlsx)."""
    return example.write(argv, build, OUT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
