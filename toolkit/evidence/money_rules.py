"""Cross-row rules of the money sheets: Tariffs, Rentals, Schedule, Verification (R19-R22).

Each rule returns findings (sheet, Excel row, column, check, message) for
:mod:`toolkit.evidence.validate`, which adds the schemas and the other sheets.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.errors import UsageError
from toolkit.findings import Finding
from toolkit.money.incurred import Rental, aware_time, metered_price
from toolkit.money.tariffs import (
    CURRENCY,
    PLAN_DAYS,
    Catalog,
    catalog_from_workbook,
    rules,
    with_iso_date,
)
from toolkit.workbook.model import WorkbookData

YES = layout.YES


def _tariffs_rules(data: WorkbookData) -> list[Finding]:
    found = []
    seen: dict[tuple[object, object, object, str], int] = {}
    for i, t in enumerate(data.tables["Tariffs"]):
        excel = data.excel_row("Tariffs", i)
        # One price per plan in a snapshot; a snapshot is one provider's prices of one date.
        provider = str(t.get("provider") or "").strip()
        found += _row_kind_findings(t, excel)
        key = (t.get("catalog_date"), t.get("gpu_slug"), t.get("plan_days"), provider.casefold())
        if t.get("price_per_hour") is None and key in seen:
            whose = f" of {provider}" if provider else ""
            found.append(
                Finding(
                    "Tariffs",
                    excel,
                    "plan_days",
                    "unique",
                    f"{key[1]} has two {key[2]}-day prices in the catalog{whose} of "
                    f"{key[0]} (rows {seen[key]} and {excel}): keep one",
                )
            )
        seen[key] = excel
        currency = t.get("currency")
        if currency is not None and not CURRENCY.match(str(currency).strip().upper()):
            found.append(
                Finding(
                    "Tariffs",
                    excel,
                    "currency",
                    "currency",
                    f"currency {currency!r} is not an ISO 4217 code: type three "
                    "letters, e.g. USD or EUR (empty means USD)",
                )
            )
        cards, days = t.get("cards_per_lot"), t.get("plan_days")
        if isinstance(cards, int) and cards < 1:
            found.append(
                Finding(
                    "Tariffs",
                    excel,
                    "cards_per_lot",
                    "positive",
                    f"cards_per_lot must be at least 1; found {cards}",
                )
            )
        if isinstance(days, int) and days not in PLAN_DAYS:
            found.append(
                Finding(
                    "Tariffs",
                    excel,
                    "plan_days",
                    "plan",
                    f"plan_days must be one of the flat-rate plans "
                    f"{', '.join(map(str, PLAN_DAYS))} (days); found {days}: "
                    "correct it or remove the row",
                )
            )
        price = t.get("price_per_lot_usd")
        problem = _price_problem(price)
        if problem is not None:
            found.append(
                Finding(
                    "Tariffs",
                    excel,
                    "price_per_lot_usd",
                    "exact",
                    f"price_per_lot_usd {price} {problem}: {rules.PRICE_HINT}",
                )
            )
        if t.get("price_per_lot_usd") == 0:
            found.append(
                Finding(
                    "Tariffs",
                    excel,
                    "price_per_lot_usd",
                    "zero",
                    "a price of 0 is not a price: remove the row if unknown",
                )
            )
        problem = _catalog_date_problem(t, excel) if t.get("catalog_date") is not None else None
        if problem is not None:  # a blank is the schema's finding
            found.append(Finding("Tariffs", excel, "catalog_date", "date", problem))
    return found


#: The Rentals billings a provider meters (the others are flat plans).
METERED = ("hourly", "per-second")
#: What a flat row fills, and what a metered row fills instead.
FLAT_COLUMNS = ("plan_days", "price_per_lot_usd")
METERED_COLUMNS = ("market", "price_per_hour", "billing_seconds")


def _row_kind_findings(row: dict[str, Any], excel: int) -> list[Finding]:
    """A Tariffs row is a flat plan (plan_days and price_per_lot_usd) or a metered price
    (market, price_per_hour and billing_seconds), never both nor half of one."""
    metered = row.get("price_per_hour") is not None
    wanted, other = (METERED_COLUMNS, FLAT_COLUMNS) if metered else (FLAT_COLUMNS, ())
    kind = "a metered row (price_per_hour filled)" if metered else "a flat plan row"
    found = [
        Finding(
            "Tariffs",
            excel,
            name,
            "required",
            f"{name} is empty on {kind}: fill it in, or remove the row if the price is unknown",
        )
        for name in wanted
        if row.get(name) is None
    ]
    found += [
        Finding(
            "Tariffs",
            excel,
            name,
            "kind",
            f"{name} is filled on {kind}: a flat plan and a metered price go on two rows",
        )
        for name in other
        if row.get(name) is not None
    ]
    return found


def _price_problem(price: Any) -> str | None:
    """Why a typed price (a number above 0; the schema names the rest) is past what a
    workbook keeps exactly, or None."""
    if isinstance(price, bool) or not isinstance(price, (int, float, Decimal)):
        return None
    amount = Decimal(repr(price)) if isinstance(price, float) else Decimal(price)
    return rules.price_problem(amount) if amount.is_finite() and amount > 0 else None


def _catalog_date_problem(row: dict[str, Any], excel: int) -> str | None:
    """What is wrong with a Tariffs row's catalog_date by the tariff rules `tariffs import`
    applies, or None: `report` builds no catalog from a sheet with one, and prices nothing."""
    where = f"Tariffs!{layout.column_letter(layout.TARIFFS, 'catalog_date')}{excel}"
    located: list[str] = []

    def locate(column: str) -> str:
        located.append(column)
        return f"{where} {column}"

    try:
        rules.make_plan(with_iso_date(row), locate)
    except rules.TariffError as exc:
        if located[-1:] == ["catalog_date"]:  # other columns' problems have findings of theirs
            return (
                f"{exc.message}: {exc.hint}, typed as text; until then `iteralab report` "
                "prices nothing from Tariffs"
            )
    return None


def _schedule_rules(data: WorkbookData) -> list[Finding]:
    found = []
    for i, p in enumerate(data.tables["Schedule"]):
        start, end = aware_time(p.get("start")), aware_time(p.get("end"))
        if start and end and end <= start:  # unreadable times: the schema reports them
            found.append(
                Finding(
                    "Schedule",
                    data.excel_row("Schedule", i),
                    "end",
                    "order",
                    f"phase {p.get('phase')!r} ends at or before it starts: correct start or end",
                )
            )
    return found


def _sheet_catalog(data: WorkbookData) -> Catalog | None:
    """The Tariffs sheet's catalog; None when it has none or cannot be read (the Tariffs
    rules report why)."""
    try:
        return catalog_from_workbook(data)
    except UsageError:
        return None


def _unpriced_metered(rental: Rental, catalog: Catalog | None) -> str | None:
    """Why a metered rental without an amount has no price from Tariffs either, else None."""
    if rental.get("billing") not in METERED or rental.get("amount") is not None:
        return None  # a flat plan, or the amount the provider charged
    if catalog is not None and metered_price(rental, catalog).amount is not None:
        return None
    why = "no Tariffs sheet to read" if catalog is None else metered_price(rental, catalog).grounds
    return (
        f"{rental.get('billing')} billing without an amount and no metered price to use "
        f"({why}): type the amount the provider charged (invoice or billing export), or give "
        "start, end and the Tariffs row of its market and billing"
    )


def _rentals_rules(data: WorkbookData) -> list[Finding]:
    found = []
    slugs: dict[str, set[str]] = {}
    for v in data.tables["Variants"]:
        rental = str(v.get("rental_id") or "").strip()
        if rental and v.get("gpu_slug"):
            slugs.setdefault(rental, set()).add(str(v["gpu_slug"]).strip().lower())
    tariff_cards = {
        (
            str(t.get("provider") or "").strip().casefold(),
            str(t.get("gpu_slug")),
            t.get("plan_days"),
        ): t.get("cards_per_lot")
        for t in data.tables["Tariffs"]
    }
    catalog = _sheet_catalog(data)
    for i, r in enumerate(data.tables[layout.RENTALS.name]):
        excel = data.excel_row(layout.RENTALS.name, i)

        def add(column: str, check: str, message: str, excel: int = excel) -> None:
            found.append(Finding(layout.RENTALS.name, excel, column, check, message))

        for name in ("lots", "cards_per_lot"):
            value = r.get(name)
            if isinstance(value, int) and value < 1:
                add(name, "positive", f"{name} must be at least 1; found {value}")
        currency = r.get("currency")
        if isinstance(currency, str) and not CURRENCY.match(currency.strip()):
            add(
                "currency",
                "currency",
                f"currency {currency!r} is not an ISO 4217 code: type "
                "three capital letters, e.g. USD or EUR",
            )
        if r.get("amount") == 0:
            add(
                "amount",
                "zero",
                "an amount of 0 is not a price: leave it empty for a flat "
                "plan priced by Tariffs, or type what the invoice says",
            )
        unpriced = _unpriced_metered(Rental(excel, r), catalog)
        if unpriced:
            add("amount", "metered", unpriced)
        gpu = str(r.get("gpu_slug") or "").strip().lower()
        others = slugs.get(str(r.get("rental_id") or "").strip(), set()) - {gpu}
        if gpu and others:
            add(
                "gpu_slug",
                "same-gpu",
                f"rental {r.get('rental_id')!r} rented {gpu}, but "
                f"variants naming it declare {', '.join(sorted(others))}: a variant runs on the "
                "GPU its rental holds; correct the rental or the variant's rental_id",
            )
        days = layout.FLAT_DAYS.get(str(r.get("billing") or ""))
        # The rental's provider's lots, else those of the catalog naming no provider.
        provider = str(r.get("provider") or "").strip().casefold()
        cards = tariff_cards.get((provider, gpu, days), tariff_cards.get(("", gpu, days)))
        if cards is not None and r.get("cards_per_lot") not in (None, cards):
            add(
                "cards_per_lot",
                "catalog",
                f"cards_per_lot {r.get('cards_per_lot')} differs "
                f"from the Tariffs catalog ({cards} for {gpu}): a lot holds what the catalog "
                "sells",
            )
        start, end = aware_time(r.get("start")), aware_time(r.get("end"))
        if start and end and end <= start:
            add("end", "order", "the rental ends at or before it starts: correct start or end")
        beyond = Rental(excel, r).beyond_plan()
        if beyond:
            add("end", "beyond-plan", f"{beyond}, or correct end")
        outside = attempts_outside(data, str(r.get("rental_id") or "").strip(), start, end)
        if outside:
            add(
                "start" if outside[0] == "before" else "end",
                "rental-window",
                f"{outside[1]}: they ran on a machine this rental did not pay for; correct "
                "the rental's start or end, the variants' rental_id, or record the rental "
                "that paid for them",
            )
    return found


def attempts_outside(
    data: WorkbookData, rental_id: str, start: Any, end: Any
) -> tuple[str, str] | None:
    """Attempts of the variants naming ``rental_id`` that started before the rental's
    ``start`` or after its ``end`` (aware date-times; None where unknown): ("before" or
    "after", what to say), or None when every attempt falls inside it."""
    if not rental_id or (start is None and end is None):
        return None
    users = {
        str(v.get("variant_id"))
        for v in data.tables["Variants"]
        if str(v.get("rental_id") or "").strip() == rental_id
    }
    before, after = [], []
    for a in data.tables["Attempts"]:
        at = aware_time(a.get("started_at")) if str(a.get("variant_id")) in users else None
        if at is None:
            continue
        if start is not None and at < start:
            before.append((at, str(a.get("attempt_id"))))
        elif end is not None and at > end:
            after.append((at, str(a.get("attempt_id"))))
    for side, rows, bound in (("before", before, start), ("after", after, end)):
        if rows:
            rows.sort()
            more = f" and {len(rows) - 1} more" if len(rows) > 1 else ""
            edge = "start" if side == "before" else "end"
            return side, (
                f"attempt {rows[0][1]}{more} of rental {rental_id!r} started "
                f"{side} the rental's {edge} ({rules.stamp(bound)}), the first at "
                f"{rules.stamp(rows[0][0])}"
            )
    return None


def variants_rental_rules(data: WorkbookData) -> list[Finding]:
    """Each variant's rental_id names a Rentals row."""
    rentals = {str(r.get("rental_id") or "").strip() for r in data.tables[layout.RENTALS.name]}
    found = []
    for i, v in enumerate(data.tables["Variants"]):
        rental = str(v.get("rental_id") or "").strip()
        if rental and rental not in rentals:
            found.append(
                Finding(
                    "Variants",
                    data.excel_row("Variants", i),
                    "rental_id",
                    "exists",
                    f"rental {rental!r} has no Rentals row: add what was "
                    "rented (provider, lots, billing, currency) or correct the id",
                )
            )
    return found


