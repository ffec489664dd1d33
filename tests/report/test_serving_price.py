"""A serving configuration's cost per million output tokens rests on the price the Settlement
uses for the card: a metered price as it is, a flat plan's price per lot spread over the
plan's hours; the memo names which, and an EXAMPLE price gives an EXAMPLE cost."""

from __future__ import annotations

from decimal import Decimal

from toolkit.money.tariffs import Meter, Plan
from toolkit.report import serving

CARD = {"catalog_date": "2026-12-05", "gpu_slug": "l40s", "gpu_name": "L40S", "cards_per_lot": 1}
METER = Meter(
    **CARD,
    source="EXAMPLE figure typed for a test",
    market="on-demand",
    price_per_hour=Decimal("1.49"),
    billing_seconds=1,
)
PLAN = Plan(**CARD, source="catalog of 2026-12-05", plan_days=7, price_per_lot_usd=Decimal("168"))
ANSWER = {"r4": serving.Answer("http://10.0.0.5:8000", "l40s", 4.0, "r4")}
#: The rate's successes held the endpoint 1,800 s and served 90,000 tokens within target.
FIGURES = {"r4": serving.Figures(4.0, True, 90_000, 1800.0)}


def test_a_metered_price_is_its_price_per_hour() -> None:
    price = serving.hourly_price(METER)
    assert price == serving.HourlyPrice(
        Decimal("1.49"), "USD", "metered on-demand 1.49 USD/h", METER.source
    )


def test_a_flat_plan_is_its_price_per_lot_over_the_plan_s_hours() -> None:
    price = serving.hourly_price(PLAN)
    assert price is not None and price.per_hour == Decimal(1)
    assert price.text == "7-day plan 168.00 USD per lot over its 168 h"
    assert serving.hourly_price(None) is None


def test_the_memo_names_the_decision_s_price_and_marks_an_example() -> None:
    (metered,) = serving.memo_sentences(ANSWER, FIGURES, {"r4": serving.hourly_price(METER)})
    # 1.49 USD/h x 0.5 h / 90,000 tokens x 1,000,000
    assert metered.endswith(
        "cost per million output tokens at it: 8.2778 USD EXAMPLE (l40s at its price for "
        "the Schedule's span: metered on-demand 1.49 USD/h, 1.4900 USD/h x 0.5000 h / tokens within target)"
    )
    (flat,) = serving.memo_sentences(ANSWER, FIGURES, {"r4": serving.hourly_price(PLAN)})
    assert flat.endswith(
        "cost per million output tokens at it: 5.5556 USD (l40s at its price for the "
        "Schedule's span: 7-day plan 168.00 USD per lot over its 168 h, 1.0000 USD/h x 0.5000 h / tokens "
        "within target)"
    )


def test_without_a_priced_plan_the_memo_says_why_there_is_no_cost() -> None:
    (sentence,) = serving.memo_sentences(ANSWER, FIGURES, {"r4": None})
    assert sentence.endswith(
        "; no cost per million output tokens: no price of l40s covers the Schedule's span "
        "(a Schedule and a Tariffs row for the card are needed)"
    )
