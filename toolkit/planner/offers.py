"""What a price catalog offers for a card: the lot, its billing, its availability (R34).

Prices come from the one tariff reader (:mod:`toolkit.money.tariffs`): the flat
price of one lot of ``cards_per_lot`` cards for a 3-, 7- or 30-day plan, or, for a
schedule of so many hours (:func:`schedule_offers`), what one lot costs for it at
the cheapest covering flat plan and at each metered price, ranked together. A lot
is one machine: its cards may hold one split model; two lots are two machines.
Offers are in USD: a catalog row in another currency is left out, never
converted. Three optional columns of the same CSV, which the tariff rules
ignore and keep on each plan (``Plan.extra``), say more when a catalog has
them: ``availability`` (``on-demand``, ``reserved``, ``spot`` or
``interruptible``), ``storage_usd_per_gb_month`` and ``egress_usd_per_gb``.
A ``provider`` column, when there is one, names who sells the lot. Whether
interruptible capacity suits the work is :func:`usage_fit`'s answer.
Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from toolkit.errors import CatalogError
from toolkit.money import tariffs

AVAILABILITIES = ("on-demand", "reserved", "spot", "interruptible")
INTERRUPTIBLE = ("spot", "interruptible")
#: What the capacity is for (--usage): its words, and whether an interruption is tolerable.
USAGES = {
    "endpoint": ("an always-on endpoint", False),
    "batch": ("fault-tolerant batch work", True),
    "checkpointed": ("checkpointed fine-tuning", True),
    "unresumable": ("a long job that cannot resume", False),
}
EXTRA_MONEY = ("storage_usd_per_gb_month", "egress_usd_per_gb")


@dataclass(frozen=True, kw_only=True)
class Offer:
    """One lot of a card for a plan, as the price catalog sells it."""

    gpu_slug: str
    cards_per_lot: int
    price_per_lot_usd: Decimal
    plan_days: int
    catalog_date: str
    availability: str | None = None  # None: the catalog does not say
    storage_usd_per_gb_month: Decimal | None = None
    egress_usd_per_gb: Decimal | None = None
    provider: str | None = None  # None: the catalog does not say
    #: The card's other offers for the plan (other providers, lot sizes, availabilities).
    others: tuple[Offer, ...] = field(default=(), compare=False, repr=False)
    #: A metered price (by the hour or second): ``price_per_lot_usd`` is then what one lot
    #: costs for ``hours``, the schedule it was priced for.
    meter: tariffs.Meter | None = None
    #: The schedule priced, in hours; None: the price of the plan whatever the use.
    hours: Decimal | None = None

    @property
    def all(self) -> tuple[Offer, ...]:
        """This offer and the card's others."""
        return (self, *self.others)

    @property
    def seller(self) -> str:
        """Who sells the lot, and its size: ``provider B, lot of 2 cards``."""
        cards = "card" if self.cards_per_lot == 1 else "cards"
        lot = f"lot of {self.cards_per_lot} {cards}"
        return f"provider {self.provider}, {lot}" if self.provider else lot

    @property
    def billing_unit(self) -> str:
        """How the lot is billed: a flat plan (never by the hour, R21), or a metered price
        with what the schedule costs at it."""
        cards = "card" if self.cards_per_lot == 1 else "cards"
        lot = f"per lot of {self.cards_per_lot} {cards}"
        if self.meter is not None and self.hours is not None:
            m = self.meter
            return (
                f"metered, {tariffs.rules.amount_text(m.price_per_hour)} USD an hour "
                f"{lot}, billed {tariffs.rules.billing_text(m.billing_seconds)}: the "
                f"{tariffs.rules.hours_text(self.hours)} schedule"
            )
        covering = (
            f", covering the {tariffs.rules.hours_text(self.hours)} schedule"
            if self.hours is not None
            else ""
        )
        return f"flat {self.plan_days}-day plan {lot} (no hourly billing){covering}"

    @property
    def interruptible(self) -> bool:
        """True for spot or interruptible capacity."""
        return self.availability in INTERRUPTIBLE

    @property
    def availability_text(self) -> str:
        """The availability as the catalog states it, or that it does not."""
        return self.availability or "availability not stated"

    def extras_text(self) -> str:
        """Storage and egress prices, or that the catalog has none."""
        parts = []
        if self.storage_usd_per_gb_month is not None:
            parts.append(f"storage {self.storage_usd_per_gb_month} USD per GB-month")
        if self.egress_usd_per_gb is not None:
            parts.append(f"egress {self.egress_usd_per_gb} USD per GB")
        missing = [
            w
            for w, v in (
                ("storage", self.storage_usd_per_gb_month),
                ("egress", self.egress_usd_per_gb),
            )
            if v is None
        ]
        if missing:
            parts.append(f"{' and '.join(missing)} not in the catalog")
        return ", ".join(parts)


