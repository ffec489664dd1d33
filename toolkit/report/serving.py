"""The report's serving figures (Protocol task serving): targets met, the highest rate, and
the cost per million output tokens at it.

Per variant, over its successes (the Summary's rule: completed, every measured request
completed, a measured_s, not excluded): ``targets_met`` is yes when each success met every
latency target, ``good_output_tokens`` the output tokens of the requests that met them all,
summed. Per endpoint and card (the variant's model_path without its model name, and its
gpu_slug), the highest ``request_rate`` whose variant met its targets is the endpoint's
answer to "how much load does it carry within the targets"; every variant of the group
shows it.

Cost per million output tokens at that rate: the price per hour of one lot of the card at the
Settlement's price for it (chosen as for a batch job, the cheapest cover of the Schedule's
span: a flat plan spread over the plan's hours, or a metered price) x the hours the rate's
successes held the endpoint (their measured_s) / the tokens served within target x
1,000,000. An EXAMPLE price gives an EXAMPLE cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.errors import ProtocolError
from toolkit.evidence import scenario
from toolkit.money.tariffs import Meter, Plan
from toolkit.workbook.model import WorkbookData

#: The Summary's serving columns (each with a reason column).
SUMMARY_COLUMNS = ("targets_met", "good_output_tokens", "highest_rate")
#: Why a serving cell is empty under another task.
NOT_SERVING = "not a serving campaign: the Protocol's task is not serving"
NO_SUCCESS = "no successful attempt (completed, every request completed, not excluded)"
NO_RATE = "no rate of this endpoint and card met every latency target"


def is_serving(data: WorkbookData) -> bool:
    """Whether the workbook's Protocol task is serving."""
    return scenario.is_serving(data.forms["Protocol"])


def scenario_text(protocol: Mapping[str, Any]) -> str | None:
    """A serving Protocol's load in words (arrival, route, requests, warm-up, targets), or
    its first wrong field; None under another task."""
    form = dict(protocol)
    if not scenario.is_serving(form):
        return None
    try:
        return scenario.read_scenario(form).text()
    except ProtocolError as exc:
        return f"not readable: {exc.message}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class Figures:
    """One variant's serving figures over its successes."""

    request_rate: float | None
    targets_met: bool | None
    good_output_tokens: int | None
    #: The successes' measured seconds, summed: how long they held the endpoint.
    measured_s: float
    reasons: Mapping[str, str] = field(default_factory=dict)
    #: Successes whose client sent late (client_lag_p99_ms over the limit): "a002-r8 31 ms".
    lagged: tuple[str, ...] = ()


def of_variant(
    successes: Sequence[Mapping[str, Any]], declared: Mapping[str, Any] | None
) -> Figures:
    """The figures from a variant's successful Attempts rows and its Variants row."""
    rate = _number((declared or {}).get("request_rate"))
    if not successes:
        return Figures(rate, None, None, 0.0, {c: NO_SUCCESS for c in SUMMARY_COLUMNS})
    met = all(str(a.get("targets_met") or "").lower() == layout.YES for a in successes)
    tokens = [int(v) for a in successes if (v := _number(a.get("good_output_tokens"))) is not None]
    seconds = sum(_number(a.get("measured_s")) or 0.0 for a in successes)
    lagged = tuple(
        f"{a.get('attempt_id')} {lag:.0f} ms"
        for a in successes
        if (lag := _number(a.get("client_lag_p99_ms"))) is not None and lag > scenario.LAG_LIMIT_MS
    )
    return Figures(rate, met, sum(tokens), seconds, lagged=lagged)


def lagged_note(figures: Figures) -> str:
    """The successes whose client lagged: the server saw a slower arrival than declared, as
    a window taken under load is named."""
    return (
        f"CLIENT LAGGED: {len(figures.lagged)} success(es) sent their requests late "
        f"(client_lag_p99_ms over {scenario.LAG_LIMIT_MS:g} ms: {', '.join(figures.lagged)}): "
        "the endpoint saw a slower arrival than request_rate; rerun the client on a quieter "
        "or larger machine"
    )


def group_of(variant: Mapping[str, Any]) -> tuple[str, str]:
    """(endpoint, card): the variant's model_path without its served model name, its
    gpu_slug (blank: "no card declared")."""
    endpoint = str(variant.get("model_path") or "").partition("#")[0].rstrip("/")
    return endpoint, str(variant.get("gpu_slug") or "no card declared")


