"""From variants to Settlement rows (R19-R23): the decision part and the incurred part.

*Decision*, one row per configuration (variant), in Summary order: the
production projection. The Protocol's expected outputs at the variant's
measured time for one corpus end to end (Summary ``campaign_s``: load +
warm-up + measured + evaluation + export; for a configuration that relies on a
declared resume variant to finish the corpus, plus the resume variant's, R13),
spread over the lots, give the
hours; the cheapest plan and number of lots of the variant's GPU (Tariffs,
each provider's newest snapshot) that cover them and finish before the deadline
give the budget. The decision columns are in USD (price_per_lot_usd,
budget_usd): offers in another currency are left out and named, never
converted, and a GPU sold only in another currency stays unpriced with that
reason. Lots work on separate corpora side by side: the work splits by
corpus, never a model across lots. Production is assumed to run inside the
rental (seed 000: the access window holds the whole job): each lot's work must
fit its plan, and the deadline check compares it with the hours from the
Schedule window's start to the deadline (the Schedule's own phases are not
subtracted: ``deadline_check`` names both figures). The cost per accepted
corpus is budget / the accepted corpora the user confirmed in the Verification
sheet (seed 000: the tool's verdict alone does not count, and a capacity
forecast never stands in for accepted results): empty with its reason until
then, ``undefined`` when none was accepted.

*Incurred*: money actually spent, from the Rentals sheet, each rental once
(:mod:`toolkit.money.incurred`), the other costs typed in the Settlement, and
a total per currency.

Runner-accepted corpora (R22: the corpus fingerprints, Manifest
``corpus_sha256``, of the variant's attempts with ``corpus_accepted = yes``
under the current protocol, each counted once) are shown beside the user's
confirmation, never in its place.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from typing import Any

from toolkit import layout
from toolkit.evidence.money_rules import accepted_corpora
from toolkit.money import incurred, ledger, settlement
from toolkit.money.schedule import Window
from toolkit.money.tariffs import Catalog, Meter, Plan, rules
from toolkit.report import serving
from toolkit.report.quality import resumed_by
from toolkit.report.summary import VariantStats
from toolkit.workbook.model import Formula, WorkbookData

NO_RENTAL = "cpu variant: no rental price applies"
#: Most lots a projection considers: separate machines, each on its own corpora.
MAX_LOTS = 16


@dataclass
class Costing:
    """One configuration's decision row: the projected plan and lots, or why there is none."""

    stats: VariantStats
    gpu_slug: str | None
    lots: int
    lots_ground: str
    #: Runner-accepted distinct corpora (fingerprints); None before any attempt.
    accepted: frozenset[str] | None
    #: The flat plan, or the metered price, the configuration is priced at.
    plan: Plan | Meter | None = None
    reason: str | None = None  # why there is no plan or price
    rental_id: str | None = None
    #: Distinct validated corpora the user confirmed (Verification); None until confirmed.
    confirmed: int | None = None
    confirm_reason: str = ""
    projected_corpora: int | None = None
    projected_hours: Decimal | None = None  # per lot
    deadline_check: str | None = None
    #: Offers of the GPU in another currency, left out of the comparison (never converted).
    currency_note: str | None = None
    #: The declared resume variant this configuration relies on to finish the corpus (R13):
    #: its time and attempts count with this configuration.
    resume: VariantStats | None = None
    #: Where the variant ran (Variants device): a cpu run is never said to run on the card.
    device: str | None = None
    #: For a metered price (``plan`` a Meter): the seconds each lot is billed.
    billed_seconds: int | None = None
    #: The Schedule's span the plan was chosen to cover (each lot is held that long at
    #: least); None when no plan was chosen.
    span_hours: Decimal | None = None
    #: A serving configuration (no batch corpus to project): the price the Schedule's span
    #: costs on its card, chosen by the same rule (:func:`cheapest_cover`, no batch work).
    rental_plan: Plan | Meter | None = None

    @property
    def serving_price(self) -> Plan | Meter | None:
        """The price a serving configuration's cost per million tokens rests on: its
        decision's plan, else the price of the Schedule's span on its card."""
        return self.plan or self.rental_plan

    @property
    def campaign(self) -> float | None:
        """One corpus end to end for this configuration: its campaign_s, plus its resume
        variant's when it relies on one (R13); None when either is missing."""
        own = self.stats.campaign
        if self.resume is None or own is None:
            return own
        other = self.resume.campaign
        return None if other is None else own + other

    @property
    def per_corpus(self) -> float | None:
        """Seconds each production corpus is charged: :attr:`campaign`, plus what its cold
        pass took beyond the warm median (a batch job meets each new corpus cold)."""
        own = self.campaign
        return None if own is None else own + self.stats.cold_surcharge

    @property
    def accepted_count(self) -> int | None:
        """Distinct validated corpora the user confirmed; None until confirmed."""
        return self.confirmed

    @property
    def runner_accepted(self) -> int | None:
        """Distinct corpora the runner accepted; None while the variant has no attempt."""
        return None if self.accepted is None else len(self.accepted)

    @property
    def budget(self) -> Decimal | None:
        """Flat price of one lot x lots, or the metered charge of the lots for their billed
        seconds; None without a plan."""
        if isinstance(self.plan, Meter):
            return self.plan.charge(self.billed_seconds or 0, self.lots)
        return None if self.plan is None else rules.budget(self.plan, self.lots)

    @property
    def plan_text(self) -> str:
        """The plan in words: ``7-day plan``, ``metered on-demand per second (96 h billed)``;
        empty without one."""
        if isinstance(self.plan, Meter):
            billed = rules.hours_text(Decimal(self.billed_seconds or 0) / 3600)
            return (
                f"metered {self.plan.market} {rules.billing_text(self.plan.billing_seconds)} "
                f"({billed} billed)"
            )
        return "" if self.plan is None else f"{self.plan.plan_days}-day plan"

    @property
    def forecast_per_expected(self) -> Decimal | None:
        """A FORECAST: the budget / the expected outputs it is sized for; None without both.

        Never over the confirmed benchmark corpora: a plan for 20 expected corpora divided by
        1 confirmed corpus blends a forecast with a count (seed 000). What was spent per
        accepted corpus is :func:`spent_per_accepted`, from the incurred total.
        """
        if self.budget is None or not self.projected_corpora:
            return None
        return rules.cost_per_accepted(self.budget, self.projected_corpora)

    @property
    def cost_text(self) -> str:
        """The forecast per expected corpus as a reviewer reads it, or why there is none."""
        if self.plan is None:
            return f"no price ({self.reason})"
        if not self.stats.equal_quality:  # the Settlement's cell follows the same rule
            return "empty: outside the equal-quality comparison"
        cost = self.forecast_per_expected
        if cost is None:
            return "no forecast: no expected outputs in the Protocol"
        marked = f"; {layout.EXAMPLE} figures" if self.example else ""
        return f"{rules.usd(rules.to_cent(cost))} per expected corpus (forecast{marked})"

    @property
    def example(self) -> bool:
        """Whether the row rests on an example figure: its price's source or its
        confirmation says EXAMPLE (the Settlement's grounds say the same)."""
        source = self.plan.source if self.plan is not None else ""
        return layout.EXAMPLE in source or layout.EXAMPLE in self.confirm_reason


