"""Settlement rows (R21-R23): budget and cost per accepted corpus, as formulas and in Python.

:func:`settlement_rows` is pure: given configurations, other project costs and
the catalog (read from the same workbook's Tariffs sheet), it returns the rows
of the Settlement sheet. Price, cards, budget and cost cells are formulas that
look the price up in Tariffs (SUMPRODUCT, which LibreOffice 7.4 and Excel both
evaluate the same way); their cached values come from the rules of
``calcul_forfaits`` in Decimal, so a reader that never recalculates sees the
same numbers. Stdlib only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.errors import CatalogError, UsageError
from toolkit.money.tariffs import Catalog, Meter, rules, translated
from toolkit.workbook.model import Formula

#: Tariffs rows the lookup formulas reach (header excluded); far beyond any catalog.
TARIFF_ROWS = 5000
NO_PRICE = "no price in Tariffs"
UNDEFINED = rules.UNDEFINED
#: The currency of the configuration rows' money columns (price_per_lot_usd, budget_usd,
#: cost_per_accepted_usd): a plan priced in another currency is refused, never converted.
CONFIGURATION_CURRENCY = "USD"


@dataclass(frozen=True)
class Configuration:
    """A rented configuration to settle.

    ``accepted`` is the number of distinct validated corpora (R22), or the ids
    of the accepted corpora (counted once each), or None while outputs are not
    validated yet (the cost cell then stays empty).
    """

    item: str
    gpu_slug: str
    plan_days: int
    lots: int
    accepted: int | Collection[str] | None = None
    quality_verdict: str | None = None
    median_s: float | None = None
    campaign_hours: Decimal | float | None = None
    catalog_date: str | None = None  # None: the catalog's newest snapshot
    grounds: str | None = None  # None: the plan's catalog source
    #: A projection: the budget is sized for this many corpora. The cost per accepted corpus
    #: still divides by ``accepted`` (a forecast never stands in for accepted results).
    projected_corpora: int | None = None
    #: Whose prices, when the catalog holds several providers' ("" for the unnamed one);
    #: None for a catalog of one provider.
    provider: str | None = None
    #: A metered price instead of the flat ``plan_days`` plan: the lots are charged for
    #: ``billed_seconds`` at its price per hour (``plan_days`` is then not read).
    meter: Meter | None = None
    billed_seconds: int | None = None


@dataclass(frozen=True)
class OtherCost:
    """Another project cost (storage, egress, staff time...), recorded with its grounds."""

    item: str
    amount_usd: Decimal
    grounds: str


def accepted_count(accepted: int | Collection[str] | None) -> int | None:
    """Distinct validated corpora: an int as given, a collection of ids counted once each."""
    if accepted is None:
        return None
    if isinstance(accepted, int) and not isinstance(accepted, bool):
        with translated(UsageError):
            return rules.check_accepted(accepted)
    if isinstance(accepted, (str, bytes)) or not isinstance(accepted, Collection):
        raise UsageError(
            f"accepted corpora {accepted!r}: expected a count or corpus ids",
            hint="count distinct validated corpora, never repetitions",
        )
    return len(set(accepted))


def _columns() -> dict[str, str]:
    return {name: layout.column_letter(layout.SETTLEMENT, name) for name in layout.SETTLEMENT.names}


def _tariff_range(column: str) -> str:
    letter = layout.column_letter(layout.TARIFFS, column)
    return f"{layout.TARIFFS.name}!${letter}$2:${letter}${TARIFF_ROWS + 1}"


def lookup_formula(column: str, row: int, provider: str | None = None) -> str:
    """A formula for Tariffs' ``column`` on the row matching this Settlement row's plan.

    Exactly one Tariffs row must match (gpu_slug, plan_days, catalog_date, and
    ``provider`` when given: a catalog of several providers; "" matches the rows
    naming none); otherwise it shows "no price in Tariffs" rather than 0.
    """
    c = _columns()
    match = (
        f"({_tariff_range('gpu_slug')}=${c['gpu_slug']}{row})"
        f"*({_tariff_range('plan_days')}=${c['plan_days']}{row})"
        f"*({_tariff_range('catalog_date')}=${c['catalog_date']}{row})"
    )
    if provider is not None:
        text = provider.strip().replace('"', '""')  # Excel compares text without case
        match += f'*({_tariff_range("provider")}="{text}")'
    return f'IF(SUMPRODUCT({match})=1,SUMPRODUCT({match},{_tariff_range(column)}),"{NO_PRICE}")'


def metered_lookup(meter: Meter, row: int, several: bool) -> str:
    """A formula for the price per hour of the Tariffs row of ``meter``, matched on this
    Settlement row's GPU, snapshot and lot size and the meter's market and billing step;
    "no price in Tariffs" unless exactly one row matches."""
    c = _columns()
    match = (
        f"({_tariff_range('gpu_slug')}=${c['gpu_slug']}{row})"
        f"*({_tariff_range('catalog_date')}=${c['catalog_date']}{row})"
        f"*({_tariff_range('cards_per_lot')}=${c['cards_per_lot']}{row})"
        f'*({_tariff_range("market")}="{meter.market}")'
        f"*({_tariff_range('billing_seconds')}={meter.billing_seconds})"
    )
    if several:
        text = meter.provider.strip().replace('"', '""')
        match += f'*({_tariff_range("provider")}="{text}")'
    return (
        f"IF(SUMPRODUCT({match})=1,SUMPRODUCT({match},{_tariff_range('price_per_hour')}),"
        f'"{NO_PRICE}")'
    )


def _flat_cells(config: Configuration, catalog: Catalog, row: int) -> tuple[dict[str, Any], Any]:
    """A flat configuration's price cells (Tariffs lookups) and its budget in Decimal."""
    c = _columns()
    with translated():
        plan = catalog.only(config.provider).plan(
            config.gpu_slug, config.plan_days, config.catalog_date
        )
        total = rules.budget(plan, config.lots)
    _usd_only(config, plan.currency, f"{plan.plan_days}-day {plan.gpu_slug} plan of {plan.seller}")
    price, lots, cards_per_lot = (
        f"{c[n]}{row}" for n in ("price_per_lot_usd", "lots", "cards_per_lot")
    )
    cells = {
        "gpu_slug": plan.gpu_slug,
        "catalog_date": plan.catalog_date,
        "plan_days": plan.plan_days,
        "cards_per_lot": Formula(
            lookup_formula("cards_per_lot", row, config.provider), plan.cards_per_lot
        ),
        "cards": Formula(
            f'IF(ISNUMBER({cards_per_lot}),{lots}*{cards_per_lot},"{NO_PRICE}")',
            config.lots * plan.cards_per_lot,
        ),
        "price_per_lot_usd": Formula(
            lookup_formula("price_per_lot_usd", row, config.provider), plan.price_per_lot_usd
        ),
        # Lots, never cards: a B200 lot's price already covers its two cards.
        "budget_usd": Formula(f'IF(ISNUMBER({price}),{price}*{lots},"{NO_PRICE}")', total),
        "grounds": f"flat {plan.plan_days}-day plan, {plan.source}",
    }
    return cells, total


