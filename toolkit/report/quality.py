"""The equal-quality gate (R16): which variants join the cost comparison.

A variant joins when it has successful runs, its attempts' quality verdict is
``pass``, and its metric meets the *locked* protocol's threshold and tolerance
against the reference variant. A variant outside is still shown (Summary,
charts, report), marked, and kept out of the cost comparison and the choice.
The report reads the threshold; it never writes the Protocol sheet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.report.summary import VariantStats

#: Float slack when re-checking a metric against threshold - tolerance.
EPSILON = 1e-9


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def apply_gate(all_stats: Sequence[VariantStats], protocol: dict[str, Any]) -> None:
    """Set ``equal_quality`` and ``gate_note`` on every variant."""
    threshold = _number(protocol.get("threshold"))
    tolerance = _number(protocol.get("tolerance"))
    reference_id = protocol.get("reference_variant")
    reference = next((s for s in all_stats if s.variant_id == reference_id), None)
    ref_metric = reference.metric_value if reference is not None else None
    for st in all_stats:
        reasons = gate_reasons(st, threshold, tolerance, reference_id, ref_metric)
        st.equal_quality = not reasons
        st.gate_note = ("outside the equal-quality comparison: " + "; ".join(reasons)
                        if reasons else "")


def gate_reasons(st: VariantStats, threshold: float | None, tolerance: float | None,
                 reference_id: Any, ref_metric: float | None) -> list[str]:
    """Why a variant stays out of the cost comparison (empty when it joins)."""
    if st.attempts == 0:
        return ["not run yet"]
    if st.successes == 0:
        return ["no successful run"]
    if st.quality_verdict != "pass":
        return [f"quality verdict {st.quality_verdict}"]
    reasons = []
    metric = st.metric_value
    if metric is not None and threshold is not None and metric < threshold - EPSILON:
        reasons.append(f"metric {metric:.4f} below the locked threshold {threshold:.4f}")
    if (metric is not None and tolerance is not None and ref_metric is not None
            and metric < ref_metric - tolerance - EPSILON):
        reasons.append(f"metric {metric:.4f} more than {tolerance:.4f} below the reference "
                       f"{reference_id} ({ref_metric:.4f})")
    return reasons