def campaign_accepted(costs: Sequence[Costing]) -> int | None:
    """Distinct corpora accepted and confirmed in this campaign: the most any configuration
    confirmed (every variant processes the Protocol's one corpus, so a corpus accepted by
    several variants counts once, R22); None while nothing is confirmed."""
    counts = [c.confirmed for c in costs if c.confirmed is not None]
    return max(counts) if counts else None


def spent_per_accepted(total: Any, accepted: int | None) -> Decimal | str | None:
    """An incurred total / the campaign's confirmed corpora: ``undefined`` with none, None
    while the total is not a sum (incomplete) or nothing is confirmed."""
    if not isinstance(total, Decimal) or accepted is None:
        return None
    per = rules.cost_per_accepted(total, accepted)
    return rules.UNDEFINED if per is None else per


def confirmation(
    variant_id: str, verification: Sequence[dict[str, Any]], runner_accepted: int
) -> tuple[int | None, str]:
    """The user's confirmed corpora for a variant (Verification sheet), or None and why.

    A count above the corpora the runner accepted is not counted (validate names it): only
    outputs that exist and passed can be confirmed.
    """
    row = next((r for r in verification if str(r.get("variant_id")) == variant_id), None)
    if row is None:
        return None, (
            "not confirmed: record your own check of the outputs in the "
            "Verification sheet (verified yes, confirmed_corpora)"
        )
    if row.get("verified") != layout.YES:
        return None, "not confirmed: Verification says verified no"
    count = row.get("confirmed_corpora")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None, "verified, but confirmed_corpora is empty: type the distinct corpora"
    if count > runner_accepted:
        return None, (
            f"not counted: {count} confirmed, but the runner accepted "
            f"{runner_accepted} distinct corpus(es); correct confirmed_corpora"
        )
    return count, f"confirmed by {row.get('verified_by') or 'someone unnamed'}"


def _sold(catalog: Catalog, gpu: str) -> tuple[list[Plan], str]:
    """The USD plans of ``gpu`` in each provider's newest snapshot, or none and why.

    Prices in two currencies are never compared: the decision columns are in USD,
    so an offer in another currency is left out (:func:`currency_note` names it).
    """
    offers = [p for p in catalog.newest() if p.gpu_slug == gpu]
    sold = [p for p in offers if p.currency == settlement.CONFIGURATION_CURRENCY]
    if sold:
        return sold, ""
    if offers:
        return [], (
            f"{gpu} is priced only in {_offers_text(offers)}: the Settlement's decision "
            f"columns are in {settlement.CONFIGURATION_CURRENCY} and prices in another "
            "currency are never compared or converted (no exchange rate is assumed)"
        )
    dates = sorted({p.catalog_date for p in catalog.newest()})
    where = (
        f"catalog of {dates[0]}"
        if len(catalog.providers()) == 1
        else f"newest snapshots ({', '.join(dates)})"
    )
    return [], f"{gpu} has no price in the Tariffs sheet's {where}"


