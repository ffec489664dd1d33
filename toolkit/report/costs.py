"""From variants to Settlement rows (R19-R23): GPU, plan, lots, accepted corpora, cost.

Per variant (one configuration each):

- **GPU**: ``Variants.gpu_slug``. A CPU variant has none: its row says no rental
  price applies and its money cells stay empty, never 0.
- **plan**: the shortest plan of that GPU in the Tariffs sheet's newest
  snapshot that covers the campaign's span from the Schedule sheet (a plan
  runs without pause). No Schedule rows: the plan cannot be chosen, and the row
  says so.
- **lots**: 1, unless the variant's ``notes`` say ``lots: N`` (or ``lots=N``).
- **accepted corpora**: distinct validated corpora (R22): the corpus
  fingerprints (Manifest ``corpus_sha256``) of the variant's attempts with
  ``corpus_accepted = yes`` under the current protocol, each counted once.
  Five accepted repetitions of one benchmark corpus are one accepted corpus.
  Empty while the variant has no attempt; 0 once its attempts produced none.

Budget and cost cells are the settlement module's formulas with cached values.
A *projection* of production (expected corpora x the measured time) is
computed for the memo and the money comparison; it is labelled as such and
never counted as accepted output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.errors import ToolkitError
from toolkit.money import settlement
from toolkit.money.schedule import Window
from toolkit.money.tariffs import Catalog, Plan, rules
from toolkit.report.summary import VariantStats
from toolkit.workbook.model import Formula

_LOTS = re.compile(r"\blots?\s*[:=]\s*(\d+)", re.IGNORECASE)
NO_RENTAL = "cpu variant: no rental price applies"


@dataclass
class Costing:
    """One configuration's settlement: the plan, or why there is no price."""

    stats: VariantStats
    gpu_slug: str | None
    lots: int
    lots_ground: str
    accepted: frozenset[str] | None
    plan: Plan | None = None
    reason: str | None = None  # why there is no plan or price

    @property
    def accepted_count(self) -> int | None:
        """Distinct validated corpora; None while the variant has no attempt."""
        return None if self.accepted is None else len(self.accepted)

    @property
    def budget(self) -> Decimal | None:
        """Flat price of one lot x lots; None without a plan."""
        return None if self.plan is None else rules.budget(self.plan, self.lots)

    @property
    def cost_per_accepted(self) -> Decimal | None:
        """Budget / accepted corpora; None when undefined or unpriced."""
        if self.budget is None or not self.accepted_count:
            return None
        return rules.cost_per_accepted(self.budget, self.accepted_count)

    @property
    def cost_text(self) -> str:
        """The cost per accepted corpus as a reviewer reads it."""
        if self.plan is None:
            return f"no price ({self.reason})"
        if self.accepted_count is None:
            return "empty: no attempt yet"
        cost = self.cost_per_accepted
        return rules.UNDEFINED if cost is None else rules.usd(cost)


def lots_of(variant: dict[str, Any]) -> tuple[int, str]:
    """Lots rented for a variant and why: ``lots: N`` in its notes, else 1."""
    match = _LOTS.search(str(variant.get("notes") or ""))
    if match and int(match.group(1)) >= 1:
        return int(match.group(1)), f"{match.group(1)} lots (the variant's notes)"
    return 1, "1 lot (default; write 'lots: N' in the variant's notes to rent more)"


def accepted_corpora(variant_id: str, attempts: Sequence[dict[str, Any]],
                     manifests: Sequence[dict[str, Any]]) -> frozenset[str] | None:
    """Distinct fingerprints of the variant's accepted corpora (R22); None before any attempt.

    An accepted attempt whose Manifest row is missing counts under its manifest id.
    """
    fingerprints = {m.get("manifest_id"): m.get("corpus_sha256") for m in manifests}
    mine = [a for a in attempts if str(a.get("variant_id")) == variant_id]
    if not mine:
        return None
    return frozenset(
        str(fingerprints.get(a.get("manifest_id")) or f"manifest {a.get('manifest_id')}")
        for a in mine
        if a.get("corpus_accepted") == layout.YES and a.get("pre_amendment") != layout.YES
    )


def covering_plan(catalog: Catalog, gpu: str, span_hours: Decimal) -> tuple[Plan | None, str]:
    """The shortest plan of ``gpu`` covering ``span_hours``, or None and why."""
    try:
        sold = [p for p in catalog.plans if p.catalog_date == catalog.snapshot()
                and p.gpu_slug == gpu]
    except rules.TariffError as exc:
        return None, exc.message
    if not sold:
        return None, f"{gpu} has no price in the Tariffs sheet's catalog of {catalog.snapshot()}"
    for plan in sorted(sold, key=lambda p: p.plan_days):
        if plan.hours >= span_hours:
            return plan, f"shortest {gpu} plan covering the {rules.hours_text(span_hours)} span"
    longest = max(p.plan_days for p in sold)
    return None, (f"no {gpu} plan in Tariffs covers the {rules.hours_text(span_hours)} span "
                  f"(longest priced: {longest} days): revise the schedule or price the extra "
                  "period explicitly")


