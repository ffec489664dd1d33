"""The report's fast/slow budget range (the money comparison against the measurement noise)
prices each configuration as the Settlement does: the cheapest of its GPU's flat plans
covering each lot's share of the expected corpora (and the Schedule's span) and its
on-demand metered prices billed for it in whole billing steps. A metered budget moves with
the runs' spread; a flat plan does not; the seed's flat example stays 110.00 USD."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.support.report_campaign import campaign, quoted_meter
from toolkit.report.refresh import Refreshed, refresh

#: A deadline far enough for one lot to do 30,000 corpora (the Settlement then keeps 1 lot).
LATE = "2026-12-31T09:00+01:00"


def _refreshed(tmp_path: Path, expected: int, step: int | None, late: bool = True) -> Refreshed:
    """The report campaign (a 96 h Schedule) for ``expected`` corpora, with a quoted on-demand
    RTX 4090 price of 0.75 an hour billed per ``step`` seconds (None: the shipped catalog
    alone, whose metered RTX 4090 figure is an EXAMPLE); ``late``: the deadline :data:`LATE`
    instead of the campaign's own."""
    data: Any = (
        campaign(expected_outputs=expected, deadline=LATE)
        if late
        else campaign(expected_outputs=expected)
    )
    if step is not None:
        data.append("Tariffs", quoted_meter(billing_seconds=step))
    return refresh(data, tmp_path)


def test_the_seed_flat_example_keeps_its_7_day_plan_at_both_ends(tmp_path: Path) -> None:
    projection = _refreshed(tmp_path, 20, None, late=False).decision.projections["b8-fp32"]
    assert projection is not None and projection.at_fastest is not None
    assert projection.at_fastest.text == "7-day plan"
    assert projection.budget_range() == (Decimal("110.00"), Decimal("110.00"))


def test_a_metered_price_is_billed_for_the_span_when_the_work_is_shorter(tmp_path: Path) -> None:
    # 20 corpora take 0.08 h; each lot is held the 96 h span: 96 h x 0.75 = 72.00, below the
    # 7-day plan's 110.00 (the Settlement's decision row says the same 72.00).
    projection = _refreshed(tmp_path, 20, 1).decision.projections["b8-fp32"]
    assert projection is not None and projection.at_slowest is not None
    assert projection.at_slowest.text == "metered on-demand price per second, 96 h billed per lot"
    assert projection.budget_range() == (Decimal("72.00"), Decimal("72.00"))


def test_a_metered_budget_moves_with_the_runs_spread(tmp_path: Path) -> None:
    # 30,000 corpora at b8-fp32's fastest run (14.9 s each) take 124.17 h, at its slowest
    # (15.8 s) 131.67 h: past the 96 h span, within the 7-day plan (110.00) yet cheaper
    # metered: 447,000 s x 0.75 / 3600 = 93.125 -> 93.13; 474,000 s -> 98.75.
    result = _refreshed(tmp_path, 30_000, 1)
    assert result.decision.projections["b8-fp32"].budget_range() == (  # type: ignore[union-attr]
        Decimal("93.13"),
        Decimal("98.75"),
    )


def test_a_meter_billing_per_60_s_rounds_each_lot_up_to_a_whole_minute(tmp_path: Path) -> None:
    # 30,001 corpora at 14.9 s = 447,014.9 s: 447,015 s per second (93.13), 447,060 s per
    # started minute (0.75 x 124.1833 h = 93.1375 -> 93.14).
    per_second = _refreshed(tmp_path / "s", 30_001, 1).decision.projections["b8-fp32"]
    per_minute = _refreshed(tmp_path / "m", 30_001, 60).decision.projections["b8-fp32"]
    assert per_second is not None and per_second.at_fastest is not None
    assert per_minute is not None and per_minute.at_fastest is not None
    assert (per_second.at_fastest.billed_seconds, per_second.at_fastest.cost) == (
        447_015,
        Decimal("93.13"),
    )
    assert (per_minute.at_fastest.billed_seconds, per_minute.at_fastest.cost) == (
        447_060,
        Decimal("93.14"),
    )


def test_the_money_comparison_reads_the_metered_range(tmp_path: Path) -> None:
    # b1-fp32's 30,000 corpora take 340 h to 345.83 h (255.00 to 259.38 metered), above
    # b8-fp32's 93.13 to 98.75: apart even at the least favourable runs.
    result = _refreshed(tmp_path, 30_000, 1)
    said = {(m.first, m.second): m for m in result.decision.money}
    assert said[("b1-fp32", "b8-fp32")].sentence() == (
        "b1-fp32 vs b8-fp32: differ beyond the measurement noise (b8-fp32 cheaper than "
        "b1-fp32 by at least 156.25 USD for the expected outputs; even at the least "
        "favourable runs)"
    )