def _metered_cells(config: Configuration, meter: Meter, row: int) -> tuple[dict[str, Any], Any]:
    """A metered configuration's cells: its price per hour (a Tariffs lookup), the billed
    seconds, and the charge of the lots to the cent, as an invoice states it."""
    c = _columns()
    billed = config.billed_seconds or 0
    total = meter.charge(billed, config.lots)
    _usd_only(config, meter.currency, f"{meter.market} {meter.gpu_slug} price of {meter.seller}")
    rate, seconds, lots = (f"{c[n]}{row}" for n in ("price_per_hour", "billed_seconds", "lots"))
    cells = {
        "gpu_slug": meter.gpu_slug,
        "catalog_date": meter.catalog_date,
        "cards_per_lot": meter.cards_per_lot,
        "cards": Formula(f"{lots}*{c['cards_per_lot']}{row}", config.lots * meter.cards_per_lot),
        "price_per_hour": Formula(
            metered_lookup(meter, row, config.provider is not None), meter.price_per_hour
        ),
        "billed_seconds": billed,
        # ROUND is half away from zero: half-up for an amount >= 0.
        "budget_usd": Formula(
            f'IF(ISNUMBER({rate}),ROUND({rate}*{seconds}/3600*{lots},2),"{NO_PRICE}")', total
        ),
        "grounds": f"metered {meter.market} price {rules.billing_text(meter.billing_seconds)}, "
        f"{meter.source}",
    }
    return cells, total