def costings(all_stats: Sequence[VariantStats], variants: Sequence[dict[str, Any]],
             attempts: Sequence[dict[str, Any]], manifests: Sequence[dict[str, Any]],
             catalog: Catalog | None, catalog_problem: str | None,
             win: Window | None, window_problem: str | None) -> list[Costing]:
    """One Costing per variant, in Summary order."""
    by_id = {str(v.get("variant_id")): v for v in variants}
    out = []
    for st in all_stats:
        variant = by_id.get(st.variant_id, {})
        lots, lots_ground = lots_of(variant)
        gpu = str(variant.get("gpu_slug") or "").strip().lower() or None
        c = Costing(st, gpu, lots, lots_ground,
                    accepted_corpora(st.variant_id, attempts, manifests))
        if gpu is None:
            c.reason = NO_RENTAL if variant.get("device") != "cuda" else \
                "no gpu_slug in Variants: no rental price can be looked up"
        elif catalog is None:
            c.reason = f"no catalog: {catalog_problem}"
        elif win is None:
            c.reason = f"the plan cannot be chosen: {window_problem}"
        else:
            c.plan, why = covering_plan(catalog, gpu, win.span_hours)
            c.reason = None if c.plan else why
            if c.plan:
                c.lots_ground = f"{why}; {lots_ground}"
        out.append(c)
    return out


def settlement_rows(costs: Sequence[Costing], catalog: Catalog | None, median_cells: list[str],
                    span_cell: str | None, win: Window | None,
                    other_costs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Settlement rows: one per configuration (Summary order), then the other costs kept.

    ``median_cells[i]`` is the Summary cell holding configuration i's median;
    ``span_cell`` the Schedule cell holding the span (None without a schedule).
    """
    rows = []
    hours = None if win is None else win.span_hours
    for i, c in enumerate(costs):
        excel = 2 + i
        if c.plan is not None and catalog is not None:
            config = settlement.Configuration(
                item=c.stats.variant_id, gpu_slug=c.plan.gpu_slug, plan_days=c.plan.plan_days,
                lots=c.lots, accepted=c.accepted_count,
                quality_verdict=c.stats.quality_verdict, median_s=c.stats.median,
                campaign_hours=hours, catalog_date=c.plan.catalog_date,
                grounds=_grounds(c, f"flat {c.plan.plan_days}-day plan ({c.plan.source}); "
                                 f"{c.lots_ground}"))
            row = settlement.configuration_row(config, catalog, excel)
        else:
            row = {name: None for name in layout.SETTLEMENT.names}
            row.update(item=c.stats.variant_id, kind="configuration", gpu_slug=c.gpu_slug,
                       accepted_corpora=c.accepted_count,
                       quality_verdict=c.stats.quality_verdict,
                       grounds=_grounds(c, f"{c.reason}; money cells left empty, never 0"))
            if c.gpu_slug is not None:
                row["lots"] = c.lots
        row["median_s"] = Formula(f'IF({median_cells[i]}="","",{median_cells[i]})',
                                  c.stats.median)
        if span_cell is not None:
            row["campaign_hours"] = Formula(span_cell, hours)
        rows.append(row)
    for other in other_costs:
        rows.append(_other_cost(other))
    return rows


def _grounds(c: Costing, text: str) -> str:
    if not c.stats.equal_quality:
        text += f"; {c.stats.gate_note}: kept out of the cost comparison (R16)"
    if c.accepted_count is None:
        text += "; accepted corpora empty: no attempt yet"
    elif c.accepted_count == 0:
        text += "; no accepted corpus: cost undefined, the money spent stays"
    else:
        text += (f"; {c.accepted_count} distinct validated corpus(es) (repetitions of one "
                 "corpus count once, R22)")
    return text


def _other_cost(row: dict[str, Any]) -> dict[str, Any]:
    """Another project cost typed in the Settlement sheet, kept as typed (amount, grounds)."""
    amount = row.get("budget_usd")
    if isinstance(amount, float):
        amount = Decimal(repr(amount))
    elif isinstance(amount, int):
        amount = Decimal(amount)
    try:
        return settlement.other_cost_row(settlement.OtherCost(
            str(row.get("item") or ""), amount, str(row.get("grounds") or "")))  # type: ignore[arg-type]
    except ToolkitError:
        return {name: row.get(name) for name in layout.SETTLEMENT.names}


def schedule_span_cell() -> str:
    """The Schedule cell holding the span of the access window (first data row)."""
    return f"{layout.SCHEDULE.name}!${layout.column_letter(layout.SCHEDULE, 'span_hours')}$2"


@dataclass(frozen=True)
class Projection:
    """Production of the expected corpora at measured speeds: a projection, not output."""

    corpora: int
    hours_at_median: Decimal
    hours_at_fastest: Decimal
    hours_at_slowest: Decimal
    plan_at_fastest: Plan | None
    plan_at_slowest: Plan | None

    def cost_range(self, lots: int, corpora: int) -> tuple[Decimal, Decimal] | None:
        """Projected cost per corpus at the fastest and slowest runs; None without plans."""
        if self.plan_at_fastest is None or self.plan_at_slowest is None or corpora < 1:
            return None
        return (rules.budget(self.plan_at_fastest, lots) / corpora,
                rules.budget(self.plan_at_slowest, lots) / corpora)


def projection(c: Costing, expected_outputs: Any, catalog: Catalog | None) -> Projection | None:
    """Processing ``expected_outputs`` corpora of the benchmark's size at the measured times.

    Hours = corpora x measured seconds / 3600, processing only (no install,
    load or evaluation); the plan is the shortest one of the variant's GPU
    covering those hours. None without runs or an expected count.
    """
    st = c.stats
    if (not isinstance(expected_outputs, int) or expected_outputs < 1 or st.median is None
            or st.minimum is None or st.maximum is None):
        return None

    def hours(seconds: float) -> Decimal:
        return Decimal(repr(seconds)) * expected_outputs / 3600

    def plan(h: Decimal) -> Plan | None:
        if catalog is None or c.gpu_slug is None:
            return None
        return covering_plan(catalog, c.gpu_slug, h)[0]

    fast, slow = hours(st.minimum), hours(st.maximum)
    return Projection(expected_outputs, hours(st.median), fast, slow, plan(fast), plan(slow))
