"""Flat-rate GPU plan calculator: the one implementation of the tariff rules.

Runs on its own: put this file and ``tarifs-forfaits.csv`` in one folder and run
``python calcul_forfaits.py --gpu rtx-4090 --days 7 --lots 2`` there with Python
3.10+ (standard library only). The ``iteralab`` package imports this very module
for ``iteralab cost``, its Settlement sheet and its schedule checks, so the rules
exist once.

The rules (IteraGPU Lab SPEC R19-R22):
- rental is sold in lots for a flat 3-, 7- or 30-day plan; a lot holds a fixed
  number of cards (a B200 lot already holds two: its price is never doubled);
- rental budget = price of one lot x lots, however short the run (no hourly billing);
- cost per accepted result = budget / distinct validated corpora; with none it is
  undefined, and the money spent stays;
- a plan covers a schedule when the schedule's real elapsed hours fit in it;
  beyond the longest plan, nothing is extended automatically;
- amounts are decimals: a price or a budget is shown with every digit it has (110.004,
  never 110.00), a quotient rounded half-up to the cent; a price per lot is below 10**12
  in at most 13 significant digits (what a spreadsheet cell and its totals keep exactly);
- every price has a currency, and amounts in two currencies are never compared,
  added or converted (no exchange rate is ever assumed).

A catalog row may instead be a *metered* price (seed R34: most rented GPUs are sold by
the hour or the second, on demand or spot): a price per hour of one lot, billed in steps
of ``billing_seconds`` (1: to the second, 3600: by the started hour), on a ``market``.
Such a row leaves plan_days and price_per_lot_usd empty; the flat rules above never read
it, so a catalog's flat plans price exactly as before. A metered charge = price per hour x
billed hours x lots, the elapsed time rounded up to whole billing steps, the charge
rounded half-up to the cent (what a provider's invoice states).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Context, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

CATALOG_FILE = "tarifs-forfaits.csv"
#: The catalog's columns, in the order the shipped file writes them.
COLUMNS = (
    "catalog_date",
    "gpu_slug",
    "gpu_name",
    "cards_per_lot",
    "plan_days",
    "price_per_lot_usd",
    "source",
)
#: Optional columns: who sells the lots and the currency of the price column.
#: The price column keeps its historical name ``price_per_lot_usd`` (files and
#: workbooks already use it and a column is never renamed); ``currency`` says
#: what that amount is in, and a blank or absent currency means USD, as the
#: column's name has always said. So the shipped file and every older catalog
#: read exactly as before, and a row of another provider states its own
#: currency (EUR, ...) beside the same price column. A blank provider is the
#: catalog as shipped, which names none.
OPTIONAL_COLUMNS = ("provider", "currency", "market", "price_per_hour", "billing_seconds")
#: The markets a metered price is sold on: spot capacity can be reclaimed at any time.
MARKETS = ("on-demand", "spot")
#: The coarsest billing step of a metered price: a started hour.
HOUR_SECONDS = 3600
#: The currency of a row that states none: the price column's own.
DEFAULT_CURRENCY = "USD"
#: The price column's header in a file that states its currency column (another
#: provider's snapshot): read as ``price_per_lot_usd``, the amount in ``currency``.
PRICE_ALIAS = "price_per_lot"
#: An ISO 4217 code as catalogs and billing exports write it: three capital letters.
CURRENCY = re.compile(r"^[A-Z]{3}$")
#: Plan lengths the catalog sells, in days.
PLAN_DAYS = (3, 7, 30)
UNDEFINED = "undefined"
CENT = Decimal("0.01")
#: A price per lot: below a trillion in any currency (a GPU lot billed in rupiah or won is
#: billions at most), in at most 13 significant digits, so that a total of such prices
#: keeps its cents within the 15 significant digits of a spreadsheet cell (a double).
MAX_PRICE = Decimal(10) ** 12
PRICE_DIGITS = 13
_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_AMOUNT = re.compile(r"^\d+(\.\d+)?$")
_COUNT = re.compile(r"^[+]?\d+$")
_OFFSET = re.compile(r"^([+-])(\d{2}):?(\d{2})$")
#: The one date-time form read everywhere (options, Schedule, Rentals), read by this pattern
#: rather than by datetime.fromisoformat, whose forms grew in Python 3.11 (20261207T0900,
#: +0100, 09:00:00.5): a workbook must read the same on every Python. A space may stand for
#: the T (what Excel and most exports write); Z is UTC (billing exports).
TIME_FORM = (
    "YYYY-MM-DDTHH:MM[:SS[.fraction]][+HH:MM or Z], e.g. 2026-12-07T09:00+01:00 "
    "(a space may replace the T)"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?",
    re.ASCII,
)


class TariffError(Exception):
    """A catalog, option or time the rules cannot use. Exit code 2 (usage)."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  what to do: {self.hint}" if self.hint else self.message


class MissingPrice(TariffError):
    """The catalog knows the GPU but has no row for the plan length asked."""


def billing_text(step: int) -> str:
    """A billing step in words: ``per second``, ``per started hour``, ``per 60 s``."""
    if step == 1:
        return "per second"
    if step == HOUR_SECONDS:
        return "per started hour"
    return f"per {step} s"


# --------------------------------------------------------------------------- catalog


@dataclass(frozen=True, kw_only=True)
class CatalogRow:
    """What every catalog row states, flat plan or metered price: the snapshot, the GPU, the
    lot, who sells it, in which currency, and where the row was read."""

    catalog_date: str
    gpu_slug: str
    gpu_name: str
    cards_per_lot: int
    source: str
    where: str = ""
    provider: str = ""  # "" for a catalog that names none (the shipped one)
    currency: str = DEFAULT_CURRENCY
    #: The row's other non-empty columns (name, text), which the rules do not read.
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def amount(self) -> Decimal:
        """The row's price, in ``currency``: of a lot for a plan, or of a lot for an hour."""
        raise NotImplementedError

    @property
    def price_text(self) -> str:
        """The row's price with its currency, e.g. ``2,071.00 USD``."""
        return money(self.amount, self.currency)

    @property
    def seller(self) -> str:
        """The provider as a reader sees it."""
        return self.provider or "provider not stated"


