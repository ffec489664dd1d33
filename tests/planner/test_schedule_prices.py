"""`iteralab gpus --hours H`: each card's lot priced for the schedule, flat plans and metered
prices ranked together by what the schedule costs: a metered price is the cheaper for short
use, a flat plan for long use; spot is taken only for work that tolerates an interruption."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.planner import choice, gpus, offers
from toolkit.planner.need import Need

HEADER = (
    "catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source,market,"
    "price_per_hour,billing_seconds\n"
)
CATALOG = f"""{HEADER}2026-09-24,rtx-4090,RTX 4090,1,3,60.00,quote,,,
2026-09-24,rtx-4090,RTX 4090,1,7,110.00,quote,,,
2026-12-05,rtx-4090,RTX 4090,1,,,quote,on-demand,0.69,1
2026-12-05,rtx-4090,RTX 4090,1,,,quote,spot,0.35,3600
"""


def _catalog(tmp_path: Path) -> Path:
    path = tmp_path / "tarifs-forfaits.csv"
    path.write_text(CATALOG, encoding="utf-8")
    return path


def _taken(tmp_path: Path, hours: str, usage: str | None = None) -> choice.Candidate:
    found, reason = offers.schedule_offers(_catalog(tmp_path), Decimal(hours))
    answer = choice.choose(
        gpus.load_catalog(),
        found,
        need=Need.from_gb(Decimal(20)),
        price_reason=reason,
        usage=usage,
        hours=Decimal(hours),
    )
    return next(c for c in answer.candidates if c.gpu.slug == "rtx-4090")


@pytest.mark.parametrize(
    ("hours", "billing", "budget"),
    [
        ("24", "metered", Decimal("16.56")),  # 0.69 x 24 h, below the 3-day plan's 60.00
        ("100", "metered", Decimal("69.00")),  # the 7-day plan (110.00) covers it: dearer
        ("168", "flat", Decimal("110.00")),  # 0.69 x 168 h = 115.92: the week's plan wins
        ("800", "metered", Decimal("552.00")),  # beyond the longest plan: no flat offer
    ],
)
def test_the_cheaper_of_flat_and_metered_for_the_schedule_is_taken(
    tmp_path: Path, hours: str, billing: str, budget: Decimal
) -> None:
    taken = _taken(tmp_path, hours)
    assert taken.offer is not None
    assert ("metered" if taken.offer.meter else "flat", taken.budget_usd) == (billing, budget)


def test_a_short_schedule_is_not_priced_as_a_whole_flat_plan(tmp_path: Path) -> None:
    """At 24 h the cheapest covering flat plan is the 3-day one, 60.00 whatever the use (the
    7-day plan is no offer of its own); the metered lot costs 16.56 and is taken."""
    found, _ = offers.schedule_offers(_catalog(tmp_path), Decimal(24))
    priced = sorted(
        (o.meter.market if o.meter else f"{o.plan_days}-day", o.price_per_lot_usd)
        for o in found["rtx-4090"].all
    )
    assert priced == [
        ("3-day", Decimal("60.00")),
        ("on-demand", Decimal("16.56")),
        ("spot", Decimal("8.40")),
    ]
    taken = _taken(tmp_path, "24")
    assert taken.offer is not None
    assert taken.offer.billing_unit == (
        "metered, 0.69 USD an hour per lot of 1 card, billed per second: the 24 h schedule"
    )


def test_spot_is_left_aside_unless_the_usage_tolerates_an_interruption(tmp_path: Path) -> None:
    unstated = _taken(tmp_path, "24")
    assert unstated.offer is not None and unstated.offer.availability == "on-demand"
    assert any("a cheaper spot lot" in w and "8.40 USD" in w for w in unstated.warnings)
    batch = _taken(tmp_path, "24", usage="batch")
    assert batch.offer is not None and batch.offer.availability == "spot"
    assert batch.budget_usd == Decimal("8.40")  # 24 started hours at 0.35


def test_gpus_hours_prints_and_documents_the_schedule_s_prices(tmp_path: Path) -> None:
    path = str(_catalog(tmp_path))
    args = ["gpus", "--need-gb", "20", "--hours", "24", "--tariffs", path]
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "lot for 24 h" in text.output.splitlines()[2]
    assert (
        "  rtx-4090: 16.56 USD, metered, 0.69 USD an hour per lot of 1 card, billed per "
        "second: the 24 h schedule; on-demand; storage and egress not in the catalog"
    ) in text.output.splitlines()
    document = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert (document["plan_days"], document["schedule_hours"]) == (None, "24")
    card = next(g for g in document["gpus"] if g["slug"] == "rtx-4090")
    assert {k: card[k] for k in ("billing", "price_per_hour_usd", "budget_usd")} == {
        "billing": "metered",
        "price_per_hour_usd": "0.69",
        "budget_usd": "16.56",
    }
    assert card["price_per_lot_usd"] is None and card["billing_seconds"] == 1


def test_without_hours_the_flat_plan_of_plan_days_is_priced_as_before(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["gpus", "--need-gb", "20", "--tariffs", str(_catalog(tmp_path)), "--json"]
    )
    card = next(g for g in json.loads(result.output)["gpus"] if g["slug"] == "rtx-4090")
    assert (card["billing"], card["plan_days"], card["budget_usd"]) == ("flat", 7, "110.00")


@pytest.mark.parametrize("hours", ["0", "-3", "a day", "nan"])
def test_a_schedule_that_is_not_a_positive_number_of_hours_is_refused(hours: str) -> None:
    result = CliRunner().invoke(cli, ["gpus", "--need-gb", "20", "--hours", hours])
    assert result.exit_code == 2
    assert f"--hours {hours!r} is not a number of hours > 0" in result.output
