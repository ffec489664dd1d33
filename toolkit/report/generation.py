"""The report's generation figures (Protocol task generation): decode rate, TTFT, ceiling.

Per variant, over its successes (the Summary's rule: completed, ids match, a measured_s,
not excluded): the raw decode tokens/s of each run, their median, min and max (no p95 from
five runs), the median time to first token, tokens generated, the KV cache's largest peak
beside the planner's KV estimate at the run's batch and lengths (both from the Memory
sheet), the median fraction of the bandwidth ceiling reached, and the lowest token
agreement with the reference variant. Then the separation verdict of the durations' pairs
(series 1 among itself, each later variant against its base) on decode speed, by the same
rule as durations (:func:`toolkit.report.stats.separation`, on seconds per token so that
"faster" reads the same way). The Summary's ttft_s, decode_tokens_per_s and
decode_ceiling_fraction are the same medians (:func:`of_variant`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.report import stats
from toolkit.report.markdown import inline
from toolkit.workbook.model import WorkbookData

#: The Summary's generation columns, each the median over the successes of the Attempts
#: column of the same name.
SUMMARY_COLUMNS = ("ttft_s", "decode_tokens_per_s", "decode_ceiling_fraction")
#: Why a classification workbook's generation cells (Summary, Memory) are empty.
NOT_GENERATION = "not a generation: the Protocol's task is classification"


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def is_generation(data: WorkbookData) -> bool:
    """Whether the workbook's Protocol task is generation."""
    return str(data.forms["Protocol"].get("task") or "").strip().lower() == "generation"


@dataclass(frozen=True)
class Figures:
    """One variant's generation figures over its successes (the Summary's success rule)."""

    #: The successes' decode_tokens_per_s, in Attempts order: the raw runs.
    decode_runs: tuple[float, ...]
    ttft_s: float | None
    decode_ceiling_fraction: float | None
    generated_tokens: float | None
    #: Lowest token agreement with the reference variant.
    token_agreement: float | None
    #: Per Summary column that is empty, why.
    reasons: Mapping[str, str] = field(default_factory=dict)

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Median decode rate of the successes."""
        return stats.median(self.decode_runs)


def of_variant(successes: Sequence[Mapping[str, Any]]) -> Figures:
    """The figures from a variant's successful Attempts rows (as the Summary's formulas
    select them: a success with the cell filled)."""

    def values(column: str) -> list[float]:
        return [v for v in (_number(a.get(column)) for a in successes) if v is not None]

    medians = {c: stats.median(values(c)) for c in SUMMARY_COLUMNS}
    return Figures(
        tuple(values("decode_tokens_per_s")),
        medians["ttft_s"],
        medians["decode_ceiling_fraction"],
        stats.median(values("generated_tokens")),
        stats.minimum(values("token_agreement")),
        {c: _why_empty(successes, c) for c, v in medians.items() if v is None},
    )


def _why_empty(successes: Sequence[Mapping[str, Any]], column: str) -> str:
    if not successes:
        return "no successful run"
    said = sorted({str(a.get(f"{column}_reason")) for a in successes if a.get(f"{column}_reason")})
    return "; ".join(said) or f"no success recorded {column}"


def report_lines(data: WorkbookData, figures: Sequence[tuple[str, Figures | None]]) -> list[str]:
    """The Markdown lines of the generation section (``figures``: each variant's, as the
    Summary computed them; the KV cache from the refreshed Memory sheet); empty for a
    classification workbook."""
    if not is_generation(data):
        return []
    protocol = data.forms["Protocol"]
    lines = [
        f"Decoding (Protocol): greedy, max_new_tokens {inline(protocol.get('max_new_tokens'))}, "
        f"stop rule {inline(protocol.get('stop_rule') or 'eos')}, long prompts "
        f"{inline(protocol.get('long_prompts') or 'refuse')}. Per variant over its successes; "
        "decode tokens/s leaves the prefill out (TTFT is apart). Ceiling: decode tokens/s "
        "the memory bandwidth allows (catalog on a GPU, measured copy rate on a CPU) for "
        "the planner's bytes per step (weights + batch x KV cache). KV cache (Memory "
        "sheet): the largest observed over the variant's attempts beside the planner's "
        "estimate at the variant's batch, max_length + max_new_tokens tokens (an upper "
        "bound: prompts are mostly shorter).",
        "",
        "| variant | runs (decode tok/s) | median | min | max | TTFT median s | "
        "generated tokens | KV peak B | planner KV B | ceiling fraction | "
        "token agreement (lowest) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    memory = {str(r.get("variant_id")): r for r in data.tables["Memory"]}
    per_token: dict[str, list[float]] = {}
    for vid, found in figures:
        if found is None:
            continue
        rates = found.decode_runs
        per_token[vid] = [1 / r for r in rates if r > 0]
        lines.append(
            f"| {inline(vid)} | {', '.join(f'{r:.1f}' for r in rates) or 'no success'} | "
            f"{_fmt(stats.median(rates), '.1f')} | {_fmt(stats.minimum(rates), '.1f')} | "
            f"{_fmt(stats.maximum(rates), '.1f')} | {_fmt(found.ttft_s, '.4f')} | "
            f"{_fmt(found.generated_tokens, '.0f')} | "
            f"{_bytes(memory.get(vid), 'observed_kv_cache_bytes')} | "
            f"{_bytes(memory.get(vid), 'estimate_kv_cache_bytes')} | "
            f"{_fmt(found.decode_ceiling_fraction, '.5f')} | "
            f"{_fmt(found.token_agreement, '.4f')} |"
        )
    lines += ["", "Separation on decode speed (seconds per token, the durations' rule):", ""]
    ran = {str(a.get("variant_id")) for a in data.tables["Attempts"]}
    lines += _separations(data.tables["Variants"], per_token, ran)
    return lines


def _bytes(row: Mapping[str, Any] | None, column: str) -> str:
    """A Memory cell for the report: the bytes, or why it is empty."""
    if row is None:
        return "no Memory row"
    value = row.get(column)
    return f"{value:,}" if value is not None else inline(row.get(f"{column}_reason") or "—")


def _separations(
    variants: Sequence[Mapping[str, Any]], runs: Mapping[str, list[float]], ran: set[str]
) -> list[str]:
    """Every pair of series 1 (batch is its only variable), then each later variant against
    its base_variant (the one column set it changes, R6): the durations' pairs."""
    first = [str(v.get("variant_id")) for v in variants if v.get("series") == 1]
    pairs = [(a, b) for i, a in enumerate(first) for b in first[i + 1 :]]
    pairs += [
        (str(v["base_variant"]), str(v.get("variant_id")))
        for v in variants
        if v.get("series") != 1 and v.get("base_variant")
    ]
    out = []
    for a, b in pairs:
        idle = [v for v in (a, b) if v not in ran]  # nothing failed: it never ran
        found = (
            stats.not_run(a, b, idle)
            if idle
            else stats.separation(a, runs.get(a, []), b, runs.get(b, []))
        )
        out.append(f"- {inline(found.sentence())}")
    return out or ["- no pair to compare"]
