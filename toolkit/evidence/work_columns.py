"""The Variants columns that define the work a variant measures: one tuple for the series
rules (:mod:`toolkit.evidence.validate`) and for holding a journal record's start line to its
locked Variants row (:mod:`toolkit.evidence.provenance`). Stdlib only."""

from __future__ import annotations

#: Variants columns that define the work. Series 1 differs in batch_size only (request_rate
#: under a serving Protocol); a later series differs from its base_variant in the columns its
#: ``changes`` names (R6).
WORK_COLUMNS = (
    "model_path",
    "head_path",
    "precision",
    "quantization",
    "batch_size",
    "device",
    "gpu_slug",
    "padding",
    "max_length",
    "length_grouping",
    "compile",
    "attention_backend",
    "padding_side",
    "kv_cache_dtype",
    "label",
    "engine",
    "input_pipeline",
    "request_rate",
)