@dataclass(frozen=True, kw_only=True)
class Plan(CatalogRow):
    """One flat catalog row: the price of one lot of a GPU for a plan length."""

    plan_days: int
    price_per_lot_usd: Decimal  # in ``currency`` (USD unless the row says otherwise)

    @property
    def hours(self) -> int:
        """The plan's length in hours (72, 168 or 720)."""
        return self.plan_days * 24

    @property
    def amount(self) -> Decimal:
        """The price of one lot for the whole plan."""
        return self.price_per_lot_usd


@dataclass(frozen=True, kw_only=True)
class Meter(CatalogRow):
    """One metered catalog row: the price per hour of one lot, billed in steps of seconds."""

    market: str  # on-demand or spot
    price_per_hour: Decimal  # of one lot, in ``currency``
    billing_seconds: int  # the billing step: 1 to the second, 3600 by the started hour

    @property
    def amount(self) -> Decimal:
        """The price of one lot for an hour."""
        return self.price_per_hour

    def billed_seconds(self, seconds: int) -> int:
        """``seconds`` of use rounded up to whole billing steps (a started step is due)."""
        steps = -(-max(seconds, 0) // self.billing_seconds)
        return steps * self.billing_seconds

    def charge(self, seconds: int, lots: int) -> Decimal:
        """What ``lots`` lots used for ``seconds`` cost: billed hours x price x lots, to the
        cent (rounded half-up, as an invoice states it)."""
        billed = Decimal(self.billed_seconds(seconds)) / HOUR_SECONDS
        return to_cent(self.price_per_hour * billed * check_lots(lots))


def same_provider(a: str | None, b: str | None) -> bool:
    """Whether two provider names name the same provider (case and spaces ignored)."""
    return (a or "").strip().casefold() == (b or "").strip().casefold()


@dataclass(frozen=True)
class Catalog:
    """Catalog snapshots read from a CSV file or a Tariffs sheet."""

    plans: tuple[Plan, ...]
    origin: str
    #: The metered rows, which the flat rules never read.
    meters: tuple[Meter, ...] = ()

    def providers(self) -> list[str]:
        """The providers whose prices the catalog holds, in order of first row."""
        seen: dict[str, str] = {}
        rows: tuple[Plan | Meter, ...] = (*self.plans, *self.meters)
        for p in rows:
            seen.setdefault(p.provider.casefold(), p.provider)
        return list(seen.values())

    def only(self, provider: str | None) -> Catalog:
        """The catalog of one provider (None: the whole catalog); TariffError if it has none."""
        if provider is None:
            return self
        mine = tuple(p for p in self.plans if same_provider(p.provider, provider))
        metered = tuple(m for m in self.meters if same_provider(m.provider, provider))
        if not mine and not metered:
            raise TariffError(
                f"no prices of provider {provider!r} in {self.origin}; it holds "
                f"{_provider_names(self.providers())}",
                hint="pass one of those names with --provider",
            )
        return Catalog(mine, self.origin, metered)

    def newest(self) -> tuple[Plan, ...]:
        """Each provider's newest snapshot, together: what each one sells now."""
        latest: dict[str, str] = {}
        for p in self.plans:
            key = p.provider.casefold()
            latest[key] = max(latest.get(key, ""), p.catalog_date)
        return tuple(p for p in self.plans if p.catalog_date == latest[p.provider.casefold()])

    def dates(self) -> list[str]:
        """Snapshot dates held, oldest first."""
        return sorted({p.catalog_date for p in self.plans})

    def snapshot(self, date: str | None = None) -> str:
        """The snapshot to use: ``date`` if given (it must exist), else the newest.

        Prices of two providers are never mixed: a catalog holding several needs
        :meth:`only` first (TariffError otherwise).
        """
        providers = self.providers()
        if len(providers) > 1:
            raise TariffError(
                f"{self.origin} holds the prices of several providers "
                f"({_provider_names(providers)}): say whose prices to use",
                hint="pass --provider NAME; two providers' prices are never mixed",
            )
        dates = self.dates()
        if not dates:
            raise TariffError(
                f"{self.origin} holds metered prices only, no flat 3-, 7- or 30-day plan",
                hint="price the GPU by the hour (--metered), or add the plan's row",
            )
        if date is None:
            return dates[-1]
        if date not in dates:
            raise TariffError(
                f"no catalog of {date} in {self.origin}; it holds {', '.join(dates)}",
                hint="pass one of those dates, or add that snapshot's rows",
            )
        return date

    def gpus(self, date: str | None = None) -> dict[str, str]:
        """GPU slug -> name in one snapshot, sorted by slug."""
        day = self.snapshot(date)
        return dict(sorted((p.gpu_slug, p.gpu_name) for p in self.plans if p.catalog_date == day))

    def plan(self, gpu: str, days: int, date: str | None = None) -> Plan:
        """The plan for ``gpu`` and ``days`` in a snapshot; TariffError naming what is missing."""
        day = self.snapshot(date)
        slug = gpu.strip().lower()
        known = self.gpus(day)
        if slug not in known:
            raise TariffError(
                f"unknown GPU {gpu!r} in the catalog of {day} ({self.origin}); known: "
                f"{', '.join(known)}",
                hint=f"use one of those slugs, or add {slug}'s rows to {self.origin}",
            )
        check_days(days)
        for p in self.plans:
            if p.catalog_date == day and p.gpu_slug == slug and p.plan_days == days:
                return p
        sold = sorted(
            p.plan_days for p in self.plans if p.catalog_date == day and p.gpu_slug == slug
        )
        return _missing_price(self, slug, days, day, sold)

    def metered(self, gpu: str, date: str | None = None) -> tuple[Meter, ...]:
        """The metered prices of ``gpu`` in the newest metered snapshot (or ``date``'s), one
        provider's; TariffError naming what is missing."""
        providers = self.providers()
        if len(providers) > 1:
            raise TariffError(
                f"{self.origin} holds the prices of several providers "
                f"({_provider_names(providers)}): say whose prices to use",
                hint="pass --provider NAME; two providers' prices are never mixed",
            )
        slug = gpu.strip().lower()
        dates = sorted({m.catalog_date for m in self.meters})
        day = date or (dates[-1] if dates else None)
        found = tuple(m for m in self.meters if m.catalog_date == day and m.gpu_slug == slug)
        if not found:
            known = sorted({m.gpu_slug for m in self.meters if m.catalog_date == day})
            raise TariffError(
                f"no metered price for {slug} in {self.origin}"
                + (f" of {day}; priced by the hour: {', '.join(known)}" if day else ""),
                hint="add a row with market, price_per_hour and billing_seconds (plan_days "
                "and price_per_lot_usd empty) from the provider's price page; prices are "
                "never guessed",
            )
        return found

    def find(self, gpu: str, days: int, date: str | None = None) -> Plan | None:
        """Like :meth:`plan` but None when only the price for ``days`` is missing."""
        try:
            return self.plan(gpu, days, date)
        except MissingPrice:
            return None


def _provider_names(providers: Sequence[str]) -> str:
    return ", ".join(repr(p) if p else "one naming no provider" for p in providers)


def _missing_price(catalog: Catalog, slug: str, days: int, day: str, sold: list[int]) -> Plan:
    have = ", ".join(f"{d}-day" for d in sold)
    raise MissingPrice(
        f"no {days}-day price for {slug} in the catalog of {day}: add it to {catalog.origin} "
        f"(it has the {have} plan{'s' if len(sold) > 1 else ''})",
        hint=f"add a row {day},{slug},NAME,CARDS_PER_LOT,{days},PRICE,SOURCE with the "
        "catalog's real price, or choose a plan length it has; prices are never guessed",
    )


def check_days(days: object) -> int:
    """``days`` as a plan length the catalog sells (3, 7 or 30); TariffError otherwise."""
    if isinstance(days, bool) or not isinstance(days, int) or days not in PLAN_DAYS:
        raise TariffError(
            f"plan length {days!r} days: plans last 3, 7 or 30 days", hint="pass --days 3, 7 or 30"
        )
    return days


def make_plan(values: Mapping[str, object], locate: Callable[[str], str]) -> Plan:
    """Check one flat catalog row (CSV text or typed sheet cells) and return its Plan.

    ``locate(column)`` names the place of a column's cell for messages, e.g.
    ``tarifs-forfaits.csv, line 3, column 6 (price_per_lot_usd)``.
    """
    identity = _row_identity(values, locate)
    return Plan(
        **identity,
        plan_days=_count(values, "plan_days", locate, PLAN_DAYS),
        price_per_lot_usd=_price(
            values.get("price_per_lot_usd"), locate("price_per_lot_usd"), identity["currency"]
        ),
    )


def make_row(values: Mapping[str, object], locate: Callable[[str], str]) -> Plan | Meter:
    """One catalog row: a metered price when its price_per_hour is filled, else a flat plan."""
    if not _optional(values, "price_per_hour"):
        return make_plan(values, locate)
    for column in ("plan_days", "price_per_lot_usd"):
        if _optional(values, column):
            raise TariffError(
                f"{locate(column)}: a row with a price_per_hour is a metered price and "
                f"has no {column}",
                hint="put the flat plan and the metered price on two rows",
            )
    identity = _row_identity(values, locate)
    market = _optional(values, "market").lower()
    if market not in MARKETS:
        raise TariffError(
            f"{locate('market')}: {_optional(values, 'market')!r} is not {' or '.join(MARKETS)}",
            hint="write the market the price is sold on: spot capacity can be reclaimed",
        )
    step = _count(values, "billing_seconds", locate)
    if step > HOUR_SECONDS:
        raise TariffError(
            f"{locate('billing_seconds')}: {step} s is longer than an hour",
            hint="write the billing step in seconds: 1 (to the second), 60, or 3600 (hourly)",
        )
    return Meter(
        **identity,
        market=market,
        price_per_hour=_price(
            values.get("price_per_hour"), locate("price_per_hour"), identity["currency"]
        ),
        billing_seconds=step,
    )


def _row_identity(values: Mapping[str, object], locate: Callable[[str], str]) -> dict[str, Any]:
    """The checked fields every catalog row states (:class:`CatalogRow`), by name."""
    return {
        "catalog_date": _date(values, locate),
        "gpu_slug": _slug(values, locate),
        "gpu_name": _text(values, "gpu_name", locate),
        "cards_per_lot": _count(values, "cards_per_lot", locate),
        "source": _text(values, "source", locate),
        "where": locate("gpu_slug").rsplit(", column", 1)[0],
        "provider": _optional(values, "provider"),
        "currency": _currency(values, locate),
        "extra": _extra(values),
    }


def _text(values: Mapping[str, object], column: str, locate: Callable[[str], str]) -> str:
    value = values.get(column)
    value = "" if value is None else str(value).strip()
    if not value:
        raise TariffError(
            f"{locate(column)}: empty; every catalog row needs a {column}",
            hint="fill it in, or remove the row if the price is unknown",
        )
    return value


def _count(
    values: Mapping[str, object],
    column: str,
    locate: Callable[[str], str],
    allowed: Sequence[int] | None = None,
) -> int:
    raw = values.get(column)
    number = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if number is None and isinstance(raw, float) and raw.is_integer():
        number = int(raw)
    if number is None and isinstance(raw, str) and _COUNT.match(raw.strip()):
        number = int(raw.strip())
    if number is None or number < 1 or (allowed and number not in allowed):
        expected = ", ".join(map(str, allowed)) if allowed else "a whole number >= 1"
        raise TariffError(
            f"{locate(column)}: {raw!r} is not {expected}", hint=f"write {column} as {expected}"
        )
    return number


def _date(values: Mapping[str, object], locate: Callable[[str], str]) -> str:
    """A row's catalog date, checked: YYYY-MM-DD."""
    date = _text(values, "catalog_date", locate)
    try:
        # The pattern first: from Python 3.11 on, fromisoformat also takes 2026-W39-4.
        if not _DATE.fullmatch(date):
            raise ValueError(date)
        dt.date.fromisoformat(date)
    except ValueError:
        raise TariffError(
            f"{locate('catalog_date')}: {date!r} is not a date YYYY-MM-DD",
            hint="write the snapshot's date, e.g. 2026-09-24",
        ) from None
    return date


def _slug(values: Mapping[str, object], locate: Callable[[str], str]) -> str:
    """A row's GPU slug, checked."""
    slug = _text(values, "gpu_slug", locate)
    if not _SLUG.match(slug):
        raise TariffError(
            f"{locate('gpu_slug')}: {slug!r} is not a slug",
            hint="use lowercase letters, digits and '-', e.g. rtx-4090",
        )
    return slug


def _currency(values: Mapping[str, object], locate: Callable[[str], str]) -> str:
    """A row's ISO 4217 currency, checked (blank: USD, the price column's own)."""
    currency = _optional(values, "currency").upper() or DEFAULT_CURRENCY
    if not CURRENCY.match(currency):
        raise TariffError(
            f"{locate('currency')}: {_optional(values, 'currency')!r} is not an "
            "ISO 4217 currency code",
            hint="write three letters such as USD or EUR",
        )
    return currency


def _extra(values: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    """The row's other non-empty columns, which the rules do not read."""
    known = (*COLUMNS, *OPTIONAL_COLUMNS)
    return tuple(
        (str(k), str(v).strip())
        for k, v in values.items()
        if k not in known and v is not None and str(v).strip()
    )


def _optional(values: Mapping[str, object], column: str) -> str:
    value = values.get(column)
    return "" if value is None else str(value).strip()


def _price(raw: object, where: str, currency: str = DEFAULT_CURRENCY) -> Decimal:
    if isinstance(raw, Decimal):
        amount: Decimal | None = raw
    elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
        amount = Decimal(repr(raw)) if isinstance(raw, float) else Decimal(raw)
    elif isinstance(raw, str) and _AMOUNT.match(raw.strip()):
        amount = Decimal(raw.strip())
    else:
        amount = None
    if amount is None or not amount.is_finite() or amount <= 0:
        raise TariffError(
            f"{where}: {raw!r} is not a price in {currency}",
            hint="write the lot's price as digits with a dot, e.g. 2071.00 (no currency "
            "sign, no thousands separator); a missing price is a missing row, never 0",
        )
    problem = price_problem(amount)
    if problem is not None:
        raise TariffError(f"{where}: {raw} {currency} {problem}", hint=PRICE_HINT)
    return amount


PRICE_HINT = (
    "check the price (a stray exponent or extra digits?); write it as the provider bills it, "
    "e.g. 2071.00"
)


def price_problem(amount: Decimal) -> str | None:
    """Why ``amount`` cannot be a price per lot, which a workbook must keep exactly; None when
    it can. Past these bounds a spreadsheet cell (15 significant digits) changes it, and a
    total it enters loses its cents: 1e26 is no price."""
    if amount >= MAX_PRICE or len(amount.normalize().as_tuple().digits) > PRICE_DIGITS:
        return (
            f"is past what a workbook keeps exactly: a price is below {MAX_PRICE:,} a lot, "
            f"in at most {PRICE_DIGITS} significant digits (a spreadsheet cell keeps 15, and "
            "a total of prices needs the rest to keep its cents)"
        )
    return None


def build_catalog(plans: Sequence[Plan], origin: str, meters: Sequence[Meter] = ()) -> Catalog:
    """A Catalog of ``plans`` and ``meters``; TariffError on a repeated (date, GPU, plan
    length), or a repeated (date, GPU, lot, market, billing step) of a metered price."""
    if not plans and not meters:
        raise TariffError(
            f"{origin}: no price rows", hint="add one row per (GPU, plan length) under the header"
        )
    seen: dict[tuple[str, str, str, int], Plan] = {}
    for p in plans:
        key = (p.provider.casefold(), p.catalog_date, p.gpu_slug, p.plan_days)
        if key in seen:
            whose = f" of {p.provider}" if p.provider else ""
            raise TariffError(
                f"{p.where}: a second {p.plan_days}-day price for {p.gpu_slug} in the catalog"
                f"{whose} of {p.catalog_date} (the first is at {seen[key].where})",
                hint="keep one row per (provider, catalog_date, gpu_slug, plan_days)",
            )
        seen[key] = p
    metered: dict[tuple[str, str, str, int, str, int], Meter] = {}
    for m in meters:
        mkey = (
            m.provider.casefold(),
            m.catalog_date,
            m.gpu_slug,
            m.cards_per_lot,
            m.market,
            m.billing_seconds,
        )
        if mkey in metered:
            raise TariffError(
                f"{m.where}: a second {m.market} price {billing_text(m.billing_seconds)} for "
                f"{m.gpu_slug} of {m.catalog_date} (the first is at {metered[mkey].where})",
                hint="keep one row per (provider, catalog_date, gpu_slug, cards_per_lot, "
                "market, billing_seconds)",
            )
        metered[mkey] = m
    return Catalog(tuple(plans), origin, tuple(meters))


def split_rows(rows: Sequence[Plan | Meter]) -> tuple[list[Plan], list[Meter]]:
    """Checked catalog rows parted into flat plans and metered prices, in order."""
    return [r for r in rows if isinstance(r, Plan)], [r for r in rows if isinstance(r, Meter)]


def parse_catalog(text: str, origin: str) -> Catalog:
    """Parse catalog CSV text; errors name the line and column."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        shown = [h.strip() for h in next(reader, [])]
        header = _aliased(shown, origin)
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise TariffError(
                f"{origin}, line 1: missing column(s) {', '.join(missing)}",
                hint="the header is: " + ",".join(COLUMNS),
            )
        rows: list[Plan | Meter] = []
        for row in reader:
            if not any(field.strip() for field in row):
                continue
            line = reader.line_num
            if len(row) != len(header):
                raise TariffError(
                    f"{origin}, line {line}: {len(row)} fields, the header has {len(header)}",
                    hint='quote a field that holds a comma, e.g. "a, b"',
                )
            values = dict(zip(header, row, strict=True))

            def locate(column: str, line: int = line) -> str:
                index = header.index(column)
                return f"{origin}, line {line}, column {index + 1} ({shown[index]})"

            rows.append(make_row(values, locate))
    except csv.Error as exc:
        raise TariffError(
            f"{origin}, line {reader.line_num}: not valid CSV ({exc})",
            hint="fix the quoting on that line",
        ) from None
    plans, meters = split_rows(rows)
    return build_catalog(plans, origin, meters)


def _aliased(header: list[str], origin: str) -> list[str]:
    """``header`` with a ``price_per_lot`` column read as ``price_per_lot_usd``; that name
    says nothing of the currency, so the file must have its currency column."""
    if "price_per_lot_usd" in header or PRICE_ALIAS not in header:
        return header
    if "currency" not in header:
        raise TariffError(
            f"{origin}, line 1: a {PRICE_ALIAS} column needs a currency column",
            hint="add the column currency (an ISO 4217 code such as EUR on each "
            "line), or name the price column price_per_lot_usd for USD prices",
        )
    return ["price_per_lot_usd" if h == PRICE_ALIAS else h for h in header]


def load_catalog(path: str | Path, name: str | None = None) -> Catalog:
    """Read and check the catalog CSV at ``path`` (UTF-8, a BOM allowed)."""
    origin = name or str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise TariffError(
            f"{origin}: cannot read the catalog ({exc.strerror or exc})",
            hint="check the path, or pass --catalog PATH",
        ) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TariffError(
            f"{origin}, line {line}: not UTF-8 text", hint="save the file as CSV UTF-8"
        ) from None
    return parse_catalog(text, origin)


# --------------------------------------------------------------------------- money


def check_lots(lots: object) -> int:
    """``lots`` as a whole number of lots >= 1; TariffError otherwise."""
    if isinstance(lots, bool) or not isinstance(lots, int) or lots < 1:
        raise TariffError(
            f"lots must be a whole number of lots, 1 or more; got {lots!r}",
            hint="count lots, not cards: one B200 lot already holds two cards",
        )
    return lots


def check_accepted(accepted: object) -> int:
    """``accepted`` as a count >= 0 of distinct validated corpora; TariffError otherwise."""
    if isinstance(accepted, bool) or not isinstance(accepted, int) or accepted < 0:
        raise TariffError(
            f"accepted results must be a whole number >= 0 of distinct validated corpora; "
            f"got {accepted!r}",
            hint="count each validated corpus once; repetitions of a benchmark are not results",
        )
    return accepted


def budget(plan: Plan, lots: int) -> Decimal:
    """Rental budget: the flat price of one lot x lots (never x cards, never hourly)."""
    return plan.price_per_lot_usd * check_lots(lots)


def cost_per_accepted(total: Decimal, accepted: int) -> Decimal | None:
    """``total`` / accepted results; None (undefined) when none was accepted."""
    return None if check_accepted(accepted) == 0 else total / accepted


def usd(amount: Decimal) -> str:
    """``amount`` in USD as :func:`money` shows it, e.g. ``2,071.00 USD``."""
    return money(amount, "USD")


def money(amount: Decimal, currency: str) -> str:
    """``amount`` exactly, with its currency: ``1,850.00 EUR``, ``110.004 USD`` (a price or a
    budget is never shown rounded; a quotient is rounded by its caller, :func:`to_cent`)."""
    return f"{amount_text(amount)} {currency}"


def amount_text(amount: Decimal, grouping: bool = True) -> str:
    """``amount`` with every digit it has and at least the cents: ``1,850.00``, ``110.004``
    (110.00 would be another price); ``grouping`` False drops the thousands separators."""
    spec = ",f" if grouping else "f"
    cents = to_cent(amount)
    return format(cents if cents == amount else amount.normalize(), spec)


def parse_count(text: str, option: str, minimum: int, what: str, example: int = 2) -> int:
    """A command-line whole number >= ``minimum``; TariffError naming ``option`` and ``what``."""
    if not _COUNT.match(text.strip()) or int(text) < minimum:
        raise TariffError(f"{option} {text!r}: expected {what}", hint=f"e.g. {option} {example}")
    return int(text)


# --------------------------------------------------------------------------- schedule


def parse_zone(name: str | None) -> dt.tzinfo | None:
    """A --tz value: an IANA name (Europe/Paris), UTC, or an offset (+01:00); None if absent."""
    if name is None:
        return None
    match = _OFFSET.match(name.strip())
    if match:
        sign = -1 if match[1] == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(match[2]), minutes=int(match[3])))
    if name.strip().upper() in ("UTC", "Z"):
        return dt.timezone.utc
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name.strip())
    except (ValueError, OSError, ImportError, KeyError) as exc:  # ZoneInfoNotFoundError: KeyError
        raise TariffError(
            f"unknown time zone {name!r} ({type(exc).__name__})",
            hint="pass an IANA name such as Europe/Paris, UTC, or an offset "
            "such as +01:00 (on Windows: pip install tzdata)",
        ) from None


def read_time(text: str) -> dt.datetime:
    """A date-time written as :data:`TIME_FORM` (naive without an offset); ValueError else."""
    match = _TIME.fullmatch(str(text).strip())
    if not match:
        raise ValueError(f"expected {TIME_FORM}")
    year, month, day, hour, minute, second, fraction, utc, sign, off_h, off_m = match.groups()
    zone = None
    if utc:
        zone = dt.timezone.utc
    elif sign:
        if int(off_h) > 23 or int(off_m) > 59:
            raise ValueError(f"UTC offset {sign}{off_h}:{off_m}: hours 00-23, minutes 00-59")
        offset = dt.timedelta(hours=int(off_h), minutes=int(off_m))
        zone = dt.timezone(-offset if sign == "-" else offset)
    micro = int((fraction or "0").ljust(6, "0")[:6])  # finer than a microsecond: cut off
    return dt.datetime(
        int(year),
        int(month),
        int(day),
        int(hour),
        int(minute),
        int(second or 0),
        micro,
        tzinfo=zone,
    )


def parse_time(text: str, zone: dt.tzinfo | None, what: str) -> dt.datetime:
    """An aware date-time from :data:`TIME_FORM` text; naive text takes ``zone`` (UTC if None)."""
    raw = str(text).strip()
    try:
        moment = read_time(raw)
    except ValueError as exc:
        reason = "" if _TIME.fullmatch(raw) is None else f" ({exc})"  # e.g. month 13
        raise TariffError(
            f"{what} {raw!r} is not a date-time{reason}", hint=f"write {TIME_FORM}"
        ) from None
    if moment.tzinfo is not None:
        return moment
    zone = zone or dt.timezone.utc
    local = moment.replace(tzinfo=zone)
    if local.astimezone(dt.timezone.utc).astimezone(zone).replace(tzinfo=None) != moment:
        raise TariffError(
            f"{what} {raw} does not exist in {zone} (clocks go forward)",
            hint="correct the time, or add its UTC offset",
        )
    if local.utcoffset() != moment.replace(tzinfo=zone, fold=1).utcoffset():
        raise TariffError(
            f"{what} {raw} happens twice in {zone} (clocks go back)",
            hint="add the UTC offset meant, e.g. +02:00 or +01:00",
        )
    return local


def elapsed_seconds(start: dt.datetime, end: dt.datetime) -> int:
    """Real elapsed seconds from ``start`` to ``end`` (through UTC: DST-proof)."""
    return int(
        (end.astimezone(dt.timezone.utc) - start.astimezone(dt.timezone.utc)).total_seconds()
    )


def check_interval(
    start: dt.datetime,
    end: dt.datetime,
    what: str,
    hint: str = "correct --start/--end: the end comes after the start",
) -> int:
    """Elapsed seconds of ``what``; TariffError when it ends at or before its start."""
    seconds = elapsed_seconds(start, end)
    if seconds <= 0:
        raise TariffError(
            f"{what} ends at {stamp(end)}, not after its start {stamp(start)}", hint=hint
        )
    return seconds


def offset_change_note(start: dt.datetime, end: dt.datetime) -> str | None:
    """A note when start and end have different UTC offsets (a DST change), else None."""
    if start.utcoffset() == end.utcoffset():
        return None
    real = hours_text(Decimal(elapsed_seconds(start, end)) / 3600)
    wall = (end.replace(tzinfo=None) - start.replace(tzinfo=None)).total_seconds()
    return (
        f"{stamp(start)} to {stamp(end)} crosses a UTC offset change (daylight saving "
        f"time): {real} of real elapsed time, {hours_text(Decimal(int(wall)) / 3600)} on "
        "the wall clock; plans are checked against real elapsed hours"
    )


def stamp(moment: dt.datetime) -> str:
    """``moment`` as ISO 8601 to the minute with its offset."""
    return moment.isoformat(timespec="minutes")


def to_cent(value: Decimal) -> Decimal:
    """``value`` rounded half-up to 0.01, however large (no precision overflow)."""
    digits = max(28, value.adjusted() + 4)
    return value.quantize(CENT, rounding=ROUND_HALF_UP, context=Context(prec=digits))


def hours_text(hours: Decimal) -> str:
    """Hours for display: ``96 h``, ``95.5 h`` (rounded half-up to 0.01 h)."""
    text = f"{to_cent(hours):f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} h"


@dataclass(frozen=True)
class Coverage:
    """Whether one plan length covers a schedule."""

    days: int
    hours: int
    covers: bool
    short_by: Decimal  # hours the plan lacks; 0 when it covers


def coverage(hours: Decimal) -> list[Coverage]:
    """The 3-, 7- and 30-day plans against a schedule of ``hours`` real elapsed hours."""
    return [
        Coverage(d, d * 24, hours <= d * 24, max(hours - d * 24, Decimal(0))) for d in PLAN_DAYS
    ]


def beyond_longest(hours: Decimal) -> str | None:
    """What to do when ``hours`` exceeds the longest plan, else None."""
    longest = PLAN_DAYS[-1] * 24
    if hours <= longest:
        return None
    return (
        f"the {hours_text(hours)} schedule is longer than the longest plan ({PLAN_DAYS[-1]} "
        f"days, {longest} h): revise the schedule, or price the extra "
        f"{hours_text(hours - longest)} explicitly; plans are never extended automatically"
    )


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as left-aligned text columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def coverage_lines(
    hours: Decimal, priced: Mapping[int, Plan | None] | None = None, lots: int = 1
) -> list[str]:
    """The coverage table for ``hours``; with ``priced``, each plan's flat price for ``lots``."""
    rows: list[tuple[str, ...]] = [("plan", "hours", f"covers {hours_text(hours)}")]
    if priced is not None:
        rows[0] += (f"flat price ({lots} lot{'s' if lots > 1 else ''})",)
    for c in coverage(hours):
        cell = "yes" if c.covers else f"no (short by {hours_text(c.short_by)})"
        row: tuple[str, ...] = (f"{c.days} days", f"{c.hours} h", cell)
        if priced is not None:
            plan = priced.get(c.days)
            row += (
                money(budget(plan, lots), plan.currency) if plan else "no price in the catalog",
            )
        rows.append(row)
    lines = table(rows)
    beyond = beyond_longest(hours)
    offered = None if priced is None else {d for d, plan in priced.items() if plan}
    if beyond:
        lines.append(f"candidates: none; {beyond}")
    else:
        lines.append(
            f"candidates: {covering_text(hours, offered)} (covering the schedule says "
            "nothing about finishing on time)"
        )
    return lines


def covering_text(hours: Decimal, offered: Collection[int] | None = None) -> str:
    """The plans covering ``hours``, e.g. ``7-day and 30-day plans``, or ``none``; with
    ``offered``, only the plan lengths the catalog prices, the others said not offered."""
    covering = [c.days for c in coverage(hours) if c.covers]
    names = [f"{d}-day" for d in covering if offered is None or d in offered]
    unpriced = [f"{d}-day" for d in covering if offered is not None and d not in offered]
    missing = f" ({' and '.join(unpriced)} not offered for this GPU)" if unpriced else ""
    if not names:
        return "none" + missing
    if len(names) == 1:
        return f"{names[0]} plan{missing}"
    return f"{', '.join(names[:-1])} and {names[-1]} plans{missing}"


# --------------------------------------------------------------------------- command line


@dataclass(frozen=True)
class Request:
    """What the calculator was asked, as raw command-line text (checked by :func:`report`)."""

    gpu: str | None = None
    days: str | None = None
    lots: str = "1"
    accepted: str | None = None
    hours: str | None = None
    start: str | None = None
    end: str | None = None
    tz: str | None = None
    catalog_date: str | None = None
    list_catalog: bool = False
    provider: str | None = None  # None: the catalog must hold one provider's prices
    metered: bool = False  # price the schedule by the catalog's metered prices
    market: str | None = None  # None: every market the catalog prices


def schedule_hours(req: Request) -> tuple[Decimal | None, list[str]]:
    """The schedule's real elapsed hours from --hours or --start/--end, and lines saying how."""
    if req.hours is not None and (req.start or req.end):
        raise TariffError(
            "give --hours or --start/--end, not both",
            hint="--hours is the whole schedule; --start/--end compute it",
        )
    if req.hours is not None:
        try:
            hours = Decimal(req.hours.strip())
        except InvalidOperation:
            hours = Decimal("NaN")
        if not hours.is_finite() or hours <= 0:
            raise TariffError(
                f"--hours {req.hours!r}: expected a number of hours > 0", hint="e.g. --hours 96"
            )
        return hours, [f"schedule: {hours_text(hours)}"]
    if not (req.start or req.end):
        return None, []
    if not (req.start and req.end):
        raise TariffError("--start and --end go together", hint="give both, or --hours")
    zone = parse_zone(req.tz)
    start = parse_time(req.start, zone, "--start")
    end = parse_time(req.end, zone, "--end")
    seconds = check_interval(start, end, "the schedule")
    hours = Decimal(seconds) / 3600
    lines = [
        zone_line([req.start, req.end], req.tz),
        f"schedule: {stamp(start)} to {stamp(end)} = {hours_text(hours)}",
    ]
    note = offset_change_note(start, end)
    if note:
        lines.append(f"note: {note}")
    return hours, [line for line in lines if line]


def zone_line(texts: Sequence[str], tz: str | None) -> str:
    """How times without an offset were read, or '' when every time carried one."""
    naive = [t for t in texts if _naive(t)]
    if not naive:
        return ""
    if tz:
        return f"time zone: {tz} (--tz) for times written without an offset"
    return "time zone: UTC for times written without an offset (no --tz given)"


def _naive(text: str) -> bool:
    try:
        return read_time(text).tzinfo is None
    except ValueError:
        return False


def report(catalog: Callable[[], Catalog], req: Request, catalog_name: str) -> list[str]:
    """The calculator's output lines for ``req``; ``catalog()`` loads the catalog when needed.

    Raises TariffError (exit code 2) on any input the rules refuse.
    """
    lots = parse_count(
        req.lots, "--lots", 1, "a whole number of lots, 1 or more (count lots, not cards)"
    )
    accepted = (
        None
        if req.accepted is None
        else parse_count(
            req.accepted,
            "--accepted-results",
            0,
            "a whole number >= 0 of distinct validated corpora",
        )
    )
    days = None if req.days is None else parse_count(req.days, "--days", 1, "3, 7 or 30", 7)
    if days is not None:
        check_days(days)
    hours, lines = schedule_hours(req)
    if req.metered:
        return lines + metered_lines(catalog, req, catalog_name, hours, lots, accepted, days)
    if req.list_catalog:
        cat = catalog().only(req.provider)
        day = cat.snapshot(req.catalog_date)
        lines.append(f"catalog: {catalog_name} ({_whose(cat)}snapshot of {day})")
        rows = [("gpu", "name", "plan", "price per lot", "cards per lot")] + [
            (p.gpu_slug, p.gpu_name, f"{p.plan_days} days", p.price_text, str(p.cards_per_lot))
            for p in sorted(cat.plans, key=lambda p: (p.gpu_slug, p.plan_days))
            if p.catalog_date == day
        ]
        return lines + table(rows)
    if req.gpu is None:
        if days is not None or accepted is not None or req.lots != "1":
            raise TariffError(
                "--days, --lots and --accepted-results price a GPU: add --gpu",
                hint="e.g. --gpu rtx-4090 --days 7 --lots 2",
            )
        if hours is None:
            raise TariffError(
                "nothing to compute",
                hint="price a plan with --gpu SLUG --days N --lots N, check a "
                "schedule with --hours H or --start/--end, or --list the catalog",
            )
        return lines + coverage_lines(hours)
    cat = catalog().only(req.provider)
    if days is None:
        if accepted is not None:
            raise TariffError("--accepted-results needs a plan: add --days", hint="e.g. --days 7")
        if hours is None:
            raise TariffError(
                "--gpu needs --days (3, 7 or 30), or a schedule (--hours or "
                "--start/--end) to compare the plans",
                hint="e.g. --days 7",
            )
        # find() is None for a missing price, and raises for an unknown GPU.
        priced = {d: cat.find(req.gpu, d, req.catalog_date) for d in PLAN_DAYS}
        return (
            lines
            + [
                f"catalog: {catalog_name} ({_whose(cat)}snapshot of "
                f"{cat.snapshot(req.catalog_date)})"
            ]
            + coverage_lines(hours, priced, lots)
        )
    plan = cat.plan(req.gpu, days, req.catalog_date)
    total = budget(plan, lots)
    lines += [
        f"catalog: {catalog_name} ({_whose(cat)}snapshot of {plan.catalog_date})",
        f"plan: {plan.gpu_name} ({plan.gpu_slug}), {plan.plan_days} days, "
        f"{plan.price_text} per lot of {_cards(plan.cards_per_lot)}",
        f"flat price: {money(total, plan.currency)} for {lots * plan.cards_per_lot} GPU"
        f"{'s' if lots * plan.cards_per_lot > 1 else ''} ({lots} lot{'s' if lots > 1 else ''} "
        f"of {_cards(plan.cards_per_lot)} x {plan.price_text} per lot)",
        "billing: flat; the whole plan is due however short the run (no hourly billing)",
    ]
    if hours is not None:
        priced = {d: cat.find(req.gpu, d, req.catalog_date) for d in PLAN_DAYS}
        lines += coverage_lines(hours, priced, lots)
        if hours > plan.hours:
            lines.append(
                f"warning: the {days}-day plan ({plan.hours} h) does not cover the "
                f"{hours_text(hours)} schedule: choose a covering plan or revise "
                "the schedule"
            )
    if accepted is not None:
        per = cost_per_accepted(total, accepted)
        spent = money(total, plan.currency)
        if per is None:
            lines.append(
                f"cost per accepted result: {UNDEFINED} (0 accepted results); the "
                f"{spent} spent stays in the settlement"
            )
        else:
            lines.append(
                f"cost per accepted result: {money(to_cent(per), plan.currency)} ({spent} / "
                f"{accepted} "
                f"distinct validated corp{'us' if accepted == 1 else 'ora'})"
            )
    return lines


def metered_lines(
    catalog: Callable[[], Catalog],
    req: Request,
    catalog_name: str,
    hours: Decimal | None,
    lots: int,
    accepted: int | None,
    days: int | None,
) -> list[str]:
    """The charge of a schedule at each metered price of a GPU (``--metered``); with
    ``--list``, the catalog's metered prices."""
    if req.list_catalog:
        return _metered_list(catalog().only(req.provider), catalog_name)
    if days is not None or req.gpu is None or hours is None:
        raise TariffError(
            "--metered prices a GPU for a schedule: give --gpu and --hours (or --start/--end), "
            "without --days",
            hint="e.g. --metered --gpu h100-sxm --hours 5.5",
        )
    if req.market is not None and req.market not in MARKETS:
        raise TariffError(
            f"--market {req.market!r}: expected {' or '.join(MARKETS)}", hint="e.g. --market spot"
        )
    cat = catalog().only(req.provider)
    found = [m for m in cat.metered(req.gpu, req.catalog_date) if req.market in (None, m.market)]
    if not found:
        raise TariffError(
            f"no {req.market} price for {req.gpu} in {catalog_name}",
            hint="leave --market out to see the markets it has",
        )
    seconds = int((hours * HOUR_SECONDS).to_integral_value(rounding=ROUND_CEILING))
    plural = "s" if lots > 1 else ""
    header = [
        "market",
        "price per hour (1 lot)",
        "billing",
        "billed",
        f"charge ({lots} lot{plural})",
    ]
    if accepted is not None:
        header.append("per accepted result")
    rows = [tuple(header)]
    for m in sorted(found, key=lambda m: (m.market, m.billing_seconds, m.cards_per_lot)):
        charge = m.charge(seconds, lots)
        row = [
            m.market,
            f"{m.price_text} ({_cards(m.cards_per_lot)})",
            billing_text(m.billing_seconds),
            f"{hours_text(Decimal(m.billed_seconds(seconds)) / HOUR_SECONDS)} "
            f"({m.billed_seconds(seconds):,} s)",
            money(charge, m.currency),
        ]
        if accepted is not None:
            per = cost_per_accepted(charge, accepted)
            row.append(UNDEFINED if per is None else money(to_cent(per), m.currency))
        rows.append(tuple(row))
    first = found[0]
    return [
        f"catalog: {catalog_name} ({_whose(cat)}metered prices of {first.catalog_date}; "
        f"{first.source})",
        *table(rows),
        "billing: metered; the used time is rounded up to whole billing steps, the charge "
        "half-up to the cent (spot capacity can be reclaimed at any time)",
    ]


def _metered_list(cat: Catalog, catalog_name: str) -> list[str]:
    """The newest metered snapshot's rows, one per GPU, lot, market and billing step."""
    if len(cat.providers()) > 1:
        cat.snapshot()  # raises: two providers' prices are never listed together
    dates = sorted({m.catalog_date for m in cat.meters})
    if not dates:
        raise TariffError(
            f"{catalog_name} holds no metered price",
            hint="add rows with market, price_per_hour and billing_seconds",
        )
    rows = [("gpu", "name", "market", "price per hour", "billing", "cards per lot")] + [
        (
            m.gpu_slug,
            m.gpu_name,
            m.market,
            m.price_text,
            billing_text(m.billing_seconds),
            str(m.cards_per_lot),
        )
        for m in sorted(cat.meters, key=lambda m: (m.gpu_slug, m.market, m.billing_seconds))
        if m.catalog_date == dates[-1]
    ]
    return [f"catalog: {catalog_name} ({_whose(cat)}metered prices of {dates[-1]})", *table(rows)]


def _whose(catalog: Catalog) -> str:
    """``NAME, `` when the catalog's prices name their provider, else nothing (the seed's
    lines stay as they were)."""
    providers = [p for p in catalog.providers() if p]
    return f"{providers[0]}, " if len(providers) == 1 else ""


def _cards(n: int) -> str:
    return f"{n} card{'s' if n > 1 else ''}"


def parser() -> argparse.ArgumentParser:
    """The standalone command line (``iteralab cost`` takes the same options)."""
    p = argparse.ArgumentParser(
        prog="calcul_forfaits.py",
        description="Flat-rate GPU plans: price of N lots, cost per accepted result, and which "
        "3-, 7- or 30-day plans cover a schedule.",
        epilog="example: python calcul_forfaits.py --gpu rtx-4090 --days 7 --lots 2",
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the calculator's options to ``p``."""
    p.add_argument("--gpu", help="GPU slug from the catalog, e.g. rtx-4090 or b200")
    p.add_argument("--days", help="plan length: 3, 7 or 30")
    p.add_argument(
        "--lots", default="1", help="number of lots (not cards: a B200 lot holds two), default 1"
    )
    p.add_argument(
        "--accepted-results",
        dest="accepted",
        metavar="N",
        help="distinct validated corpora (an integer >= 0); adds the cost per "
        "accepted result. Leave it out until outputs are validated",
    )
    p.add_argument("--hours", help="the whole schedule in hours, e.g. 96")
    p.add_argument("--start", help="schedule start, ISO 8601, e.g. 2026-12-07T09:00+01:00")
    p.add_argument("--end", help="schedule end, ISO 8601")
    p.add_argument(
        "--tz", help="time zone for times without an offset, e.g. Europe/Paris (default UTC)"
    )
    p.add_argument("--catalog", help=f"catalog CSV (default: {CATALOG_FILE} next to this script)")
    p.add_argument("--catalog-date", help="snapshot date to use (default: the newest)")
    p.add_argument(
        "--provider",
        help="whose prices to use when the catalog holds several providers' (the provider column)",
    )
    p.add_argument(
        "--metered",
        action="store_true",
        help="price the schedule (--hours or --start/--end) by the hour or second with the "
        "catalog's metered prices of --gpu, instead of flat plans",
    )
    p.add_argument("--market", help="with --metered: on-demand or spot (default: both)")
    p.add_argument(
        "--list",
        dest="list_catalog",
        action="store_true",
        help="list the catalog's GPUs, plans and prices",
    )


def request_from(args: argparse.Namespace) -> Request:
    """A Request from parsed arguments."""
    return Request(
        gpu=args.gpu,
        days=args.days,
        lots=args.lots,
        accepted=args.accepted,
        hours=args.hours,
        start=args.start,
        end=args.end,
        tz=args.tz,
        catalog_date=args.catalog_date,
        list_catalog=args.list_catalog,
        provider=args.provider,
        metered=args.metered,
        market=args.market,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the calculator; print the lines, or ``error: ...`` and return 2."""
    args = parser().parse_args(argv)
    path = Path(args.catalog) if args.catalog else Path(__file__).with_name(CATALOG_FILE)
    name = args.catalog or CATALOG_FILE
    try:
        lines = report(lambda: load_catalog(path, name), request_from(args), name)
    except TariffError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
