"""The incurred part of the Settlement (R21): each rental once, other costs, totals.

Money spent is counted from the Rentals sheet, never from the variants: five
variants that ran on one RTX 4090 lot are one rental, one amount. A rental's
amount is what the provider charges (typed in Rentals.amount, from the order
or invoice); a flat plan left without an amount is priced from the Tariffs
sheet (price of one lot x lots), from its provider's newest snapshot (or, when
Tariffs name no such provider, from the rows naming none) and only in the
rental's own currency: never converted. Other project costs (storage,
egress, set-up labour) keep their own rows with amount, currency and grounds.
Totals are per currency: amounts in different currencies are never added.

Every amount is a formula (a Rentals cell, or Tariffs price x lots; a total is
a SUMIF over the rows above it) with its cached value computed here in
Decimal. Pure: rows in, rows out. Stdlib only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.money import ledger
from toolkit.money.settlement import full_row as full
from toolkit.money.settlement import lookup_formula, metered_lookup
from toolkit.money.tariffs import Catalog, Meter, Plan, rules, same_provider
from toolkit.workbook.model import Formula

INCOMPLETE = "incomplete"
#: Where a total's grounds state its bridge: incurred total -> accepted corpora -> per corpus.
BRIDGE = "spent per accepted corpus: "


@dataclass(frozen=True)
class Rental:
    """One Rentals row, at its Excel row."""

    row: int
    values: dict[str, Any]

    def get(self, name: str) -> Any:
        """The row's cell ``name`` (None when blank)."""
        return self.values.get(name)

    @property
    def rental_id(self) -> str:
        """The id variants name."""
        return str(self.get("rental_id") or "").strip()

    @property
    def currency(self) -> str:
        """The ISO 4217 code as typed (upper case), "" when blank."""
        return str(self.get("currency") or "").strip().upper()

    @property
    def plan_days(self) -> int | None:
        """The flat plan's days; None for metered billing."""
        return layout.FLAT_DAYS.get(str(self.get("billing") or ""))

    @property
    def hours(self) -> Decimal | None:
        """Real elapsed hours from start to end; None unless both are times with offsets."""
        start, end = aware_time(self.get("start")), aware_time(self.get("end"))
        if start is None or end is None:
            return None
        return Decimal(rules.elapsed_seconds(start, end)) / 3600

    def beyond_plan(self) -> str | None:
        """Why a flat rental held past its plan is not one plan's cost, else None (R20).

        A plan is never extended automatically: the extra period is a rental of its own,
        with its own plan and price.
        """
        days, hours = self.plan_days, self.hours
        if days is None or hours is None or hours <= days * 24:
            return None
        return (
            f"the rental spans {rules.hours_text(hours)}, beyond its {days}-day plan of "
            f"{days * 24} h (a plan is never extended automatically): record the extra "
            "period as its own Rentals row with its plan"
        )