def _offers_text(offers: Sequence[Plan]) -> str:
    """Offers grouped by currency, e.g. ``EUR (Example Cloud, snapshot of 2026-11-20)``."""
    by_currency: dict[str, list[str]] = {}
    for p in offers:
        seller = f"{p.seller}, snapshot of {p.catalog_date}"
        if seller not in by_currency.setdefault(p.currency, []):
            by_currency[p.currency].append(seller)
    return " and ".join(f"{cur} ({'; '.join(who)})" for cur, who in sorted(by_currency.items()))


def currency_note(catalog: Catalog, gpu: str) -> str | None:
    """The offers of ``gpu`` left out of the USD comparison, or None when there are none."""
    others = [
        p
        for p in catalog.newest()
        if p.gpu_slug == gpu and p.currency != settlement.CONFIGURATION_CURRENCY
    ]
    if not others or not _sold(catalog, gpu)[0]:
        return None
    return (
        f"offers of {gpu} in {_offers_text(others)} left out: prices in different "
        "currencies are never compared or converted without a dated exchange rate typed "
        "by you"
    )


def _metered_sold(catalog: Catalog, gpu: str, flat: Sequence[Plan]) -> list[Meter]:
    """The on-demand USD metered prices of ``gpu`` in each provider's newest metered snapshot,
    ranked with the flat plans. Spot is left out: a batch whose capacity is reclaimed
    mid-corpus starts that corpus again, which no price here counts. A price whose source
    says EXAMPLE (a figure typed to show metered billing, not a quote) is ranked only where
    no flat plan is priced: it never outranks a quoted price."""
    newest: dict[str, str] = {}
    for m in catalog.meters:
        key = m.provider.casefold()
        newest[key] = max(newest.get(key, ""), m.catalog_date)
    found = [
        m
        for m in catalog.meters
        if m.gpu_slug == gpu
        and m.market == "on-demand"
        and m.currency == settlement.CONFIGURATION_CURRENCY
        and m.catalog_date == newest[m.provider.casefold()]
    ]
    quoted = [m for m in found if layout.EXAMPLE not in m.source]
    return quoted if flat else found


def _whose(plan: Plan | Meter) -> str:
    return f" of {plan.provider}" if plan.provider else ""


def _provider(catalog: Catalog, plan: Plan | Meter) -> str | None:
    """The plan's provider for the lookup formulas when the catalog holds several."""
    return plan.provider if len(catalog.providers()) > 1 else None


@dataclass(frozen=True)
class Price:
    """What ``lots`` lots of a flat plan or a metered price cost when held some hours: a
    flat plan that covers them, or the metered price billed for them in whole steps."""

    plan: Plan | Meter
    lots: int
    cost: Decimal
    billed_seconds: int | None = None  # a metered price's billed seconds per lot

    @property
    def billed_hours(self) -> Decimal:
        """The hours each lot is paid for: the whole plan, or the billed seconds."""
        if isinstance(self.plan, Meter):
            return Decimal(self.billed_seconds or 0) / rules.HOUR_SECONDS
        return Decimal(self.plan.hours)

    @property
    def text(self) -> str:
        """The price in words: ``7-day plan``, or ``metered on-demand price per 60 s,
        2.5 h billed per lot``."""
        if isinstance(self.plan, Meter):
            return (
                f"metered {self.plan.market} price {rules.billing_text(self.plan.billing_seconds)}"
                f", {rules.hours_text(self.billed_hours)} billed per lot"
            )
        return f"{self.plan.plan_days}-day plan"


def priced(plan: Plan | Meter, held_hours: Decimal, lots: int) -> Price | None:
    """``lots`` lots of ``plan`` held ``held_hours``: a metered price billed for them (a
    started billing step is due), a flat plan only when it covers them (None otherwise)."""
    if isinstance(plan, Meter):
        held = held_hours * rules.HOUR_SECONDS
        billed = plan.billed_seconds(int(held.to_integral_value(rounding=ROUND_CEILING)))
        return Price(plan, lots, plan.charge(billed, lots), billed)
    if plan.hours < held_hours:
        return None
    return Price(plan, lots, rules.budget(plan, lots))


def offered(catalog: Catalog, gpu: str) -> tuple[list[Plan | Meter], str]:
    """What the decision ranks for ``gpu``: its USD flat plans and on-demand metered prices
    (:func:`_sold`, :func:`_metered_sold`), or none and why."""
    sold, problem = _sold(catalog, gpu)
    return [*sold, *_metered_sold(catalog, gpu, sold)], problem


def cheapest(options: Sequence[Plan | Meter], held_hours: Decimal, lots: int) -> Price | None:
    """The rule that ranks flat plans and metered prices together: of ``options``, the one
    that costs ``lots`` lots held ``held_hours`` the least; a tie goes to the shorter
    billing. None when no flat plan covers the hours and no metered price is offered."""
    found = [p for o in options if (p := priced(o, held_hours, lots)) is not None]
    return min(found, key=lambda p: (p.cost, p.billed_hours), default=None)


