"""How close each variant came to the machine's peak, and what holds it back.

Per variant, over its successes (the Summary's success rule): the median ``utilisation``
(real-token FLOP rate / the matrix-multiply peak in the variant's precision, the
campaign's highest probe so far, Attempts column), the median ``padding_waste``, and one sentence
naming what limits it, from the figures beside it (each rule states its threshold):

* **padding**: more than :data:`PADDING_SHARE` of the model's work is on padding tokens;
* **precision**: the probe measured the variant's precision below :data:`PRECISION_SHARE`
  of fp32 on the same machine (e.g. bf16 without bf16 matrix units);
* **memory bound**: the batches' arithmetic intensity on the weights (2 FLOPs per
  parameter per token: ``2 * tokens per batch / bytes per parameter`` FLOP per byte) is
  under the machine's balance (measured peak / measured copy bandwidth); a generation
  step computes one token per row, so decoding at small batches is memory bound;
* **batch too small**: fewer than :data:`SMALL_BATCH` rows a batch and the padded-token
  utilisation under :data:`LOW_UTILISATION`;
* otherwise the gap is work outside the matrix products (attention kernels, elementwise
  operations, tokenizing, the host between batches).

The peaks these rules compare are the campaign's highest on the variant's machine
(:func:`campaign_peaks`): every attempt probes, and the highest probe is the closest to the
machine's peak (a probe under load reads low; one low bf16 snapshot once made the sentence
say "limited by precision" on a CPU where bf16 ran the model 1.8x faster than fp32).

Empty with its reason when no success has a utilisation (no peak measured, a quantized
variant, a model without a FLOP formula, attempts recorded before these columns, or other
processes took more than a quarter of the machine during every success's probe or window).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolkit.report.markdown import inline

PADDING_SHARE = 0.2
PRECISION_SHARE = 0.9
SMALL_BATCH = 8
LOW_UTILISATION = 0.5
BYTES_PER_PARAMETER = {"fp32": 4, "bf16": 2, "fp16": 2}
#: The Manifest columns that name a machine: peaks are compared within one.
MACHINE_FIELDS = ("host", "cpu", "gpu_name", "torch")


@dataclass(frozen=True)
class Utilisation:
    """What the Summary's utilisation, padding_waste and limited_by cells say."""

    value: float | None
    reason: str | None
    padding_waste: float | None
    limited_by: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _median(values: Sequence[Any]) -> float | None:
    found = [v for v in (_number(x) for x in values) if v is not None]
    return statistics.median(found) if found else None


def _rate(value: float) -> str:
    return f"{value / 1e12:.3g} TFLOP/s" if value >= 1e12 else f"{value / 1e9:.3g} GFLOP/s"


def of_variant(
    successes: Sequence[Mapping[str, Any]],
    manifests: Mapping[Any, Mapping[str, Any]],
    variant: Mapping[str, Any] | None,
) -> Utilisation:
    """The variant's figures from its successful Attempts rows and their Manifest rows."""
    if not successes:
        return Utilisation(None, "no successful run", None, "no successful run")
    value = _median([a.get("utilisation") for a in successes])
    waste = _median([a.get("padding_waste") for a in successes])
    reasons = sorted(
        {
            str(a.get("utilisation_reason"))
            for a in successes
            if a.get("utilisation") is None and a.get("utilisation_reason")
        }
    )
    reason = (
        None
        if value is not None
        else ("; ".join(reasons) or "not recorded: attempts from before the utilisation columns")
    )
    if value is None:
        return Utilisation(None, reason, waste, f"utilisation unknown: {reason}")
    return Utilisation(value, None, waste, _limits(successes, manifests, variant, value, waste))