def _verification_rules(data: WorkbookData) -> list[Finding]:
    variants = {str(v.get("variant_id")) for v in data.tables["Variants"]}
    found = []
    for i, row in enumerate(data.tables[layout.VERIFICATION.name]):
        excel = data.excel_row(layout.VERIFICATION.name, i)

        def add(column: str, check: str, message: str, excel: int = excel) -> None:
            found.append(Finding(layout.VERIFICATION.name, excel, column, check, message))

        vid = str(row.get("variant_id") or "")
        if vid and vid not in variants:
            add(
                "variant_id",
                "exists",
                f"variant {vid!r} is not declared in Variants: correct the id",
            )
        count = row.get("confirmed_corpora")
        if isinstance(count, int) and count < 0:
            add(
                "confirmed_corpora",
                "positive",
                f"confirmed_corpora must be at least 0; found {count}",
            )
        if row.get("verified") == YES:
            missing = [
                n
                for n in ("confirmed_corpora", "verified_by", "verified_at", "checked")
                if row.get(n) is None
            ]
            if missing:
                add(
                    missing[0],
                    "verification",
                    f"a verification says who checked, when, what, "
                    f"and how many corpora: fill {', '.join(missing)}",
                )
        accepted = len(
            accepted_corpora(vid, data.tables["Attempts"], data.tables["Manifest"]) or ()
        )
        if isinstance(count, int) and row.get("verified") == YES and count > accepted:
            add(
                "confirmed_corpora",
                "accepted",
                f"{count} corpus(es) confirmed, but the runner "
                f"accepted {accepted} distinct corpus(es) of {vid}: only outputs that exist "
                "and passed can be confirmed",
            )
    return found


