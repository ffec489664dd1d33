"""The decision memo (R15, R23): separations, money, the choice, and a draft a person edits.

The report suggests each memo field (chosen configuration, load handled,
reasons, remaining uncertainty) and writes the suggestions, with the
separation verdicts, into the computed ``draft`` field. A memo field is
filled with its suggestion only while it is empty or still holds the previous
report's suggestion for it; once a person has typed something else there, the
report never touches it again.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.evidence.validate import (
    WORK_COLUMNS,
    declared,
    work_cell,
    work_differences,
    work_value,
)
from toolkit.money.tariffs import Catalog, rules
from toolkit.report import serving, stats
from toolkit.report.costs import Costing, Projection, duration, projection, resume_text
from toolkit.report.summary import (
    HARDWARE_FIELDS,
    LOADED_SHARE,
    STACK_FIELDS,
    VariantStats,
    machine_label,
)

MEMO_FIELDS = ("chosen_configuration", "load_handled", "reasons", "remaining_uncertainty")
DRAFT_HEADER = (
    "Suggested by `iteralab report` from the data (edit the fields above; a field "
    "you changed is never overwritten):"
)
#: What this evidence is and is not (R24, seed 000); README and report.md say it too.
SCOPE = (
    "Scope: an offline corpus benchmark, not an MLPerf result or certification; it "
    "does not justify an interactive service, training to convergence or another dataset, "
    "and a catalog comparison is not an observed saving."
)


@dataclass
class Decision:
    """Everything the memo and the reviewer report say about the choice."""

    separations: list[stats.Separation] = field(default_factory=list)
    money: list[stats.CostComparison] = field(default_factory=list)
    chosen: Costing | None = None
    projections: dict[str, Projection | None] = field(default_factory=dict)
    suggestions: dict[str, str] = field(default_factory=dict)
    kept_fields: list[str] = field(default_factory=list)  # typed by a person, left alone


#: Variants columns that define the work (declared once, with the series rules of R6).
PARAMETERS = WORK_COLUMNS


@dataclass(frozen=True)
class Pair:
    """Two variants, what differs between them, and why they cannot be compared, if so."""

    first: VariantStats
    second: VariantStats
    differs: str  # "precision fp32 -> bf16", or "same parameters"
    confounded: str = ""  # empty when the pair differs in declared columns only (R6)
    gpu_declared: bool = False  # gpu_slug is among the columns that differ: GPUs may differ


def differs_text(va: dict[str, Any], vb: dict[str, Any]) -> str:
    """``precision fp32 -> bf16, max_length 256 -> 128``: the work columns that differ."""

    def shown(row: dict[str, Any], column: str) -> str:
        value = work_cell(row, column)
        return "blank" if value is None else str(value)

    return (
        ", ".join(f"{c} {shown(va, c)} -> {shown(vb, c)}" for c in work_differences(va, vb))
        or "same parameters"
    )


def _pair(a: VariantStats, b: VariantStats, va: dict[str, Any], vb: dict[str, Any]) -> Pair | None:
    """The pair to report, or None when it is no comparison of one declared change.

    A variant and its base_variant: comparable when they differ in declared changes only.
    Two others: when they differ only in columns both declare as their variables (batch
    in series 1). A variant without base_variant (a layout-1 workbook): when one column
    apart, which leaves no doubt about what differs.
    """
    differ, text = set(work_differences(va, vb)), differs_text(va, vb)

    def pair(confounded: str = "") -> Pair:
        return Pair(a, b, text, confounded, gpu_declared="gpu_slug" in differ)

    for child, base in ((va, vb), (vb, va)):
        if work_value(child.get("base_variant")) == work_value(base.get("variant_id")):
            extra = [c for c in WORK_COLUMNS if c in differ - (declared(child) or set())]
            return pair(
                ""
                if not extra
                else (
                    f"{child.get('variant_id')} differs from its base {base.get('variant_id')} in "
                    f"{', '.join(extra)}, not declared in its changes"
                )
            )
    da, db = declared(va), declared(vb)
    if da is not None and db is not None:
        if differ <= da & db:
            return pair()
        if va.get("series") == vb.get("series") == 1:
            return pair("series 1 varies batch_size only")
        return None
    return pair() if len(differ) == 1 else None


def pairs(all_stats: Sequence[VariantStats], variants: Sequence[dict[str, Any]]) -> list[Pair]:
    """The pairs the report speaks of (R6, R15): comparable ones, and confounded ones of
    series 1 or of a variant and its base (named, never given a verdict)."""
    by_id = {str(v.get("variant_id")): v for v in variants}
    found = []
    for a, b in itertools.combinations(all_stats, 2):
        va, vb = by_id.get(a.variant_id), by_id.get(b.variant_id)
        pair = _pair(a, b, va, vb) if va and vb else None
        if pair is not None:
            found.append(pair)
    return found


def comparable_pairs(
    all_stats: Sequence[VariantStats], variants: Sequence[dict[str, Any]]
) -> list[tuple[VariantStats, VariantStats]]:
    """Pairs that differ in declared columns only (:func:`pairs` less the confounded)."""
    return [(p.first, p.second) for p in pairs(all_stats, variants) if not p.confounded]


def separations(
    all_stats: Sequence[VariantStats], variants: Sequence[dict[str, Any]]
) -> list[stats.Separation]:
    """The R15 verdict of every pair (:func:`pairs`), its reason starting with what differs."""
    out = []
    for p in pairs(all_stats, variants):
        if p.confounded:
            out.append(
                stats.Separation(
                    p.first.variant_id,
                    p.second.variant_id,
                    stats.NOT_COMPARABLE,
                    f"{p.differs}: {p.confounded}",
                    "compare variants that differ in declared "
                    "columns only: correct Variants (`iteralab validate` names each cell)",
                )
            )
            continue
        s = _verdict(p.first, p.second)
        out.append(
            dataclasses.replace(s, reason=f"{p.differs}; {s.reason}" + _environment_clause(p))
        )
    return out


def _environment_clause(p: Pair) -> str:
    """What the pair's successes ran on beyond the declared change: another software stack
    (R4), or GPU models that a declared gpu_slug change does not account for."""
    kinds = [("software stacks", stack_difference(p.first, p.second, STACK_FIELDS))]
    if not p.gpu_declared:
        kinds.append(("GPU models", stack_difference(p.first, p.second, HARDWARE_FIELDS)))
    found = [(kind, text) for kind, text in kinds if text]
    if not found:
        return ""
    return (
        f"; ran on different {' and '.join(k for k, _ in found)} "
        f"({'; '.join(t for _, t in found)}): the verdict is about each whole tested "
        "configuration, not the declared change alone"
    )


def stack_difference(
    a: VariantStats, b: VariantStats, fields: Sequence[str] = STACK_FIELDS + HARDWARE_FIELDS
) -> str:
    """The Manifest fields (driver, CUDA/ROCm build, torch, transformers, model revision,
    GPU model) on which two variants' successes differ, as ``torch 2.5.1 vs 2.6.0``; "" when
    none (R4). A variant whose successes span several GPUs shows them all."""
    parts = []
    for name in fields:
        mine, theirs = a.stacks.get(name, frozenset()), b.stacks.get(name, frozenset())
        if mine and theirs and mine != theirs:
            shown = (
                ", ".join(sorted(v[:12] if name == "model_revision" else v for v in vals))
                for vals in (mine, theirs)
            )
            parts.append(f"{name} {' vs '.join(shown)}")
    return "; ".join(parts)


def _verdict(a: VariantStats, b: VariantStats) -> stats.Separation:
    """The R15 verdict of a comparable pair: corpora, integrity and data checked first."""
    idle = [st.variant_id for st in (a, b) if st.attempts == 0]
    doubtful = [f"{st.untrusted} of {st.variant_id}" for st in (a, b) if st.untrusted]
    corpora = {st.variant_id: sorted(st.corpora) for st in (a, b)}
    if len(a.corpora | b.corpora) > 1:
        return stats.Separation(
            a.variant_id,
            b.variant_id,
            stats.NOT_COMPARABLE,
            "measured on different corpora ("
            + "; ".join(f"{vid}: {', '.join(c[:12] for c in fps)}" for vid, fps in corpora.items())
            + ")",
            "compare only runs on one corpus: re-run the variants on the locked "
            "corpus, under the same protocol",
        )
    if doubtful:
        return stats.Separation(
            a.variant_id,
            b.variant_id,
            stats.UNTRUSTED,
            f"attempt rows with integrity findings: {' and '.join(doubtful)}",
            "restore the evidence (`iteralab validate` names each row), then report again",
        )
    if idle:
        return stats.not_run(a.variant_id, b.variant_id, idle)
    return stats.separation(a.variant_id, a.runs, b.variant_id, b.runs)


def money_comparisons(
    costs: Sequence[Costing], projections: dict[str, Projection | None]
) -> list[stats.CostComparison]:
    """The budget for the expected outputs, fastest vs slowest run, for pairs of comparable
    configurations."""
    comparable = [c for c in costs if c.stats.equal_quality and c.plan is not None]
    out = []
    for a, b in itertools.combinations(comparable, 2):
        ranges = []
        for c in (a, b):
            p = projections.get(c.stats.variant_id)
            ranges.append(None if p is None else p.budget_range())
        out.append(
            stats.cost_comparison(a.stats.variant_id, ranges[0], b.stats.variant_id, ranges[1])
        )
    return out


def choose(costs: Sequence[Costing]) -> Costing | None:
    """The comparable configuration with the lowest forecast per expected corpus, among those
    with at least one accepted corpus the user confirmed (a forecast alone never chooses);
    ties go to the faster."""
    candidates = [
        c
        for c in costs
        if c.stats.equal_quality
        and c.confirmed
        and c.forecast_per_expected is not None
        and not c.stats.untrusted
    ]
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda c: (c.forecast_per_expected, c.stats.median or float("inf"), c.stats.variant_id),
    )


def decide(
    all_stats: Sequence[VariantStats],
    variants: Sequence[dict[str, Any]],
    costs: Sequence[Costing],
    *,
    protocol: dict[str, Any],
    catalog: Catalog | None,
    window_text: str | None,
    money_text: str = "",
) -> Decision:
    """Separations, money comparisons, the choice and the memo suggestions."""
    d = Decision(separations=separations(all_stats, variants))
    expected = protocol.get("expected_outputs")
    d.projections = {c.stats.variant_id: projection(c, expected, catalog) for c in costs}
    d.money = money_comparisons(costs, d.projections)
    d.chosen = choose(costs)
    d.suggestions = _suggest(d, all_stats, costs, protocol, window_text)
    if money_text:
        d.suggestions["reasons"] += f"; money spent: {money_text}"
    answers = {st.variant_id: st.answer for st in all_stats if st.answer is not None}
    if answers:  # a serving campaign: the load each endpoint carries within its targets
        figures = {st.variant_id: st.served for st in all_stats if st.served is not None}
        prices = {c.stats.variant_id: serving.hourly_price(c.serving_price) for c in costs}
        d.suggestions["load_handled"] += "; " + "; ".join(
            serving.memo_sentences(answers, figures, prices)
        )
    return d


def agreement_text(st: VariantStats) -> str:
    """Agreement with the reference variant, said beside a quality verdict: equal quality is
    not the same labels (a choice can pass the tolerance and still differ from the reference
    on a third of its predictions)."""
    if st.reference_agreement is None:
        return "agreement with the reference not measured"
    return f"agreement with the reference {st.reference_agreement:.4f} (lowest over its runs)"


def confirmed_text(c: Costing) -> str:
    """How many distinct corpora the user confirmed, in words (never a Python None)."""
    if c.accepted_count is None:
        return "no corpus confirmed yet in Verification"
    return f"{c.accepted_count} distinct corpus(es) accepted and confirmed so far"


def _label(c: Costing) -> str:
    if c.plan is None:
        return c.stats.variant_id
    if c.device == "cpu":  # priced as the plan's machine, never said to run on its card
        return f"{c.stats.variant_id} on the CPU (priced as {c.plan.gpu_name}, {c.plan.gpu_slug})"
    return f"{c.stats.variant_id} on {c.plan.gpu_name} ({c.plan.gpu_slug})"


def _suggest(
    d: Decision,
    all_stats: Sequence[VariantStats],
    costs: Sequence[Costing],
    protocol: dict[str, Any],
    window_text: str | None,
) -> dict[str, str]:
    comparable = [c for c in costs if c.stats.equal_quality]
    fastest = min(comparable, key=lambda c: c.stats.median or float("inf"), default=None)
    return {
        "chosen_configuration": _chosen(d, comparable, fastest, all_stats),
        "load_handled": _load(d, protocol, window_text, d.chosen or fastest),
        "reasons": _reasons(d, all_stats, comparable),
        "remaining_uncertainty": _uncertainty(d, all_stats),
    }


def _chosen(
    d: Decision,
    comparable: Sequence[Costing],
    fastest: Costing | None,
    all_stats: Sequence[VariantStats],
) -> str:
    if d.chosen is not None:
        c = d.chosen
        return f"{_label(c)}, {c.plan_text or '?-day plan'}, {c.lots} lot(s)"
    if fastest is not None:
        why = "; ".join(
            sorted(
                {
                    c.reason
                    or (f"accepted corpora {c.confirm_reason}" if not c.confirmed else c.cost_text)
                    for c in comparable
                }
            )
        )
        vid = fastest.stats.variant_id
        equal = {c.stats.variant_id for c in comparable}
        close = [
            s.second if s.first == vid else s.first
            for s in d.separations
            if vid in (s.first, s.second)
            and s.verdict == stats.NOT_SEPARATED
            and {s.first, s.second} <= equal
        ]
        caveat = f", not separated from {', '.join(close)}" if close else ""
        return (
            f"none chosen on cost ({why}); fastest variant of equal quality: "
            f"{vid} (median {fastest.stats.median:.3f} s{caveat}; "
            f"{agreement_text(fastest.stats)})"
        )
    failing = [st.variant_id for st in all_stats if st.failed]
    if failing:  # only variants that ran can have failures to fix
        return (
            "none: no variant passes the equal-quality gate; fix the failures of "
            f"{', '.join(failing)} or revisit the variants"
        )
    if not any(st.attempts for st in all_stats):
        return "none yet: no variant has run under this protocol; run the campaign"
    return "none: no variant passes the equal-quality gate (see reasons); revisit the variants"


def _load(
    d: Decision, protocol: dict[str, Any], window_text: str | None, target: Costing | None
) -> str:
    expected, deadline = protocol.get("expected_outputs"), protocol.get("deadline")
    load = [
        f"{expected} production corpus(es) expected (Protocol.expected_outputs)"
        if expected
        else "expected outputs not stated in the Protocol"
    ]
    if deadline:
        load.append(f"deadline {deadline}")
    if window_text:
        load.append(window_text)
    p = d.projections.get(target.stats.variant_id) if target else None
    if target is not None and p is not None:
        plan = (
            f"; the {p.at_slowest.text} covers it even at the slowest run" if p.at_slowest else ""
        )
        load.append(
            f"projection, not accepted output: {p.corpora} corpus(es) at "
            f"{target.stats.variant_id}'s median take {duration(p.hours_at_median)} "
            f"of processing ({duration(p.hours_at_fastest)} to "
            f"{duration(p.hours_at_slowest)} over its runs){plan}"
        )
    return "; ".join(load)


def _reasons(d: Decision, all_stats: Sequence[VariantStats], comparable: Sequence[Costing]) -> str:
    reasons = []
    c = d.chosen
    if c is not None:
        reasons.append(
            f"quality {c.stats.quality_verdict} within the locked threshold and "
            f"tolerance, {agreement_text(c.stats)}; {c.cost_text}: its "
            f"{rules.usd(c.budget) if c.budget is not None else '?'} budget over "
            f"{c.projected_corpora} expected corpus(es), a forecast; {confirmed_text(c)}"
        )
        ties = [
            o.stats.variant_id
            for o in comparable
            if o is not c and o.forecast_per_expected == c.forecast_per_expected
        ]
        if ties:
            unsure = [
                s.first if s.second == c.stats.variant_id else s.second
                for s in d.separations
                if s.verdict != stats.SEPARATED
                and c.stats.variant_id in (s.first, s.second)
                and {s.first, s.second} & set(ties)
            ]
            reasons.append(
                f"same cost as {', '.join(ties)}: chosen for the fastest median"
                + (f", not separated from {', '.join(unsure)}" if unsure else "")
            )
        dearer = [
            o
            for o in comparable
            if o.forecast_per_expected is not None
            and c.forecast_per_expected is not None
            and o.forecast_per_expected > c.forecast_per_expected
        ]
        reasons += [f"{o.stats.variant_id}: {o.cost_text}" for o in dearer]
        confirmed = {
            o.stats.variant_id: o.accepted_count
            for o in comparable
            if o.forecast_per_expected is not None
        }
        if len(set(confirmed.values())) > 1:  # seed 000: the same corpora, the same rules
            listed = ", ".join(f"{vid} {n}" for vid, n in confirmed.items())
            reasons.append(
                f"the configurations have different confirmed corpora ({listed}): "
                "compare configurations that processed the same corpora"
            )
        st = c.stats
        counts = [
            f"{n} {what}"
            for n, what in (
                (st.failed, "failed"),
                (st.interrupted, "interrupted"),
                (st.excluded, "excluded"),
            )
            if n
        ]
        reasons.append(
            f"{st.successes} successful runs of {st.attempts} attempts"
            + (f" ({', '.join(counts)})" if counts else "")
        )
    reasons += [
        f"{o.stats.variant_id} counts {resume_text(o)}, in the Settlement's projection and cost"
        for o in comparable
        if o.resume is not None
    ]
    for st in all_stats:
        if not st.equal_quality:
            reasons.append(f"{st.variant_id} kept out: {st.gate_note.split(': ', 1)[-1]}")
    return "; ".join(reasons) if reasons else "no comparable configuration yet"


def _uncertainty(d: Decision, all_stats: Sequence[VariantStats]) -> str:
    equal = {st.variant_id for st in all_stats if st.equal_quality}
    unsettled = [
        s.sentence()
        for s in d.separations
        if s.verdict != stats.SEPARATED and {s.first, s.second} <= equal
    ]
    unsettled += [
        f"money: {m.sentence()}"
        for m in d.money
        if m.verdict in (stats.WITHIN_NOISE, stats.NO_DATA)
    ]
    if not unsettled and len(equal) < 2:
        unsettled = [
            f"{'no variant' if not equal else 'only ' + min(equal)} passes the "
            "equal-quality gate: there is no pair of equal-quality variants to separate"
        ]
    elif not unsettled:
        unsettled = [
            "the series separates every pair of equal-quality variants, and no cost "
            "difference is within the measurement noise"
        ]
    return "; ".join(
        relaxation_sentences(all_stats)
        + pooled_hardware_sentences(all_stats)
        + loaded_sentences(all_stats)
        + unsettled
    )


def loaded_sentences(all_stats: Sequence[VariantStats]) -> list[str]:
    """Each variant whose statistics rest on windows taken under load (other processes took
    more than summary.LOADED_SHARE of the machine's CPU): its times may be stretched."""
    return [
        f"{st.variant_id}'s times rest on {len(st.loaded)} of {st.successes} window(s) taken "
        f"under load (other processes above {LOADED_SHARE:.0%} of the machine's CPU), so they "
        "may be stretched by it"
        for st in all_stats
        if st.loaded
    ]


def pooled_hardware_sentences(all_stats: Sequence[VariantStats]) -> list[str]:
    """Each variant whose successes ran on several machines or GPU models (a merge, a
    cluster): its median_s pools them under the one rule (R14), so it is no one machine's."""
    return [
        f"{st.variant_id}'s median_s mixes hardware: its runs come from "
        f"{len(st.machines)} machines ("
        + ", ".join(f"{machine_label(m)} {len(runs)} run(s)" for m, runs in st.machines.items())
        + "), so it is no one machine's figure"
        for st in all_stats
        if st.mixed_hardware
    ]


def relaxation_sentences(all_stats: Sequence[VariantStats]) -> list[str]:
    """R16: each threshold lowered or tolerance widened after attempts ran, and whose runs
    reuse the corpus measured before it (no new, independent evaluation, R2)."""
    out = []
    for r in dict.fromkeys(r for st in all_stats for r in st.relaxations):
        users = [st.variant_id for st in all_stats if r.seen(st.corpora)]
        out.append(
            f"{r.text()}: "
            + (
                f"runs of {', '.join(users)} reuse the corpus measured before, so they are not the "
                "new, independent evaluation that change requires"
                if users
                else "runs on the corpus measured before would not be the new, independent evaluation "
                "that change requires"
            )
        )
    return out


def draft_text(d: Decision) -> str:
    """The ``draft`` field: the suggestions, one ``field: text`` line each, then the verdicts."""
    lines = [DRAFT_HEADER]
    lines += [f"{name}: {d.suggestions[name]}" for name in MEMO_FIELDS]
    lines.append("separation:")
    lines += [f"- {s.sentence()}" for s in d.separations] or ["- no pair to compare"]
    lines.append(SCOPE)
    return "\n".join(lines)


def previous_suggestions(draft: Any) -> dict[str, str]:
    """The suggestions a previous report wrote into ``draft`` (field -> text)."""
    found: dict[str, str] = {}
    for line in str(draft or "").splitlines():
        name, sep, text = line.partition(": ")
        if sep and name in MEMO_FIELDS:
            found[name] = text
    return found


def update_memo(form: dict[str, Any], d: Decision) -> None:
    """Write the draft; fill each memo field a person has not edited. Never touch the others."""
    before = previous_suggestions(form.get("draft"))
    for name in MEMO_FIELDS:
        current = form.get(name)
        text = "" if current is None else str(current)
        if not text.strip() or text == before.get(name):
            form[name] = d.suggestions[name]
        else:
            d.kept_fields.append(name)
    form["draft"] = draft_text(d)
