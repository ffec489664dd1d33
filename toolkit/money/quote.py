"""What `iteralab cost` answers, as data: the plans of a catalog snapshot, or one plan priced
for the lots asked with its cost per accepted result, and the plans covering a schedule.

The request was checked by the rules' own ``report`` first (same errors as the script);
the arithmetic is theirs (``tariffs/calcul_forfaits.py``), done once here for the JSON
document.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from toolkit.money.tariffs import rules

#: Why a quote has no cost per accepted result when none was asked.
NO_ACCEPTED = "no --accepted-results given: none invented"


@dataclass(frozen=True, kw_only=True)
class Priced:
    """One plan priced for ``lots`` lots: the flat total, and per accepted result."""

    plan: rules.Plan
    lots: int
    total: Decimal
    accepted: int | None
    #: To the cent, as the calculator prints it; None with its reason.
    per_accepted: Decimal | None
    per_accepted_reason: str | None


@dataclass(frozen=True, kw_only=True)
class Quote:
    """A listing of ``snapshot``'s ``plans``, or one ``priced`` plan; with a schedule, its
    hours and each plan length's coverage of them."""

    snapshot: str
    plans: tuple[rules.Plan, ...] = ()
    priced: Priced | None = None
    schedule_hours: Decimal | None = None
    coverage: tuple[rules.Coverage, ...] = ()


def quote(catalog: rules.Catalog, request: rules.Request) -> Quote:
    """The answer to ``request`` (a checked ``rules.Request``) from ``catalog``."""
    hours, _ = rules.schedule_hours(request)
    covered = () if hours is None else tuple(rules.coverage(hours))
    if request.list_catalog or request.gpu is None or request.days is None:
        day = catalog.snapshot(request.catalog_date)
        listed = tuple(p for p in catalog.plans if p.catalog_date == day)
        return Quote(snapshot=day, plans=listed, schedule_hours=hours, coverage=covered)
    plan = catalog.plan(request.gpu, int(request.days), request.catalog_date)
    return Quote(
        snapshot=plan.catalog_date,
        priced=_priced(plan, request),
        schedule_hours=hours,
        coverage=covered,
    )


def _priced(plan: rules.Plan, request: rules.Request) -> Priced:
    lots = int(request.lots)
    total = rules.budget(plan, lots)
    accepted = None if request.accepted is None else int(request.accepted)
    per = None if accepted is None else rules.cost_per_accepted(total, accepted)
    return Priced(
        plan=plan,
        lots=lots,
        total=total,
        accepted=accepted,
        per_accepted=None if per is None else rules.to_cent(per),
        per_accepted_reason=(
            None if per is not None else NO_ACCEPTED if accepted is None else rules.UNDEFINED
        ),
    )