def suits(offer: Offer, usage: str | None) -> bool:
    """False for interruptible capacity unless the usage tolerates an interruption; an
    unstated usage is not assumed to (R34: spot is for fault-tolerant batch work and
    checkpointed fine-tuning, not always-on endpoints)."""
    return not offer.interruptible or (usage is not None and USAGES[usage][1])


def usage_fit(offer: Offer, usage: str | None) -> str | None:
    """A warning when the offer's availability does not suit the usage, else None.

    Interruptible capacity suits fault-tolerant batch work and checkpointed
    fine-tuning, never an always-on endpoint or a job that cannot resume (R34).
    """
    if usage is not None and usage not in USAGES:
        raise ValueError(f"unknown usage {usage!r}")
    if offer.interruptible:
        if usage is None:
            return (
                f"{offer.availability}: only for fault-tolerant batch work or checkpointed "
                "fine-tuning, never for an always-on endpoint (say --usage)"
            )
        words, tolerant = USAGES[usage]
        if not tolerant:
            return f"{offer.availability}: unsuitable for {words}: it can be reclaimed at any time"
        return None
    if offer.availability is None and usage in ("endpoint", "unresumable"):
        return (
            f"the catalog does not say whether the lot can be interrupted: check before "
            f"relying on it for {USAGES[usage][0]}"
        )
    return None


def load_offers(path: Path | None = None, plan_days: int = 7) -> tuple[dict[str, Offer], str]:
    """Each GPU slug's USD offers for a plan, and the reason a card has none.

    The prices are read by :func:`toolkit.money.tariffs.load_catalog` (default:
    the shipped catalog); a missing file is not an error, every card then has no price.
    One offer per provider, lot size and availability: its newest row, the cheaper of
    two of the same date; a newer row replaces only that offer, so a newer spot price
    never hides an on-demand one. The offer returned per slug is the newest and
    cheapest; :attr:`Offer.others` holds the rest, for :mod:`choice` to pick the lot
    that holds a split and suits the usage.
    """
    if path is not None and not path.is_file():
        return {}, f"no price in catalog ({path.name} not found)"
    plans = tariffs.load_catalog(path, path.name if path else None).plans
    extras = [_extras(plan) for plan in plans]  # every row checked, whatever the plan length
    newest: dict[tuple[str, str | None, int, str | None], Offer] = {}
    for plan, (state, storage, egress) in zip(plans, extras, strict=True):
        if plan.plan_days != plan_days or plan.currency != "USD":
            continue
        provider = plan.provider.strip() or None
        key = (plan.gpu_slug, provider, plan.cards_per_lot, state)
        known = newest.get(key)
        if known is None or (plan.catalog_date, -plan.price_per_lot_usd) >= (
            known.catalog_date,
            -known.price_per_lot_usd,
        ):
            newest[key] = Offer(
                gpu_slug=plan.gpu_slug,
                cards_per_lot=plan.cards_per_lot,
                price_per_lot_usd=plan.price_per_lot_usd,
                plan_days=plan.plan_days,
                catalog_date=plan.catalog_date,
                availability=state,
                storage_usd_per_gb_month=storage,
                egress_usd_per_gb=egress,
                provider=provider,
            )
    by_slug: dict[str, list[Offer]] = {}
    for offer in newest.values():
        by_slug.setdefault(offer.gpu_slug, []).append(offer)
    return {
        slug: _first_with_others(found) for slug, found in by_slug.items()
    }, "no price in catalog"


