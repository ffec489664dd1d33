"""The campaign's estimated hours and cost from the pre-flight's one batch per variant.

No torch: the checks come back from the process that ran them
(:mod:`toolkit.runner.preflight.result`); the prices are the Tariffs sheet's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.errors import ToolkitError
from toolkit.money.tariffs import Meter, catalog_from_workbook, money
from toolkit.report.costs import cheapest_price
from toolkit.runner.plan import parse_warmup
from toolkit.runner.preflight.result import VariantCheck
from toolkit.workbook.model import WorkbookData

#: How the estimate names the variants without a gpu_slug (a CPU rehearsal): never priced.
UNPRICED = "no gpu_slug"


@dataclass(frozen=True)
class Estimate:
    """The campaign's estimated hours and cost, line by line as printed."""

    lines: list[str]
    hours: Decimal | None
    #: The pre-flight's checks the estimate was made from.
    checks: Sequence[VariantCheck] = ()


def estimate(
    data: WorkbookData,
    checks: Sequence[VariantCheck],
    attempts: Mapping[str, int],
    corpus_items: int,
) -> Estimate:
    """Hours of attempts from each variant's one batch (load + warm-up + corpus per attempt,
    ``attempts[variant]`` times), and per GPU slug what the linked rental's lots cost held
    those hours: the cheapest of the Tariffs flat plans covering them and the on-demand
    metered prices billed for them, ranked as the Settlement ranks them. Rough: one batch
    is not a measurement."""
    form = data.forms["Protocol"]
    warm = parse_warmup(form.get("warmup_rule"))
    variants = {str(v["variant_id"]): v for v in data.tables["Variants"]}
    rentals = {str(r.get("rental_id")): r for r in data.tables["Rentals"]}
    lines = ["estimate (rough: one batch each after its load, not a measurement):"]
    by_slug: dict[str, list[Decimal | None]] = {}
    total: Decimal | None = Decimal(0)
    for c in checks:
        count = attempts.get(c.variant_id, 0)
        slug = str(variants[c.variant_id].get("gpu_slug") or "") or UNPRICED
        if c.item_s is None or c.load_s is None:  # both or neither: not loaded here
            lines.append(
                f"  {c.variant_id}: {count} attempt(s), not timed here "
                f"({c.not_loaded}): run `iteralab check` on the rented machine"
            )
            by_slug.setdefault(slug, []).append(None)
            total = None
            continue
        items = corpus_items + warm.items * warm.passes
        per = Decimal(repr(round(c.load_s + c.item_s * items, 3)))
        hours = per * count / 3600
        lines.append(f"  {c.variant_id}: {count} attempt(s) x ~{per:.1f} s = {hours:.3f} h")
        by_slug.setdefault(slug, []).append(hours)
        total = None if total is None else total + hours
    lines.append(
        "  campaign: "
        + (
            f"~{total:.3f} h of attempts, one after another"
            if total is not None
            else "hours not known until every variant is timed on its own machine"
        )
    )
    try:
        catalog = catalog_from_workbook(data)
    except ToolkitError as exc:
        lines.append(f"  cost: not estimated: {exc.message}")
        return Estimate(lines, total)
    for slug, parts in by_slug.items():
        if slug == UNPRICED:
            lines.append(f"  {slug}: no rental price applies (nothing to look up in Tariffs)")
            continue
        if any(p is None for p in parts):
            lines.append(f"  {slug}: cost not estimated (a variant on it is not timed here)")
            continue
        hours = sum((p for p in parts if p is not None), Decimal(0))
        lots, whose = _lots(slug, variants, rentals)
        price, why = cheapest_price(catalog, slug, hours, lots)
        if price is None:
            lines.append(f"  {slug}: no cost: {why}")
            continue
        plan = price.plan
        rate = f"{plan.price_text} an hour" if isinstance(plan, Meter) else plan.price_text
        example = f" ({layout.EXAMPLE} price, not a quote)" if layout.EXAMPLE in plan.source else ""
        lines.append(
            f"  {slug}: {hours:.3f} h -> {price.text} ({why}), {lots} lot(s) ({whose}) x "
            f"{rate} = {money(price.cost, plan.currency)}{example}"
        )
    return Estimate(lines, total)


def _lots(
    slug: str, variants: Mapping[str, Mapping[str, Any]], rentals: Mapping[str, Mapping[str, Any]]
) -> tuple[int, str]:
    """The lots of the rental the variants on ``slug`` name, and whose they are (1 lot when
    no Rentals row is linked)."""
    linked = [
        rentals[r]
        for v in variants.values()
        if str(v.get("gpu_slug")) == slug and (r := str(v.get("rental_id"))) in rentals
    ]
    if not linked:
        return 1, "1 lot assumed: no Rentals row linked"
    return int(linked[0].get("lots") or 1), f"rental {linked[0].get('rental_id')}"
