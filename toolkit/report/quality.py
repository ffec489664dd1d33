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
        resume = resumed_by(st, all_stats)
        reasons = gate_reasons(st, threshold, tolerance, reference_id, ref_metric)
        if st.attempts and resume is None:
            reasons = feasibility_reasons(st) + reasons
        st.equal_quality = not reasons
        st.gate_note = (
            "outside the equal-quality comparison: " + "; ".join(reasons)
            if reasons
            else _resume_note(st, resume)
        )
    for st in all_stats:  # R13: the resume variant says where its time and attempts count
        resumed = next((o for o in all_stats if resumed_by(o, all_stats) is st), None)
        if resumed is not None and st.equal_quality:
            st.gate_note = "; ".join(
                filter(
                    None,
                    [
                        st.gate_note,
                        (
                            f"resume variant of {resumed.variant_id}: its time and attempts count "
                            f"with {resumed.variant_id} in the Settlement"
                        ),
                    ],
                )
            )


#: Unfinished attempts named in a note; past it, how many more.
SHOWN = 3


def feasibility_reasons(st: VariantStats) -> list[str]:
    """R18: a variant is feasible only when every counted attempt finished the whole corpus."""
    if not st.unfinished:
        return []
    named = ", ".join(st.unfinished[:SHOWN])
    more = f" and {len(st.unfinished) - SHOWN} more" if len(st.unfinished) > SHOWN else ""
    return [
        f"not feasible: {len(st.unfinished)} attempt(s) did not finish the whole "
        f"corpus: {named}{more}; an option must finish the corpus, long inputs included, "
        "before its cost is compared"
    ]


def resumed_by(st: VariantStats, all_stats: Sequence[VariantStats]) -> VariantStats | None:
    """The declared resume variant (``resume_of`` = this one, R13) that covers this variant's
    unfinished attempts: it has a success and no unfinished attempt of its own."""
    if not st.unfinished:
        return None
    return next(
        (o for o in all_stats if o.resume_of == st.variant_id and o.successes and not o.unfinished),
        None,
    )


def _resume_note(st: VariantStats, resume: VariantStats | None) -> str:
    if resume is None:
        return ""
    return (
        f"feasible with its resume variant {resume.variant_id}: its "
        f"{len(st.unfinished)} unfinished attempt(s) are resumed by {resume.variant_id}, "
        f"which finished the whole corpus; choosing {st.variant_id} means running "
        f"{resume.variant_id} after such a failure"
    )


def held_to(st: VariantStats, name: str, value: float | None) -> float | None:
    """The threshold (or tolerance) ``st`` is held to: the locked one, or the stricter value
    in force before an amendment loosened it after attempts on the corpus ``st`` ran on
    (R16: a lowered threshold needs a new, independent evaluation)."""
    before = [r.before for r in st.relaxations if r.field == name and r.seen(st.corpora)]
    if value is None or not before:
        return value
    return max(value, *before) if name == "threshold" else min(value, *before)


def gate_reasons(
    st: VariantStats,
    threshold: float | None,
    tolerance: float | None,
    reference_id: Any,
    ref_metric: float | None,
) -> list[str]:
    """Why a variant stays out of the cost comparison (empty when it joins)."""
    if st.attempts == 0:
        return ["not run yet"]
    if st.successes == 0:
        return ["no successful run"]
    if st.quality_verdict != "pass":
        return [f"quality verdict {st.quality_verdict}"]
    reasons = []
    metric = st.metric_value
    bar = held_to(st, "threshold", threshold)
    if metric is not None and bar is not None and metric < bar - EPSILON:
        reasons.append(
            f"metric {metric:.4f} below the locked threshold {bar:.4f}"
            if bar == threshold
            else f"metric {metric:.4f} below {bar:.4f}, the "
            "threshold in force before it was lowered after attempts on this corpus"
        )
    allowed = held_to(st, "tolerance", tolerance)
    if (
        metric is not None
        and allowed is not None
        and ref_metric is not None
        and metric < ref_metric - allowed - EPSILON
    ):
        reasons.append(
            f"metric {metric:.4f} more than {allowed:.4f} below the reference "
            f"{reference_id} ({ref_metric:.4f})"
            + (
                ""
                if allowed == tolerance
                else ": the tolerance in force before it was widened after attempts on this corpus"
            )
        )
    return reasons