def cheapest_price(
    catalog: Catalog, gpu: str, held_hours: Decimal, lots: int
) -> tuple[Price | None, str]:
    """The cheapest price of ``gpu`` for ``lots`` lots held ``held_hours`` (:func:`cheapest`,
    the Settlement's rule), and why it was taken; None and why there is none."""
    options, problem = offered(catalog, gpu)
    if not options:
        return None, problem
    found = cheapest(options, held_hours, lots)
    span = rules.hours_text(held_hours)
    if found is None:
        longest = max(p.plan_days for p in options if isinstance(p, Plan))
        return None, (
            f"no {gpu} plan in Tariffs covers the {span} span (longest priced: "
            f"{longest} days) and no metered price is offered: revise the schedule or "
            "price the extra period explicitly"
        )
    return found, (
        f"cheapest {gpu} price{_whose(found.plan)} for the {span}, flat plans and "
        "on-demand metered prices ranked together"
    )


@dataclass(frozen=True)
class Cover:
    """The cheapest plan (flat, or a metered price) and lots for a projection, the hours each
    lot works, and a note."""

    plan: Plan | Meter | None
    lots: int
    hours_per_lot: Decimal | None
    note: str
    in_time: bool | None  # None: the deadline cannot be checked
    billed_seconds: int | None = None  # a metered price's billed seconds per lot


def hours_per_lot(corpora: int, lots: int, campaign_s: float) -> Decimal:
    """Hours one lot works: its share of the corpora (rounded up) x one corpus end to end."""
    return Decimal(math.ceil(corpora / lots)) * Decimal(repr(campaign_s)) / 3600


def cheapest_cover(
    catalog: Catalog,
    gpu: str,
    corpora: int,
    campaign_s: float,
    span_hours: Decimal,
    available_hours: Decimal | None,
) -> Cover:
    """The cheapest (plan, lots) of ``gpu`` whose plan covers the Schedule's span and each lot's
    share of the work, finishing before the deadline when ``available_hours`` (window start to
    deadline) is known; flat plans and metered prices together (:func:`_metered_sold`), a
    metered lot billed for the longer of the span and its work. Ties go to fewer lots, then
    the shorter billing. When none finishes in time, the cheapest that covers the work,
    marked late."""
    options, problem = offered(catalog, gpu)
    if not options:
        return Cover(None, 1, None, problem, None)
    covering: list[tuple[bool, Decimal, int, Decimal, Price, Decimal]] = []
    for lots in range(1, MAX_LOTS + 1):
        work = hours_per_lot(corpora, lots, campaign_s)
        late = available_hours is not None and work > available_hours
        found = cheapest(options, max(work, span_hours), lots)
        if found is not None:
            covering.append((late, found.cost, lots, found.billed_hours, found, work))
    if not covering:
        longest = max(p.plan_days for p in options if isinstance(p, Plan))
        return Cover(
            None,
            1,
            None,
            f"no {gpu} plan in Tariffs covers the "
            f"{rules.hours_text(span_hours)} span and {corpora} corpus(es) on up to "
            f"{MAX_LOTS} lots (longest priced: {longest} days): revise the schedule or "
            "price the extra period explicitly",
            False,
        )
    late, _, lots, _, chosen, work = min(covering, key=lambda c: c[:4])
    note = (
        f"cheapest {gpu} cover{_whose(chosen.plan)}: {lots} lot(s) x {chosen.text} "
        f"for the {rules.hours_text(span_hours)} span, {duration(work)} of production per lot "
        "(lots work on separate corpora side by side)"
    )
    in_time = None if available_hours is None else not late
    return Cover(chosen.plan, lots, work, note, in_time, chosen.billed_seconds)


def duration(hours: Decimal) -> str:
    """Hours for display, in seconds or minutes when short, so a short run never reads ``0 h``."""
    tenth = Decimal("0.1")
    if hours * 60 < 1:
        return f"{(hours * 3600).quantize(tenth, rounding=ROUND_HALF_UP)} s"
    if hours < 1:
        return f"{(hours * 60).quantize(tenth, rounding=ROUND_HALF_UP)} min"
    return rules.hours_text(hours)