def _limits(
    successes: Sequence[Mapping[str, Any]],
    manifests: Mapping[Any, Mapping[str, Any]],
    variant: Mapping[str, Any] | None,
    value: float,
    waste: float | None,
) -> str:
    used = [manifests[a.get("manifest_id")] for a in successes if a.get("manifest_id") in manifests]
    precision = str(
        (variant or {}).get("precision") or (used[0].get("precision") if used else "fp32")
    )
    peak, fp32, copy = campaign_peaks(manifests, used, precision)
    batch = _number((variant or {}).get("batch_size"))
    found = []
    if waste is not None and waste > PADDING_SHARE:
        found.append(f"padding ({waste:.0%} of the model's work is on padding tokens)")
    if precision != "fp32" and peak and fp32 and peak < PRECISION_SHARE * fp32:
        found.append(
            f"precision ({precision} matrix products ran at {_rate(peak)} in the "
            f"probe against {_rate(fp32)} in fp32 on the same machine)"
        )
    tokens = _median([_tokens_per_batch(a, batch) for a in successes])
    width = BYTES_PER_PARAMETER.get(precision)
    if tokens and width and peak and copy:
        intensity, balance = 2 * tokens / width, peak / copy
        if intensity < balance:
            found.append(
                f"memory bound (about {tokens:.0f} tokens a batch do {intensity:.0f} "
                f"FLOP per weight byte, under the machine's balance of {balance:.0f}: "
                "measured peak / copy bandwidth)"
            )
    padded_use = value / (1 - waste) if waste is not None and waste < 1 else value
    if (
        batch is not None
        and batch < SMALL_BATCH
        and padded_use < LOW_UTILISATION
        and not any(f.startswith("memory bound") for f in found)
    ):
        found.append(
            f"batch too small ({batch:.0f} row(s) a batch keep the matrix products "
            f"small: utilisation on padded tokens {padded_use:.2f})"
        )
    head = f"{value:.2f} of the measured {precision} peak"
    if found:
        return f"{head}; limited by {'; '.join(found)}"
    return (
        f"{head}; no padding, precision, batch-size or bandwidth limit stands out: the gap "
        "is work outside the matrix products (attention kernels, elementwise operations, "
        "tokenizing, host work between batches)"
    )


def _machine(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(manifest.get(name) or "") for name in MACHINE_FIELDS)


def campaign_peaks(
    manifests: Mapping[Any, Mapping[str, Any]],
    used: Sequence[Mapping[str, Any]],
    precision: str,
) -> tuple[float | None, float | None, float | None]:
    """The highest peaks the campaign probed on the machine(s) of ``used`` (the variant's
    Manifest rows): its ``precision``'s matrix-multiply rate, fp32's and the copy's, over
    every Manifest row of the same machine (:data:`MACHINE_FIELDS`), whatever variant wrote
    it. Each probe is a floor for the machine's peak (other load only slows it), so the
    highest is the closest; None where no row has the figure."""
    machines = {_machine(m) for m in used}
    same = [m for m in manifests.values() if _machine(m) in machines]
    # The variant's own rows are of its precision whatever their precision cell says.
    mine = [*used, *(m for m in same if m.get("precision") == precision)]
    peak = _highest([m.get("matmul_peak_flops") for m in mine])
    fp32 = _highest(
        [m.get("fp32_matmul_peak_flops") for m in same]
        + [m.get("matmul_peak_flops") for m in same if m.get("precision") == "fp32"]
    )
    copy = _highest([m.get("memory_bandwidth_bytes_s") for m in same])
    return peak, fp32, copy


def _highest(values: Sequence[Any]) -> float | None:
    found = [v for v in (_number(x) for x in values) if v is not None]
    return max(found) if found else None


def _tokens_per_batch(attempt: Mapping[str, Any], batch: float | None) -> float | None:
    """Tokens a forward pass computes: a classification batch's padded tokens; in a
    generation attempt, one new token per row at each decode step (decode dominates)."""
    if _number(attempt.get("generated_tokens")) is not None:
        return batch
    padded, items = _number(attempt.get("padded_tokens")), _number(attempt.get("expected_ids"))
    if padded is None or not items or not batch:
        return None
    return padded / math.ceil(items / batch)


def report_lines(rows: Sequence[tuple[str, Utilisation]]) -> list[str]:
    """report.md's lines: one bullet per variant."""
    lines = []
    for variant_id, found in rows:
        waste = "" if found.padding_waste is None else f", padding waste {found.padding_waste:.0%}"
        if found.value is None:  # the reason alone: "utilisation empty: utilisation unknown"
            lines.append("- " + inline(f"{variant_id}: utilisation empty{waste}: {found.reason}"))
        else:
            lines.append(
                "- "
                + inline(f"{variant_id}: utilisation {found.value:.3f}{waste}: {found.limited_by}")
            )
    return lines