def aware_time(value: Any) -> dt.datetime | None:
    """A sheet's date-time with its UTC offset; None when blank, unreadable or without one
    (the sheet's schema reports those)."""
    try:
        moment = rules.read_time(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else None


def rentals_of(data: Any) -> list[Rental]:
    """The Rentals sheet's rows, each with its Excel row."""
    rows = data.tables.get(layout.RENTALS.name, [])
    return [Rental(data.excel_row(layout.RENTALS.name, i), row) for i, row in enumerate(rows)]


def reconciliation(
    data: Any, catalog: Catalog | None, other_costs: Sequence[dict[str, Any]] = ()
) -> tuple[dict[str, str], list[Any]]:
    """The Ledger sheet against the Rentals and the other costs: per rental id (or other
    cost's item) its status, and the ledger lines none accounts for
    (:func:`toolkit.money.ledger.reconcile`). A billing line recorded as another cost is
    matched by the cost's item, which holds the line's reference."""
    booked = [
        ledger.Booked(
            r.rental_id,
            str(r.get("reference") or "").strip() or None,
            price(r, catalog).amount,
            r.currency,
        )
        for r in rentals_of(data)
    ]
    booked += [
        ledger.Booked(
            str(c.get("item")),
            str(c.get("item") or "").strip() or None,
            decimal(c.get("amount")),
            str(c.get("currency") or ""),
        )
        for c in other_costs
    ]
    return ledger.reconcile(booked, data.tables.get(layout.LEDGER.name, []))


def served(rental_id: str, variants: Sequence[dict[str, Any]]) -> list[str]:
    """Ids of the variants that name ``rental_id``, in Variants order."""
    return [
        str(v.get("variant_id"))
        for v in variants
        if str(v.get("rental_id") or "").strip() == rental_id and v.get("variant_id")
    ]


def decimal(value: Any) -> Decimal | None:
    """A typed amount as Decimal (its shortest repr for a float); None when not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    return number if number.is_finite() and number >= 0 else None


@dataclass(frozen=True)
class Priced:
    """A rental's amount, where it comes from, and the tariff plan when priced from Tariffs."""

    amount: Decimal | None
    grounds: str
    plan: Any = None  # a tariffs Plan


def price(rental: Rental, catalog: Catalog | None) -> Priced:
    """The rental's amount: typed, else a flat plan's Tariffs price x lots, else None and why."""
    typed = decimal(rental.get("amount"))
    source = str(rental.get("source") or "").strip()
    if typed is not None:
        beyond = rental.beyond_plan()
        return Priced(
            typed,
            f"amount from Rentals ({source or 'no source given'})"
            + (f"; {beyond}" if beyond else ""),
        )
    days, lots = rental.plan_days, rental.get("lots")
    if catalog is None:
        return Priced(None, "no amount in Rentals and no Tariffs price to use")
    if days is None:
        return metered_price(rental, catalog)
    named = str(rental.get("provider") or "").strip()
    # Its provider's newest prices first, then the catalog as shipped, which names none.
    scopes = [
        p
        for p in dict.fromkeys((named, ""))
        if any(same_provider(q, p) for q in catalog.providers())
    ]
    if not scopes:
        return Priced(
            None,
            f"no amount in Rentals and no Tariffs prices of "
            f"{named or 'its provider'}: type the amount charged in Rentals.amount",
        )
    problem = ""
    for provider in scopes:
        try:
            plan: Plan = catalog.only(provider).plan(str(rental.get("gpu_slug") or ""), days)
        except rules.TariffError as exc:
            problem = problem or f"no amount in Rentals and no Tariffs price: {exc.message}"
            continue
        if plan.currency != rental.currency:  # never converted
            problem = problem or (
                f"Tariffs prices are in {plan.currency}, the rental in "
                f"{rental.currency}: type the amount charged in "
                "Rentals.amount"
            )
            continue
        break
    else:
        return Priced(None, problem)
    if not isinstance(lots, int) or lots < 1:
        return Priced(None, "lots is not a whole number >= 1")
    grounds = (
        f"Tariffs: {days}-day plan of {plan.catalog_date}"
        f"{f' by {plan.provider}' if plan.provider else ''} x {lots} lot(s) "
        f"({plan.source})"
    )
    amount = rules.budget(plan, lots)
    beyond = rental.beyond_plan()
    if beyond:  # one plan's price is not what the whole span cost: no amount, no total
        return Priced(
            None,
            f"{grounds} = {rules.money(amount, plan.currency)} prices the "
            f"plan only: {beyond}, or type the amount charged in Rentals.amount",
        )
    return Priced(amount, grounds, plan)


def metered_price(rental: Rental, catalog: Catalog) -> Priced:
    """A metered rental priced to its billing step from Tariffs: the newest metered row of its
    GPU, lot size, market and billing (hourly: steps of 3600 s; per-second: shorter steps), of
    its provider (else the rows naming none), in its currency; None and why otherwise."""
    billing, market = str(rental.get("billing") or ""), str(rental.get("market") or "")
    start, end = aware_time(rental.get("start")), aware_time(rental.get("end"))
    lots = rental.get("lots")
    if start is None or end is None:
        return Priced(
            None,
            f"{billing} billing: give start and end with their UTC offsets to price it from "
            "Tariffs, or type the metered amount from the provider's invoice in Rentals.amount",
        )
    if not isinstance(lots, int) or lots < 1:
        return Priced(None, "lots is not a whole number >= 1")
    named = str(rental.get("provider") or "").strip()
    slug = str(rental.get("gpu_slug") or "").strip().lower()
    for provider in dict.fromkeys((named, "")):
        found = [
            m
            for m in catalog.meters
            if same_provider(m.provider, provider)
            and m.gpu_slug == slug
            and m.market == market
            and m.cards_per_lot == rental.get("cards_per_lot")
            and m.currency == rental.currency
            and (m.billing_seconds == rules.HOUR_SECONDS) == (billing == "hourly")
        ]
        if found:
            meter = max(found, key=lambda m: m.catalog_date)
            seconds = rules.elapsed_seconds(start, end)
            return Priced(
                meter.charge(seconds, lots),
                f"Tariffs: {market} price of {meter.catalog_date}"
                f"{f' by {meter.provider}' if meter.provider else ''}, "
                f"{meter.price_text} an hour {rules.billing_text(meter.billing_seconds)} x "
                f"{rules.hours_text(Decimal(meter.billed_seconds(seconds)) / 3600)} billed x "
                f"{lots} lot(s) ({meter.source})",
                meter,
            )
    return Priced(
        None,
        f"no amount in Rentals and no metered Tariffs price of {slug} ({market}, {billing}, "
        f"lot of {rental.get('cards_per_lot')}, {rental.currency or 'no currency'}) of "
        f"{named or 'its provider'}: add that row to Tariffs, or type the amount charged in "
        "Rentals.amount",
    )


def _col(name: str) -> str:
    return layout.column_letter(layout.SETTLEMENT, name)


#: Rentals rows the lookup by rental_id reaches (header excluded); far beyond any campaign.
RENTAL_ROWS = 5000


def _rentals_amount(row: int) -> str:
    """Rentals.amount of the rental this Settlement row (item = rental_id) names."""

    def rng(name: str) -> str:
        letter = layout.column_letter(layout.RENTALS, name)
        return f"{layout.RENTALS.name}!${letter}$2:${letter}${RENTAL_ROWS + 1}"

    return f"INDEX({rng('amount')},MATCH(${_col('item')}{row},{rng('rental_id')},0))"


def rental_row(
    rental: Rental, catalog: Catalog | None, variants: Sequence[dict[str, Any]], row: int
) -> dict[str, Any]:
    """The Settlement row of one rental, written at Excel row ``row``."""
    priced = price(rental, catalog)
    lots, per_lot = rental.get("lots"), rental.get("cards_per_lot")
    users = served(rental.rental_id, variants)
    c = {n: f"{_col(n)}{row}" for n in ("lots", "cards_per_lot", "price_per_lot")}
    values: dict[str, Any] = {
        "item": rental.rental_id,
        "kind": "rental",
        "part": "incurred",
        "rental_id": rental.rental_id,
        "gpu_slug": rental.get("gpu_slug"),
        "lots": lots,
        "cards_per_lot": per_lot,
        "plan_days": rental.plan_days,
        "currency": rental.currency or None,
        "variants": ", ".join(users) if users else None,
    }
    if isinstance(lots, int) and isinstance(per_lot, int):
        # Lots x the cards each holds: a B200 lot's price already covers its two cards.
        values["cards"] = Formula(f"{c['lots']}*{c['cards_per_lot']}", lots * per_lot)
    if decimal(rental.get("amount")) is not None:
        # Found by rental_id, never by row: a person sorting Rentals changes no amount.
        values["amount"] = Formula(_rentals_amount(row), priced.amount)
    elif isinstance(priced.plan, Meter):
        meter = priced.plan
        several = catalog is not None and len(catalog.providers()) > 1
        start, end = aware_time(rental.get("start")), aware_time(rental.get("end"))
        assert start is not None and end is not None  # priced: both are known
        billed = meter.billed_seconds(rules.elapsed_seconds(start, end))
        rate, seconds = f"{_col('price_per_hour')}{row}", f"{_col('billed_seconds')}{row}"
        values["catalog_date"] = meter.catalog_date
        values["price_per_hour"] = Formula(
            metered_lookup(meter, row, several), meter.price_per_hour
        )
        values["billed_seconds"] = billed
        # To the cent, as the invoice states it (ROUND is half away from zero: half-up here).
        values["amount"] = Formula(
            f'IF(ISNUMBER({rate}),ROUND({rate}*{seconds}/3600*{c["lots"]},2),"")', priced.amount
        )
    elif priced.plan is not None:
        values["catalog_date"] = priced.plan.catalog_date
        several = catalog is not None and len(catalog.providers()) > 1
        # In the plan's own currency (the row's `currency`): never under a USD heading.
        values["price_per_lot"] = Formula(
            lookup_formula("price_per_lot_usd", row, priced.plan.provider if several else None),
            priced.plan.price_per_lot_usd,
        )
        values["amount"] = Formula(
            f'IF(ISNUMBER({c["price_per_lot"]}),{c["price_per_lot"]}*{c["lots"]},"")', priced.amount
        )
    market = rental.get("market") or "market not stated"
    who = ", ".join(str(x) for x in (rental.get("provider"), rental.get("reference")) if x)
    values["grounds"] = (
        f"{rental.get('billing')}, {market}, {who or 'provider not stated'}; "
        f"{priced.grounds}" + ("" if users else "; no variant names this rental")
    )
    return full(values)


def other_cost_row(row: dict[str, Any]) -> dict[str, Any]:
    """Another project cost typed in the Settlement: amount and currency kept as typed.

    A cost typed in budget_usd (before the amount and currency columns existed)
    is an amount in USD.
    """
    values = {name: row.get(name) for name in layout.SETTLEMENT.names}
    amount = decimal(values.get("amount"))
    if amount is None and decimal(values.get("budget_usd")) is not None:
        amount = decimal(values["budget_usd"])
        values["currency"] = values.get("currency") or "USD"
    currency = values.get("currency")
    values.update(
        kind="other cost",
        part="incurred",
        amount=amount,
        currency=currency.strip().upper() if isinstance(currency, str) else currency,
    )
    return values


#: Settlement rows a total reaches (header excluded): far beyond any settlement.
TOTAL_REACH = 10000
#: The rows a total adds: rentals and other costs (never a ledger-only line or a total).
SUMMED = ("rental", "other cost")


def counted(row: dict[str, Any], excel: int) -> Formula:
    """A rental's or other cost's counted_amount at Excel row ``excel``: its own amount,
    empty while it has none."""
    amount, value = f"{_col('amount')}{excel}", _value(row.get("amount"))
    return Formula(f'IF({amount}="","",{amount})', "" if value is None else value)


def _reach(name: str) -> str:
    col = _col(name)
    return f"${col}$2:${col}${TOTAL_REACH + 1}"


def total_formulas(currency: str) -> tuple[str, str]:
    """The total incurred in ``currency`` ('incomplete' while a summed row lacks its amount)
    and its known subtotal: counted_amount by currency over the whole sheet, whatever the
    rows' order (totals leave counted_amount empty: none counts another)."""
    cur, kind, amt = _reach("currency"), _reach("kind"), _reach("counted_amount")
    missing = "+".join(
        f'SUMPRODUCT(({cur}="{currency}")*({kind}="{k}")*({amt}=""))' for k in SUMMED
    )
    subtotal = f'SUMIFS({amt},{cur},"{currency}")'
    return f'IF({missing}>0,"{INCOMPLETE}",{subtotal})', subtotal


def total_rows(
    incurred: Sequence[dict[str, Any]], first: int, accepted: int | None = None
) -> list[dict[str, Any]]:
    """One "total incurred" row per currency, under the incurred rows from Excel row ``first``.

    A total whose currency has a row without an amount is ``incomplete``: money is never
    summed as if a missing amount were 0; the known subtotal stands beside it. The ledger
    status gathers its rows' (an amount that differs reaches the total). ``accepted``: the
    corpora accepted and confirmed in the campaign; spent per accepted corpus = the total /
    those (a formula over the decision rows' accepted_corpora, the most any configuration
    confirmed: a corpus accepted by several variants counts once).
    """
    out = []
    currencies = sorted({str(r.get("currency")) for r in incurred if r.get("currency")})
    acc = _reach("accepted_corpora")
    for i, currency in enumerate(currencies):
        row = first + len(incurred) + i
        mine = [r for r in incurred if r.get("currency") == currency]
        amounts = [_value(r.get("amount")) for r in mine]
        missing = [str(r.get("item")) for r, a in zip(mine, amounts, strict=True) if a is None]
        known = sum((a for a in amounts if a is not None), Decimal(0))
        total: Any = INCOMPLETE if missing else known
        formula, subtotal = total_formulas(currency)
        amount = f"{_col('amount')}{row}"
        spent = Formula(
            f"IF(AND(ISNUMBER({amount}),COUNT({acc})>0),IF(MAX({acc})>0,"
            f'{amount}/MAX({acc}),"{rules.UNDEFINED}"),"")',
            _spent(total, accepted),
        )
        grounds = (
            f"{len(mine)} row(s) in {currency}, each rental once"
            + (
                f"; no amount yet for {', '.join(missing)}: the known subtotal is "
                f"{rules.money(known, currency)}"
                if missing
                else ""
            )
            + _example_note(mine)
            + f"; {BRIDGE}{_bridge(total, accepted, currency)}"
        )
        out.append(
            full(
                {
                    "item": f"total incurred ({currency})",
                    "kind": "total incurred",
                    "part": "incurred",
                    "currency": currency,
                    "amount": Formula(formula, total),
                    "known_subtotal": Formula(subtotal, known),
                    "spent_per_accepted": spent,
                    "ledger_status": total_status(mine),
                    "grounds": grounds,
                }
            )
        )
    unnamed = [str(r.get("item")) for r in incurred if not r.get("currency")]
    if unnamed:
        out.append(
            full(
                {
                    "item": "total incurred (no currency)",
                    "kind": "total incurred",
                    "part": "incurred",
                    "amount": INCOMPLETE,
                    "grounds": f"no currency for {', '.join(unnamed)}: every amount has "
                    "one; type it",
                }
            )
        )
    return out


def _example_note(rows: Sequence[dict[str, Any]]) -> str:
    """Which of a total's rows rest on an EXAMPLE figure: the total does too."""
    marked = [str(r.get("item")) for r in rows if layout.EXAMPLE in str(r.get("grounds") or "")]
    return f"; {layout.EXAMPLE} figures in {', '.join(marked)}" if marked else ""


def _spent(total: Any, accepted: int | None) -> Any:
    if not isinstance(total, Decimal) or accepted is None:
        return ""
    per = rules.cost_per_accepted(total, accepted)
    return rules.UNDEFINED if per is None else per


def _bridge(total: Any, accepted: int | None, currency: str) -> str:
    """incurred total -> accepted corpora -> spent per corpus, in words."""
    if not isinstance(total, Decimal):
        return "none while the total is incomplete"
    if accepted is None:
        return (
            f"{rules.money(total, currency)} incurred, no corpus confirmed yet "
            "(Verification): empty"
        )
    per = _spent(total, accepted)
    shown = per if isinstance(per, str) else rules.money(rules.to_cent(per), currency)
    return (
        f"{rules.money(total, currency)} incurred / {accepted} accepted corpus(es) "
        f"confirmed = {shown}"
    )


def total_status(rows: Sequence[dict[str, Any]]) -> str | None:
    """A total's ledger status from its rows': matched when every row is, else each row
    that is not, with its status (an amount that differs is never hidden by the total)."""
    statuses = [(str(r.get("item")), r.get("ledger_status")) for r in rows]
    known = [(item, s) for item, s in statuses if s]
    if not known:
        return None
    if all(s == ledger.NO_LEDGER for _, s in known):
        return ledger.NO_LEDGER
    off = [f"{item}: {s}" for item, s in known if not str(s).startswith("matched")]
    if not off:
        return f"matched ({len(known)} row(s))"
    return f"check: {'; '.join(off)}"


def _value(cell: Any) -> Decimal | None:
    return decimal(cell.value if isinstance(cell, Formula) else cell)