def _usd_only(config: Configuration, currency: str, what: str) -> None:
    if currency != CONFIGURATION_CURRENCY:
        raise CatalogError(
            f"{config.item}: the {what} is priced in {currency}; the Settlement's "
            f"configuration columns are in {CONFIGURATION_CURRENCY} and prices are never "
            "converted",
            hint=f"price the configuration with a {CONFIGURATION_CURRENCY} snapshot, or leave "
            "it unpriced with its reason",
        )


def configuration_row(config: Configuration, catalog: Catalog, row: int) -> dict[str, Any]:
    """The Settlement row of one configuration written at Excel row ``row``: priced from its
    flat plan, or from its metered price for the billed seconds."""
    c = _columns()
    if config.meter is not None:
        cells, total = _metered_cells(config, config.meter, row)
    else:
        cells, total = _flat_cells(config, catalog, row)
    accepted = accepted_count(config.accepted)
    budget_cell, accepted_cell = f"{c['budget_usd']}{row}", f"{c['accepted_corpora']}{row}"
    if accepted is None:
        cost_value: Any = ""
    else:
        per = rules.cost_per_accepted(total, accepted)
        cost_value = UNDEFINED if per is None else per
    projected = config.projected_corpora
    cost: Any = Formula(
        f'IF(NOT(ISNUMBER({budget_cell})),"{NO_PRICE}",IF({accepted_cell}="","",'
        f'IF({accepted_cell}>0,{budget_cell}/{accepted_cell},"{UNDEFINED}")))',
        cost_value,
    )
    forecast: Any = None
    if projected is not None:
        # A plan sized for the expected outputs over a benchmark count would blend a forecast
        # with a count (seed 000): the forecast divides by the expected outputs, and what was
        # spent per accepted corpus is the incurred total's (the Settlement's total rows).
        cost = None
        forecast = Formula(
            f'IF(ISNUMBER({budget_cell}),{budget_cell}/{c["projected_corpora"]}{row},"")',
            rules.cost_per_accepted(total, projected),
        )
    values: dict[str, Any] = {
        **cells,
        "item": config.item,
        "kind": "configuration",
        "lots": config.lots,
        "accepted_corpora": accepted,
        "cost_per_accepted_usd": cost,
        "projected_cost_per_expected_usd": forecast,
        "quality_verdict": config.quality_verdict,
        "median_s": config.median_s,
        "campaign_hours": config.campaign_hours,
        "grounds": config.grounds or cells["grounds"],
        "projected_corpora": config.projected_corpora,
    }
    return full_row(values)


def other_cost_row(cost: OtherCost) -> dict[str, Any]:
    """The Settlement row of another project cost: its amount and grounds, no formula."""
    amount = cost.amount_usd
    if not isinstance(amount, Decimal) or not amount.is_finite() or amount < 0:
        raise UsageError(
            f"other cost {cost.item!r}: amount {amount!r} is not a decimal amount >= 0",
            hint="pass a decimal.Decimal, e.g. Decimal('12.50')",
        )
    if not str(cost.grounds or "").strip():
        raise UsageError(
            f"other cost {cost.item!r} has no grounds", hint="say why this cost applies"
        )
    return full_row(
        {"item": cost.item, "kind": "other cost", "budget_usd": amount, "grounds": cost.grounds}
    )


def full_row(values: dict[str, Any]) -> dict[str, Any]:
    """A Settlement row with every column, blanks as None."""
    return {name: values.get(name) for name in layout.SETTLEMENT.names}


def settlement_rows(
    configurations: Sequence[Configuration],
    other_costs: Sequence[OtherCost],
    catalog: Catalog,
    first_row: int = 2,
) -> list[dict[str, Any]]:
    """Settlement rows: one per configuration, then one per other cost.

    ``catalog`` must be the one of the workbook's Tariffs sheet
    (``toolkit.money.tariffs.catalog_from_workbook``), so that the formulas and the
    cached values use the same prices. Rows are meant to be written from Excel
    row ``first_row`` on, in this order (the formulas point at their own row).
    Raises CatalogError (exit 2) when a configuration's price is not in the catalog.
    """
    rows = [configuration_row(cfg, catalog, first_row + i) for i, cfg in enumerate(configurations)]
    rows += [other_cost_row(cost) for cost in other_costs]
    return rows