def schedule_offers(path: Path | None, hours: Decimal) -> tuple[dict[str, Offer], str]:
    """Each GPU slug's USD offers for a schedule of ``hours``, flat and metered together,
    each priced at what one lot costs for the schedule: the cheapest flat plan that covers
    it (of each provider, lot size and availability, newest snapshot), and every metered
    price of each provider's newest metered snapshot charged for its billed hours. A flat
    plan is the cheaper for long use, a metered price for short use; none is extended past
    its length (a schedule beyond the longest plan leaves flat offers out, with the reason
    when nothing else is offered)."""
    if path is not None and not path.is_file():
        return {}, f"no price in catalog ({path.name} not found)"
    seconds = int((hours * tariffs.rules.HOUR_SECONDS).to_integral_value(ROUND_CEILING))
    found: list[Offer] = []
    for days in tariffs.PLAN_DAYS:
        if days * 24 < hours:
            continue
        for offer in load_offers(path, days)[0].values():
            found += [replace(o, others=(), hours=hours) for o in offer.all]
    cheapest: dict[tuple[str, str | None, int, str | None], Offer] = {}
    for o in found:  # the cheapest covering plan of each provider, lot size and availability
        key = (o.gpu_slug, o.provider, o.cards_per_lot, o.availability)
        if key not in cheapest or o.price_per_lot_usd < cheapest[key].price_per_lot_usd:
            cheapest[key] = o
    by_slug: dict[str, list[Offer]] = {}
    for o in cheapest.values():
        by_slug.setdefault(o.gpu_slug, []).append(o)
    for slug, meters in load_metered(path).items():
        for m in meters:
            offer = Offer(
                gpu_slug=slug,
                cards_per_lot=m.cards_per_lot,
                price_per_lot_usd=m.charge(seconds, 1),
                plan_days=0,
                catalog_date=m.catalog_date,
                availability=m.market,
                provider=m.provider.strip() or None,
                meter=m,
                hours=hours,
            )
            by_slug.setdefault(slug, []).append(offer)
    reason = (
        "no price in catalog"
        if hours <= tariffs.PLAN_DAYS[-1] * 24
        else f"no price in catalog for {tariffs.rules.hours_text(hours)}: "
        f"{tariffs.rules.beyond_longest(hours)}"
    )
    return {slug: _cheapest_with_others(offers) for slug, offers in by_slug.items()}, reason


def _cheapest_with_others(found: list[Offer]) -> Offer:
    """The cheapest offer for the schedule, carrying the others, cheapest first."""
    order = sorted(found, key=lambda o: (o.price_per_lot_usd, o.cards_per_lot, o.plan_days))
    return replace(order[0], others=tuple(order[1:]))


def _first_with_others(found: list[Offer]) -> Offer:
    """The newest, cheapest offer, carrying the others in that order."""
    order = sorted(found, key=lambda o: (o.catalog_date, -o.price_per_lot_usd), reverse=True)
    return replace(order[0], others=tuple(order[1:]))


Extras = tuple[str | None, Decimal | None, Decimal | None]


def _extras(plan: tariffs.Plan) -> Extras:
    """The optional columns of a plan's row; CatalogError names the line and column of a
    value that is not one of those allowed."""
    row = dict(plan.extra)
    state = row.get("availability", "").lower()
    if state and state not in AVAILABILITIES:
        raise CatalogError(
            f"{plan.where}, column availability: {state!r} is not one of "
            f"{', '.join(AVAILABILITIES)}",
            hint="leave it empty when the catalog does not say",
        )
    storage, egress = (_amount(row.get(c), f"{plan.where}, column {c}") for c in EXTRA_MONEY)
    return state or None, storage, egress