def costings(
    all_stats: Sequence[VariantStats],
    data: WorkbookData,
    catalog: Catalog | None,
    catalog_problem: str | None,
    win: Window | None,
    window_problem: str | None,
) -> list[Costing]:
    """One Costing (decision row) per variant, in Summary order."""
    protocol = data.forms["Protocol"]
    expected = protocol.get("expected_outputs")
    corpora = expected if isinstance(expected, int) and expected >= 1 else None
    available, deadline_problem = _available_hours(win, protocol.get("deadline"))
    by_id = {str(v.get("variant_id")): v for v in data.tables["Variants"]}
    verification = data.tables.get(layout.VERIFICATION.name, [])
    out = []
    for st in all_stats:
        variant = by_id.get(st.variant_id, {})
        gpu = str(variant.get("gpu_slug") or "").strip().lower() or None
        c = Costing(
            st,
            gpu,
            1,
            "",
            accepted_corpora(st.variant_id, data.tables["Attempts"], data.tables["Manifest"]),
        )
        c.rental_id = str(variant.get("rental_id") or "").strip() or None
        c.device = str(variant.get("device") or "").strip() or None
        c.confirmed, c.confirm_reason = confirmation(
            st.variant_id, verification, c.runner_accepted or 0
        )
        c.projected_corpora = corpora
        c.resume = resumed_by(st, all_stats)
        if gpu is None:
            c.reason = (
                NO_RENTAL
                if variant.get("device") != "cuda"
                else "no gpu_slug in Variants: no rental price can be looked up"
            )
        elif catalog is None:
            c.reason = f"no catalog: {catalog_problem}"
        elif win is None:
            c.reason = f"the plan cannot be chosen: {window_problem}"
        elif corpora is None:
            c.reason = "no expected_outputs in the Protocol: nothing to project"
        elif st.campaign is None:
            c.reason = (
                "no successful run yet: nothing to project"
                if not st.successes
                else "no success with every phase timed (load, warm-up, measured, "
                "evaluation, export): nothing to project"
            )
        elif c.campaign is None:
            c.reason = (
                f"its resume variant {c.resume.variant_id if c.resume else '?'} has no "
                "success with every phase timed: the time of resuming is unknown, "
                "nothing to project"
            )
        else:
            per_corpus = c.per_corpus
            assert per_corpus is not None  # c.campaign is not None
            cover = cheapest_cover(catalog, gpu, corpora, per_corpus, win.span_hours, available)
            c.plan, c.lots, c.projected_hours = cover.plan, cover.lots, cover.hours_per_lot
            c.billed_seconds, c.span_hours = cover.billed_seconds, win.span_hours
            c.reason = None if cover.plan else cover.note
            c.currency_note = currency_note(catalog, gpu)
            c.lots_ground = cover.note
            c.deadline_check = _deadline_text(cover, deadline_problem, available)
        if st.served is not None and c.plan is None and gpu and catalog and win:
            c.rental_plan = cheapest_cover(catalog, gpu, 1, 0.0, win.span_hours, available).plan
        out.append(c)
    return out


def _available_hours(win: Window | None, deadline: Any) -> tuple[Decimal | None, str | None]:
    """Hours from the access window's start to the deadline: production runs in the rental."""
    if win is None:
        return None, "no Schedule: the rental's start is unknown"
    try:
        due = rules.parse_time(str(deadline), None, "deadline")
    except rules.TariffError:
        return None, "no valid deadline in the Protocol"
    return Decimal(rules.elapsed_seconds(win.start, due)) / 3600, None


def _deadline_text(cover: Cover, problem: str | None, available: Decimal | None) -> str:
    if cover.in_time is None or available is None or cover.hours_per_lot is None:
        return f"not checked: {problem or cover.note}"
    need, left = duration(cover.hours_per_lot), rules.hours_text(max(available, Decimal(0)))
    if cover.in_time:
        return (
            f"in time: {need} of production per lot, {left} from the window's start to the deadline"
        )
    return f"cannot finish before the deadline: {need} per lot, {left} available"


#: Rows below a sheet's data that the id lookups reach: rows typed later are found too.
LOOKUP_SPARE = 1000


def by_id(sheet: layout.Sheet, column: str, key: str, id_column: str, rows: int) -> str:
    """The cell of ``sheet``'s ``column`` on the row whose ``id_column`` equals ``key`` (a
    cell): INDEX/MATCH, so a person sorting or filtering either sheet changes no value.
    #N/A when no row holds the id: wrap it (IFERROR) where that is a blank."""

    def rng(name: str) -> str:
        letter = layout.column_letter(sheet, name)
        return f"{sheet.name}!${letter}$2:${letter}${rows + 1}"

    return f"INDEX({rng(column)},MATCH({key},{rng(id_column)},0))"


def settlement_rows(
    costs: Sequence[Costing], data: WorkbookData, catalog: Catalog | None, win: Window | None
) -> list[dict[str, Any]]:
    """Settlement rows: the decision part (one per configuration, Summary order), then the
    incurred part (rentals, other costs kept, totals per currency).

    Every link to another sheet finds its row by id (variant_id, rental_id), never by
    position: sorting or filtering a table changes no number."""
    hours = None if win is None else win.span_hours
    rows = [_decision_row(i, costs, data, catalog, hours) for i in range(len(costs))]
    return rows + incurred_rows(
        data, catalog, first_row=2 + len(rows), accepted=campaign_accepted(costs)
    )


def _summary_cell(i: int, count: int, column: str, variant: str | None = None) -> str:
    """The Summary's ``column`` for the variant named in Settlement row ``i``'s item (or
    ``variant``), found by variant_id among ``count`` Summary rows."""
    item = layout.column_letter(layout.SETTLEMENT, "item")
    quoted = None if variant is None else variant.replace('"', '""')
    key = f'"{quoted}"' if quoted is not None else f"${item}{2 + i}"
    return by_id(layout.SUMMARY, column, key, "variant_id", count)


