"""`iteralab check`'s cost estimate prices the estimated hours as the Settlement ranks prices:
the cheapest of the GPU's flat plans covering them and its on-demand metered prices billed
for them (a started billing step is due), saying which it took; a shipped EXAMPLE metered
figure never outranks the catalog's flat plan (the seed's 7-day plan, 110.00 USD).

The checks are the pre-flight's results as its worker sends them back (no model loads here):
one batch of 10 items in 0.5 s after a 10 s load."""

from __future__ import annotations

from typing import Any

from tests.support.report_campaign import campaign, quoted_meter
from toolkit.runner.preflight.estimate import estimate
from toolkit.runner.preflight.result import VariantCheck

#: b8-fp32 of the report campaign (RTX 4090, rental r-4090 of 1 lot): 0.05 s an item.
CHECK = VariantCheck("b8-fp32", "torch", load_s=10.0, batch_s=0.5, batch_items=10)


def _cost_line(attempts: int, corpus_items: int, *meters: dict[str, Any]) -> str:
    data = campaign()
    for row in meters:
        data.append("Tariffs", row)
    lines = estimate(data, [CHECK], {"b8-fp32": attempts}, corpus_items).lines
    (line,) = [x for x in lines if x.startswith("  rtx-4090: ")]
    return line


def test_a_short_campaign_is_priced_at_the_quoted_metered_price_to_the_second() -> None:
    # 5 attempts x (10 s + 0.05 s x (1,000 + 16 warm-up items)) = 5 x 60.8 s = 304 s.
    line = _cost_line(5, 1000, quoted_meter(billing_seconds=1))
    assert line == (
        "  rtx-4090: 0.084 h -> metered on-demand price per second, 0.08 h billed per lot "
        "(cheapest rtx-4090 price for the 0.08 h, flat plans and on-demand metered prices "
        "ranked together), 1 lot(s) (rental r-4090) x 0.75 USD an hour = 0.06 USD"
    )


def test_a_meter_billing_per_started_hour_charges_the_whole_hour() -> None:
    line = _cost_line(5, 1000, quoted_meter(billing_seconds=3600))
    assert "metered on-demand price per started hour, 1 h billed per lot" in line
    assert line.endswith("x 0.75 USD an hour = 0.75 USD")


def test_a_campaign_longer_than_the_metered_break_even_keeps_the_7_day_plan() -> None:
    # 0.05 s x 100,016 items + 10 s = 5,010.8 s an attempt, x 100 = 139.19 h: metered
    # 104.39 USD at 0.75 an hour; at 0.80 an hour 111.35, above the 7-day plan's 110.00.
    assert "metered on-demand price per second" in _cost_line(
        100, 100_000, quoted_meter(billing_seconds=1)
    )
    line = _cost_line(100, 100_000, quoted_meter(0.80))
    assert line.startswith("  rtx-4090: 139.189 h -> 7-day plan (cheapest rtx-4090 price ")
    assert line.endswith("1 lot(s) (rental r-4090) x 110.00 USD = 110.00 USD")


def test_the_shipped_example_metered_figure_never_outranks_the_7_day_plan() -> None:
    line = _cost_line(5, 1000)  # the shipped catalog: an EXAMPLE 0.69 an hour for rtx-4090
    assert "-> 7-day plan (" in line
    assert line.endswith("x 110.00 USD = 110.00 USD")


def test_an_example_metered_figure_prices_a_card_without_a_flat_plan_said_as_such() -> None:
    # h100-sxm has no flat plan in the shipped catalog: its EXAMPLE 2.99 an hour, per second.
    data = campaign()
    data.tables["Variants"][0].update(gpu_slug="h100-sxm", rental_id=None)
    check = VariantCheck(
        str(data.tables["Variants"][0]["variant_id"]), "torch", 10.0, 0.5, batch_items=10
    )
    lines = estimate(data, [check], {check.variant_id: 5}, 1000).lines
    (line,) = [x for x in lines if x.startswith("  h100-sxm: ")]
    assert line == (
        "  h100-sxm: 0.084 h -> metered on-demand price per second, 0.08 h billed per lot "
        "(cheapest h100-sxm price for the 0.08 h, flat plans and on-demand metered prices "
        "ranked together), 1 lot(s) (1 lot assumed: no Rentals row linked) x 2.99 USD an "
        "hour = 0.25 USD (EXAMPLE price, not a quote)"
    )
