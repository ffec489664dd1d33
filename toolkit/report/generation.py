"""The report's generation figures (Protocol task generation): decode rate, TTFT, ceiling.

Per variant, over its successes (the Summary's rule: completed, ids match, a measured_s,
not excluded): the raw decode tokens/s of each run, their median, min and max (no p95 from
five runs), the median time to first token, tokens generated, the KV cache's peak beside
the planner's KV estimate at the run's batch and lengths, the median fraction of the
bandwidth ceiling reached, and the lowest token agreement with the reference variant.
Then the separation verdict of the durations' pairs (series 1 among itself, each later
variant against its base) on decode speed, by the same rule as durations
(:func:`toolkit.report.stats.separation`, on seconds per token so that "faster" reads the
same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolkit.errors import ModelError, UsageError
from toolkit.planner.memory import estimate, shape_from_config
from toolkit.planner.models import resolve_model_path
from toolkit.report import stats, summary
from toolkit.workbook.model import WorkbookData


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def is_generation(data: WorkbookData) -> bool:
    """Whether the workbook's Protocol task is generation."""
    return str(data.forms["Protocol"].get("task") or "").strip().lower() == "generation"


def kv_estimate(variant: Mapping[str, Any], base_dir: Path, prompt_tokens: int | None,
                max_new_tokens: Any) -> int | str:
    """The planner's KV cache bytes for the variant's batch at ``prompt_tokens`` +
    max_new_tokens, or why there is none."""
    try:
        folder, _ = resolve_model_path(str(variant.get("model_path") or ""), base_dir)
        if folder is None or not (folder / "config.json").is_file():
            return "no local config.json"
        seq = int(prompt_tokens or variant["max_length"]) + int(max_new_tokens or 0)
        est = estimate(shape_from_config(folder), precision=str(variant["precision"]),
                       seq_len=max(seq, 1), batch=int(variant["batch_size"]))
    except (ModelError, UsageError, KeyError, TypeError, ValueError) as exc:
        return f"not estimated: {exc}"
    return est.term("kv_cache").bytes


def report_lines(data: WorkbookData, base_dir: Path) -> list[str]:
    """The Markdown lines of the generation section; empty for a classification workbook."""
    if not is_generation(data):
        return []
    protocol = data.forms["Protocol"]
    attempts = data.tables["Attempts"]
    lines = [f"Decoding (Protocol): greedy, max_new_tokens {protocol.get('max_new_tokens')}, "
             f"stop rule {protocol.get('stop_rule') or 'eos'}, long prompts "
             f"{protocol.get('long_prompts') or 'refuse'}. Per variant over its successes; "
             "decode tokens/s leaves the prefill out (TTFT is apart). Ceiling: decode tokens/s "
             "the memory bandwidth allows (catalog on a GPU, measured copy rate on a CPU) for "
             "the planner's bytes per step (weights + batch x KV cache). Planner KV: the estimate "
             "at the variant's batch, max_length + max_new_tokens tokens (an upper bound: prompts "
             "are mostly shorter).", "",
             "| variant | runs (decode tok/s) | median | min | max | TTFT median s | "
             "generated tokens | KV peak B | planner KV B | ceiling fraction | "
             "token agreement (lowest) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    per_token: dict[str, list[float]] = {}
    for variant in data.tables["Variants"]:
        vid = str(variant.get("variant_id"))
        wins = [a for a in attempts if a.get("variant_id") == vid and summary.is_success(a)]
        rates = [float(a["decode_tokens_per_s"]) for a in wins
                 if a.get("decode_tokens_per_s") is not None]
        per_token[vid] = [1 / r for r in rates if r > 0]
        ttft = stats.median([float(a["ttft_s"]) for a in wins if a.get("ttft_s") is not None])
        fractions = [float(a["decode_ceiling_fraction"]) for a in wins
                     if a.get("decode_ceiling_fraction") is not None]
        agreements = [float(a["token_agreement"]) for a in wins
                      if a.get("token_agreement") is not None]
        kv_peaks = [int(a["kv_cache_peak_bytes"]) for a in wins
                    if a.get("kv_cache_peak_bytes") is not None]
        generated = stats.median([float(a["generated_tokens"]) for a in wins
                                  if a.get("generated_tokens") is not None])
        planned = kv_estimate(variant, base_dir, None, protocol.get("max_new_tokens"))
        lines.append(
            f"| {vid} | {', '.join(f'{r:.1f}' for r in rates) or 'no success'} | "
            f"{_fmt(stats.median(rates), '.1f')} | {_fmt(stats.minimum(rates), '.1f')} | "
            f"{_fmt(stats.maximum(rates), '.1f')} | {_fmt(ttft, '.4f')} | "
            f"{_fmt(generated, '.0f')} | {_fmt(max(kv_peaks) if kv_peaks else None, ',')} | "
            f"{planned if isinstance(planned, str) else format(planned, ',')} | "
            f"{_fmt(stats.median(fractions), '.5f')} | "
            f"{_fmt(min(agreements) if agreements else None, '.4f')} |")
    lines += ["", "Separation on decode speed (seconds per token, the durations' rule):", ""]
    lines += _separations(data.tables["Variants"], per_token)
    return lines


def _separations(variants: Sequence[Mapping[str, Any]], runs: Mapping[str, list[float]]
                 ) -> list[str]:
    """Every pair of series 1 (batch is its only variable), then each later variant against
    its base_variant (the one column set it changes, R6): the durations' pairs."""
    first = [str(v.get("variant_id")) for v in variants if v.get("series") == 1]
    pairs = [(a, b) for i, a in enumerate(first) for b in first[i + 1:]]
    pairs += [(str(v["base_variant"]), str(v.get("variant_id"))) for v in variants
              if v.get("series") != 1 and v.get("base_variant")]
    out = []
    for a, b in pairs:
        found = stats.separation(a, runs.get(a, []), b, runs.get(b, []))
        out.append(f"- {found.sentence()}")
    return out or ["- no pair to compare"]