def _decision_row(
    i: int,
    costs: Sequence[Costing],
    data: WorkbookData,
    catalog: Catalog | None,
    hours: Decimal | None,
) -> dict[str, Any]:
    """The Settlement row of configuration ``costs[i]``: its price and budget (or why it has
    none), the accepted corpora, and its times as formulas into Summary and Schedule."""
    c, excel = costs[i], 2 + i
    row = _priced_row(c, catalog, hours, excel)
    row.update(part="decision", rental_id=c.rental_id, deadline_check=c.deadline_check)
    row["accepted_corpora"] = _confirmed_formula(c, data, excel)
    median = _summary_cell(i, len(costs), "median_s")
    row["median_s"] = Formula(f'IF({median}="","",{median})', c.stats.median)
    forecast = row["projected_cost_per_expected_usd"]
    if isinstance(forecast, Formula):
        # R16/R18: a configuration outside the equal-quality comparison has no cost to
        # compare (its grounds say why); its budget stays. report.md follows the same rule.
        equal = _summary_cell(i, len(costs), "equal_quality")
        row["projected_cost_per_expected_usd"] = Formula(
            f'IF({equal}="{layout.YES}",{forecast.text},"")',
            forecast.value if c.stats.equal_quality else "",
        )
    _time_cells(row, i, costs)
    _serving_cost(row, i, costs)
    if hours is not None:
        row["campaign_hours"] = Formula(schedule_span(len(data.tables["Schedule"])), hours)
    return row


def _serving_cost(row: dict[str, Any], i: int, costs: Sequence[Costing]) -> None:
    """A serving configuration's cost per million output tokens within target, as a formula
    into its Summary row, at the price the Settlement uses for its card (its decision's plan,
    else the cheapest cover of the Schedule's span): a metered price per hour, or a flat
    plan's price per lot over the plan's hours (its grounds say which); nothing for a batch
    configuration or a card without a price."""
    c = costs[i]
    figures, plan = c.stats.served, c.serving_price
    price = serving.hourly_price(plan)
    if figures is None or plan is None or price is None:
        return
    # The price as a constant: a serving row's own price cells stay empty (nothing projected).
    per_hour = (
        f"{plan.price_per_hour}"
        if isinstance(plan, Meter)
        else f"{plan.price_per_lot_usd}/{plan.hours}"
    )
    tokens = _summary_cell(i, len(costs), "good_output_tokens")
    served = _summary_cell(i, len(costs), "served_s")
    row["cost_per_million_tokens"] = Formula(
        f'IF(OR({tokens}="",{tokens}=0,{served}=""),"",{per_hour}*{served}/3600/{tokens}*1000000)',
        serving.cost_per_million_tokens(
            price.per_hour, figures.measured_s, figures.good_output_tokens
        ),
    )
    row["grounds"] = (
        f"{row.get('grounds') or ''}; cost per million output tokens at the price of "
        f"{c.gpu_slug} for the Schedule's span, chosen as a batch job's: {price.text} "
        f"({price.source})"
    ).lstrip("; ")


def _priced_row(
    c: Costing, catalog: Catalog | None, hours: Decimal | None, excel: int
) -> dict[str, Any]:
    """A configuration's row priced from its plan in the catalog; without one, its money
    cells empty and the grounds saying why."""
    if c.plan is None or catalog is None:
        row: dict[str, Any] = {name: None for name in layout.SETTLEMENT.names}
        row.update(
            item=c.stats.variant_id,
            kind="configuration",
            gpu_slug=c.gpu_slug,
            quality_verdict=c.stats.quality_verdict,
            projected_corpora=c.projected_corpora,
            grounds=_grounds(c, f"{c.reason}; money cells left empty, never 0"),
        )
        return row
    meter = c.plan if isinstance(c.plan, Meter) else None
    config = settlement.Configuration(
        item=c.stats.variant_id,
        gpu_slug=c.plan.gpu_slug,
        plan_days=0 if isinstance(c.plan, Meter) else c.plan.plan_days,
        lots=c.lots,
        accepted=c.confirmed,
        quality_verdict=c.stats.quality_verdict,
        median_s=c.stats.median,
        campaign_hours=hours,
        catalog_date=c.plan.catalog_date,
        grounds=_grounds(c, f"projection, not a measurement: {c.lots_ground} ({c.plan.source})"),
        projected_corpora=c.projected_corpora,
        provider=_provider(catalog, c.plan),
        meter=meter,
        billed_seconds=c.billed_seconds,
    )
    return settlement.configuration_row(config, catalog, excel)