@dataclass(frozen=True)
class Answer:
    """An endpoint and card's highest rate meeting every target, and the variant at it."""

    endpoint: str
    card: str
    rate: float | None
    variant_id: str | None


def highest_rates(
    figures: Mapping[str, Figures], variants: Sequence[Mapping[str, Any]]
) -> dict[str, Answer]:
    """Per variant id, the answer of its endpoint and card."""
    groups: dict[tuple[str, str], list[str]] = {}
    for v in variants:
        groups.setdefault(group_of(v), []).append(str(v.get("variant_id")))
    out: dict[str, Answer] = {}
    for (endpoint, card), ids in groups.items():
        met = [
            (f.request_rate, vid)
            for vid in ids
            if (f := figures.get(vid)) is not None and f.targets_met and f.request_rate is not None
        ]
        rate, best = max(met) if met else (None, None)
        for vid in ids:
            out[vid] = Answer(endpoint, card, rate, best)
    return out


def cost_per_million_tokens(
    price_per_hour: Decimal, measured_s: float, tokens: int | None
) -> Decimal | None:
    """price per hour x hours / tokens x 1,000,000; None without a token served in target."""
    if not tokens or measured_s <= 0:
        return None
    hours = Decimal(str(measured_s)) / Decimal(3600)
    return price_per_hour * hours / Decimal(tokens) * Decimal(1_000_000)


@dataclass(frozen=True)
class HourlyPrice:
    """What one lot of a card costs an hour at the Settlement's price for it: a metered
    price as it is, a flat plan's price spread over the plan's hours (the endpoint serving
    at its rate every hour of the plan)."""

    per_hour: Decimal
    currency: str
    #: The price in words: ``metered on-demand 0.69 USD/h``, ``7-day plan 110.00 USD per lot
    #: over its 168 h``.
    text: str
    source: str


def hourly_price(plan: Plan | Meter | None) -> HourlyPrice | None:
    """The hourly price of one lot under ``plan`` (a Costing's serving price, flat or
    metered); None without one."""
    if plan is None:
        return None
    if isinstance(plan, Meter):
        text = f"metered {plan.market} {plan.price_text}/h"
        return HourlyPrice(plan.price_per_hour, plan.currency, text, plan.source)
    text = f"{plan.plan_days}-day plan {plan.price_text} per lot over its {plan.hours} h"
    return HourlyPrice(plan.price_per_lot_usd / plan.hours, plan.currency, text, plan.source)


def memo_sentences(
    answers: Mapping[str, Answer],
    figures: Mapping[str, Figures],
    prices: Mapping[str, HourlyPrice | None],
) -> list[str]:
    """Per endpoint and card: the highest rate meeting every target, and the cost per
    million output tokens at it (at ``prices``, the hourly price the Settlement uses for each
    variant's card), or why there is none."""
    sentences = []
    for answer in {(a.endpoint, a.card): a for a in answers.values()}.values():
        where = f"{answer.endpoint} on {answer.card}"
        if answer.rate is None or answer.variant_id is None:
            sentences.append(f"serving {where}: {NO_RATE}")
            continue
        at = figures[answer.variant_id]
        head = (
            f"serving {where}: highest rate meeting every latency target {answer.rate:g} "
            f"(variant {answer.variant_id}, {at.good_output_tokens} output tokens within target)"
        )
        price = prices.get(answer.variant_id)
        if price is None:
            sentences.append(
                f"{head}; no cost per million output tokens: no price of {answer.card} "
                "covers the Schedule's span (a Schedule and a Tariffs row for the card are "
                "needed)"
            )
            continue
        cost = cost_per_million_tokens(price.per_hour, at.measured_s, at.good_output_tokens)
        example = f" {layout.EXAMPLE}" if layout.EXAMPLE in price.source else ""
        shown = "undefined (no token within target)" if cost is None else f"{cost:.4f}"
        sentences.append(
            f"{head}; cost per million output tokens at it: {shown} {price.currency}{example} "
            f"({answer.card} at its price for the Schedule's span: {price.text}, "
            f"{price.per_hour:.4f} {price.currency}/h x {at.measured_s / 3600:.4f} h / tokens "
            "within target)"
        )
    return sentences