def accepted_corpora(
    variant_id: str, attempts: Sequence[dict[str, Any]], manifests: Sequence[dict[str, Any]]
) -> frozenset[str] | None:
    """Distinct fingerprints of the variant's accepted corpora (R22); None before any attempt.

    Accepted by the runner: ``corpus_accepted = yes`` under the current protocol. An
    accepted attempt whose Manifest row is missing counts under its manifest id.
    """
    fingerprints = {m.get("manifest_id"): m.get("corpus_sha256") for m in manifests}
    mine = [a for a in attempts if str(a.get("variant_id")) == variant_id]
    if not mine:
        return None
    return frozenset(
        str(fingerprints.get(a.get("manifest_id")) or f"manifest {a.get('manifest_id')}")
        for a in mine
        if a.get("corpus_accepted") == YES and a.get("pre_amendment") != YES
    )


#: The sheets a report's numbers come from, as the memo's stamp names them.
MEMO_INPUTS = (
    "Protocol",
    "Variants",
    "Attempts",
    "Tariffs",
    "Rentals",
    "Schedule",
    "Verification",
    "Ledger",
    "Settlement",
)
STAMP_INPUTS = "; inputs "
#: The check of a memo older than the numbers it quotes (`report` rewrites it: not its finding).
STALE_MEMO = "stale-memo"