def _time_cells(row: dict[str, Any], i: int, costs: Sequence[Costing]) -> None:
    """The configuration's campaign time (its resume variant's added) and the hours its
    projected corpora take per lot, as formulas."""
    c, excel = costs[i], 2 + i
    campaign = _summary_cell(i, len(costs), "campaign_s")
    row["campaign_s"] = Formula(f'IF({campaign}="","",{campaign})', c.stats.campaign)
    if c.resume is not None and c.resume.variant_id in {o.stats.variant_id for o in costs}:
        # R13: the resume variant's time counts with the configuration it resumes.
        other = _summary_cell(i, len(costs), "campaign_s", c.resume.variant_id)
        row["campaign_s"] = Formula(
            f'IF(OR({campaign}="",{other}=""),"",{campaign}+{other})', c.campaign
        )
    if c.projected_hours is not None and c.projected_corpora is not None:
        col = {
            n: f"{layout.column_letter(layout.SETTLEMENT, n)}{excel}"
            for n in ("projected_corpora", "lots", "campaign_s")
        }
        # Each corpus met cold: the cold pass beyond the warm median, never below 0 (a
        # blank cold pass counts nothing).
        median = _summary_cell(i, len(costs), "median_s")
        cold = f"MAX(0,IFERROR({_summary_cell(i, len(costs), 'cold_pass_s')}-{median},0))"
        row["projected_hours"] = Formula(
            f'IF({col["campaign_s"]}="","",ROUNDUP({col["projected_corpora"]}/{col["lots"]}'
            f",0)*({col['campaign_s']}+{cold})/3600)",
            c.projected_hours,
        )


def _confirmed_formula(c: Costing, data: WorkbookData, excel: int) -> Any:
    """The accepted_corpora cell: the user's confirmed count from the Verification row of the
    same variant_id, or empty (also when above the runner's count, written into the formula
    as a number)."""
    rows = data.tables.get(layout.VERIFICATION.name, [])
    if not any(str(r.get("variant_id")) == c.stats.variant_id for r in rows):
        return None
    key = f"${layout.column_letter(layout.SETTLEMENT, 'item')}{excel}"

    def cell(name: str) -> str:
        return by_id(layout.VERIFICATION, name, key, "variant_id", len(rows) + LOOKUP_SPARE)

    count = cell("confirmed_corpora")
    # IFERROR: a Verification row deleted since is no confirmation, never #N/A.
    return Formula(
        f'IFERROR(IF(AND({cell("verified")}="yes",ISNUMBER({count})),'
        f'IF({count}<={c.runner_accepted or 0},{count},""),""),"")',
        "" if c.confirmed is None else c.confirmed,
    )


def incurred_rows(
    data: WorkbookData, catalog: Catalog | None, first_row: int, accepted: int | None = None
) -> list[dict[str, Any]]:
    """The incurred part from Excel row ``first_row``: each rental once (with its ledger
    status), the other costs typed in the Settlement, one total per currency (with the
    known subtotal, its ledger status and what was spent per accepted corpus: the total /
    ``accepted``, the campaign's confirmed corpora), then the ledger lines no rental or
    other cost accounts for (outside the totals)."""
    variants = data.tables["Variants"]
    rentals = incurred.rentals_of(data)
    rows = [incurred.rental_row(r, catalog, variants, first_row + i) for i, r in enumerate(rentals)]
    others = [
        incurred.other_cost_row(r)
        for r in data.tables[layout.SETTLEMENT.name]
        if r.get("kind") == "other cost"
    ]
    status, extra = incurred.reconciliation(data, catalog, others)
    for row in rows + others:
        row["ledger_status"] = status.get(str(row.get("item")))
    rows += others
    for i, row in enumerate(rows):
        row["counted_amount"] = incurred.counted(row, first_row + i)
    if rows:
        rows += incurred.total_rows(rows, first_row, accepted)
    for entry in extra:
        rows.append(
            settlement.full_row(
                {
                    "item": entry.get("reference") or entry.get("description") or "ledger line",
                    "kind": "ledger only",
                    "part": "incurred",
                    "amount": entry.get("amount"),
                    "currency": entry.get("currency"),
                    "ledger_status": "in the ledger, not in the workbook",
                    "grounds": f"{entry.get('date')} {entry.get('description') or ''} "
                    f"({entry.get('source')}): add the rental to Rentals, or record it "
                    "as another cost whose item is its reference, with its grounds".replace(
                        "  ", " "
                    ),
                }
            )
        )
    return rows


def incurred_summary(rows: Sequence[dict[str, Any]]) -> str:
    """The incurred part in one sentence for the memo: totals per currency, ledger status."""
    if not rows:
        return "no rental recorded (Rentals sheet empty)"
    totals = []
    for r in rows:
        if r.get("kind") == "total incurred":
            value = r["amount"].value if isinstance(r.get("amount"), Formula) else r.get("amount")
            shown = rules.amount_text(value) if isinstance(value, Decimal) else str(value)
            totals.append(f"{shown} {r.get('currency') or ''}".strip())
    statuses = [str(r.get("ledger_status")) for r in rows if r.get("kind") == "rental"]
    if statuses and all(s == ledger.NO_LEDGER for s in statuses):
        ledger_text = "no ledger imported to check it against"
    else:
        matched = sum(s.startswith("matched") for s in statuses)
        extra = sum(r.get("kind") == "ledger only" for r in rows)
        ledger_text = f"ledger: {matched} of {len(statuses)} rental(s) matched" + (
            f", {extra} ledger line(s) not in the workbook" if extra else ""
        )
    return f"{' and '.join(totals) or 'no total'} incurred, each rental once; {ledger_text}"