def _amount(raw: str | None, where: str) -> Decimal | None:
    text = (raw or "").strip()
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal(-1)
    if not value.is_finite() or value < 0:
        raise CatalogError(
            f"{where}: {text!r} is not an amount in USD",
            hint="digits with a dot, e.g. 0.08; leave it empty when unknown",
        )
    return value


def load_metered(path: Path | None = None) -> dict[str, tuple[tariffs.Meter, ...]]:
    """Each GPU slug's metered USD prices (by the hour or second) of each provider's newest
    metered snapshot, cheapest first; {} when the file is missing or holds none."""
    if path is not None and not path.is_file():
        return {}
    meters = tariffs.load_catalog(path, path.name if path else None).meters
    newest: dict[str, str] = {}
    for m in meters:
        newest[m.provider.casefold()] = max(newest.get(m.provider.casefold(), ""), m.catalog_date)
    found: dict[str, list[tariffs.Meter]] = {}
    for m in meters:
        if m.currency == "USD" and m.catalog_date == newest[m.provider.casefold()]:
            found.setdefault(m.gpu_slug, []).append(m)
    return {
        slug: tuple(sorted(rows, key=lambda m: (m.price_per_hour, m.billing_seconds)))
        for slug, rows in found.items()
    }


def holding(
    metered: dict[str, tuple[tariffs.Meter, ...]], cards: dict[str, int]
) -> dict[str, tuple[tariffs.Meter, ...]]:
    """The metered prices whose lot holds the split of its card (``cards``: slug -> cards
    the need takes on one machine): separate lots are separate machines."""
    kept = {
        slug: tuple(m for m in metered.get(slug, ()) if m.cards_per_lot >= n)
        for slug, n in cards.items()
    }
    return {slug: found for slug, found in kept.items() if found}


def metered_as_dict(
    metered: dict[str, tuple[tariffs.Meter, ...]],
) -> dict[str, list[dict[str, Any]]]:
    """The metered prices per card, JSON-ready (amounts as decimal text)."""
    return {
        slug: [
            {
                "market": m.market,
                "price_per_hour_usd": str(m.price_per_hour),
                "cards_per_lot": m.cards_per_lot,
                "billing_seconds": m.billing_seconds,
                "catalog_date": m.catalog_date,
                "source": m.source,
            }
            for m in found
        ]
        for slug, found in metered.items()
    }


def metered_lines(metered: dict[str, tuple[tariffs.Meter, ...]], usage: str | None) -> list[str]:
    """The metered prices (of lots that hold the need, :func:`holding`), one line per card,
    spot marked as :func:`usage_fit` judges it; [] when there is none."""
    out = []
    for slug, found in metered.items():
        parts = []
        for m in found:
            cards = "card" if m.cards_per_lot == 1 else "cards"
            text = (
                f"{m.market} {m.price_text} an hour per lot of {m.cards_per_lot} {cards}, "
                f"billed {tariffs.rules.billing_text(m.billing_seconds)}"
            )
            fit = usage_fit(_as_offer(m), usage) if m.market == "spot" else None
            example = ", EXAMPLE figure" if "EXAMPLE" in m.source else ""
            parts.append(text + (f" ({fit})" if fit else "") + f" [{m.catalog_date}{example}]")
        if parts:
            out.append(f"  {slug}: " + "; ".join(parts))
    if not out:
        return []
    return ["metered prices (by the hour or second, the price catalog's newest):", *out]


def _as_offer(meter: tariffs.Meter) -> Offer:
    """A metered price as an offer, for :func:`usage_fit` to judge its market."""
    return Offer(
        gpu_slug=meter.gpu_slug,
        cards_per_lot=meter.cards_per_lot,
        price_per_lot_usd=meter.price_per_hour,
        plan_days=0,
        catalog_date=meter.catalog_date,
        availability=meter.market,
    )