#: Values :func:`_plain` gives back as they are: most cells (a million at 10,000 attempts)
#: skip the call.
_AS_IS = frozenset((str, int, bool, type(None)))


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):  # computed before a save, a float after
        value = float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def input_hashes(data: WorkbookData) -> dict[str, str]:
    """A short SHA-256 of each input sheet's typed content: order-free (a sort changes no
    number, so no hash), the Settlement's other costs only, the Schedule's typed phases."""
    out = {}
    for name in MEMO_INPUTS:
        sheet = layout.SHEET_BY_NAME[name]
        if sheet.kind == "form":
            rows = [data.forms.get(name, {})]
        else:
            rows = [
                r
                for r in data.tables.get(name, [])
                if name != "Settlement" or r.get("kind") == "other cost"
            ]
        columns = [
            c.name
            for c in sheet.all_columns
            if not c.computed
            or name in ("Attempts", "Ledger")
            or (name == "Settlement" and c.name in ("item", "amount", "currency", "grounds"))
        ]
        lines = sorted(
            json.dumps([v if type(v) in _AS_IS else _plain(v) for v in map(r.get, columns)])
            for r in rows
        )
        out[name] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]
    return out


def memo_stamp(data: WorkbookData, at: str) -> str:
    """The Decision's report_run: when the report ran and the hash of each input then. A
    stamp whose inputs are unchanged is kept as it is: the memo still reflects that run, and
    a second report of the same evidence has nothing to save."""
    hashes = ", ".join(f"{k} {v}" for k, v in input_hashes(data).items())
    previous = str(data.forms.get(layout.DECISION.name, {}).get("report_run") or "")
    if previous.endswith(STAMP_INPUTS + hashes):
        return previous
    return f"report of {at}{STAMP_INPUTS}{hashes}"


def _stale_memo_rules(data: WorkbookData) -> list[Finding]:
    """The memo quotes numbers of the report run its stamp names: an input changed since
    (a tariff typed in Excel, a ledger imported, an attempt excluded) makes it stale."""
    stamp = str(data.forms.get(layout.DECISION.name, {}).get("report_run") or "")
    if STAMP_INPUTS not in stamp:
        return []
    when, listed = stamp.split(STAMP_INPUTS, 1)
    then = dict(part.rsplit(" ", 1) for part in listed.split(", ") if " " in part)
    now = input_hashes(data)
    changed = [name for name in MEMO_INPUTS if then.get(name) != now[name]]
    if not changed:
        return []
    return [
        Finding(
            layout.DECISION.name,
            layout.DECISION.names.index("report_run") + 2,
            "report_run",
            STALE_MEMO,
            f"the memo reflects the {when}; {', '.join(changed)} changed since, so the "
            "numbers it quotes may be out of date: run `iteralab report` again",
        )
    ]


RULES = {
    layout.DECISION.name: _stale_memo_rules,
    "Tariffs": _tariffs_rules,
    layout.RENTALS.name: _rentals_rules,
    "Schedule": _schedule_rules,
    layout.VERIFICATION.name: _verification_rules,
}