def resume_text(c: Costing) -> str:
    """What a resumed configuration's Settlement row counts (R13); empty without a resume."""
    r, st = c.resume, c.stats
    if r is None:
        return ""

    def seconds(value: float | None) -> str:
        return "no full run" if value is None else f"{value:.3f} s"

    return (
        f"with its resume variant {r.variant_id}: campaign_s is {st.variant_id}'s "
        f"{seconds(st.campaign)} + {r.variant_id}'s {seconds(r.campaign)}; attempts "
        f"{st.variant_id} {st.attempts} ({len(st.unfinished)} unfinished) + "
        f"{r.variant_id} {r.attempts}"
    )


def _grounds(c: Costing, text: str) -> str:
    if c.currency_note:
        text += f"; {c.currency_note}"
    if c.resume is not None:
        text += f"; {resume_text(c)}"
    if not c.stats.equal_quality:
        text += f"; {c.stats.gate_note}: kept out of the cost comparison"
    runner = c.runner_accepted
    if runner is None:
        text += "; no attempt yet"
    else:
        text += (
            f"; the runner accepted {runner} distinct corpus(es) (repetitions of one "
            "corpus count once)"
        )
    if c.confirmed is None:
        text += f"; accepted corpora {c.confirm_reason}"
    elif c.confirmed == 0:
        text += "; no accepted corpus confirmed: cost undefined, the money spent stays"
    else:
        text += f"; {c.confirmed} accepted corpus(es) {c.confirm_reason}"
    return text


def schedule_span(rows: int) -> str:
    """The span of the access window: the one span_hours the Schedule holds, wherever a
    sort put its row."""
    letter = layout.column_letter(layout.SCHEDULE, "span_hours")
    span = f"{layout.SCHEDULE.name}!${letter}$2:${letter}${rows + 1}"
    return f'IF(COUNT({span})=0,"",MAX({span}))'


@dataclass(frozen=True)
class Projection:
    """Production of the expected corpora at measured speeds: a projection, not output."""

    corpora: int
    hours_at_median: Decimal
    hours_at_fastest: Decimal
    hours_at_slowest: Decimal
    #: The cheapest flat plan or metered price for the hours at the fastest and the slowest
    #: run (:func:`cheapest_price`); None without a price.
    at_fastest: Price | None
    at_slowest: Price | None

    def budget_range(self) -> tuple[Decimal, Decimal] | None:
        """The budget for the expected corpora at the fastest and slowest runs; None without
        a price for both."""
        if self.at_fastest is None or self.at_slowest is None:
            return None
        return self.at_fastest.cost, self.at_slowest.cost


def projection(c: Costing, expected_outputs: Any, catalog: Catalog | None) -> Projection | None:
    """Processing ``expected_outputs`` corpora of the benchmark's size at the measured times.

    Hours = corpora x (measured seconds + the cold pass beyond the median) / 3600,
    processing only (no install, load or evaluation): each corpus is met cold. The budget
    at each end is the Settlement's rule (:func:`cheapest`) for the configuration's lots,
    each working its share of the corpora (side by side, on separate corpora) and held at
    least the Schedule's span: the cheapest of the GPU's flat plans covering that and its
    metered prices billed for it, so a metered budget moves with the runs' spread where a
    flat plan does not. A configuration relying on a resume variant (R13) adds the resume
    variant's median, fastest and slowest run to its own. None without runs or an expected
    count.
    """
    st, r = c.stats, c.resume
    if (
        not isinstance(expected_outputs, int)
        or expected_outputs < 1
        or st.median is None
        or st.minimum is None
        or st.maximum is None
    ):
        return None
    if r is not None and (r.median is None or r.minimum is None or r.maximum is None):
        return None

    def corpus_s(seconds: float, resumed: float | None) -> Decimal:
        # R13: a configuration that relies on a resume variant also runs it.
        total = seconds if r is None or resumed is None else seconds + resumed
        return Decimal(repr(total + st.cold_surcharge))

    def price(seconds: Decimal) -> Price | None:
        if catalog is None or c.gpu_slug is None:
            return None
        share = math.ceil(expected_outputs / c.lots)  # lots work on separate corpora
        held = max(seconds * share / 3600, c.span_hours or Decimal(0))
        return cheapest_price(catalog, c.gpu_slug, held, c.lots)[0]

    fast = corpus_s(st.minimum, r.minimum if r else None)
    slow = corpus_s(st.maximum, r.maximum if r else None)
    median = corpus_s(st.median, r.median if r else None)
    return Projection(
        expected_outputs,
        median * expected_outputs / 3600,
        fast * expected_outputs / 3600,
        slow * expected_outputs / 3600,
        price(fast),
        price(slow),
    )
