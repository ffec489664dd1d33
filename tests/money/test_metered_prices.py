"""Metered prices: GPUs sold by the hour or the second, on demand or spot (seed R34).

A metered catalog row prices one lot per hour and bills in steps of seconds; the flat 3-,
7- and 30-day rules never read it, so the seed's flat examples stay exact (tests/money/test_tariffs.py
runs them on the same shipped file). The Settlement prices a metered rental to the second.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.recalc import needs_soffice, recalculate, sheet_rows
from tests.support.report_campaign import METERED_RENTAL, campaign
from toolkit.money import tariffs
from toolkit.money.tariffs import rules
from toolkit.report.refresh import refresh
from toolkit.workbook import store
from toolkit.workbook.model import Formula

HEADER = (
    "catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source,"
    "market,price_per_hour,billing_seconds\n"
)
FLAT = "2026-09-24,rtx-4090,RTX 4090,1,7,110.00,quote,,,\n"
#: A started hour rounds up to a whole hour; a second rounds up to a second.
PER_SECOND = "2026-12-05,h100-sxm,H100 SXM,1,,,quote,on-demand,2.99,1\n"
HOURLY = "2026-12-05,h100-sxm,H100 SXM,1,,,quote,spot,1.75,3600\n"


def _catalog(tmp_path: Path, *rows: str) -> Any:
    path = tmp_path / "tarifs-forfaits.csv"
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return rules.load_catalog(path, "tarifs-forfaits.csv")


def test_a_metered_charge_bills_started_steps_and_rounds_to_the_cent(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, FLAT, PER_SECOND, HOURLY)
    on_demand, spot = catalog.metered("h100-sxm")
    # 5 h 30 min 7 s to the second: 2.99 x 19,807 / 3,600 = 16.4506... per lot.
    assert on_demand.charge(19_807, 2) == Decimal("32.90")
    assert on_demand.billed_seconds(19_807) == 19_807
    # By the started hour: 19,807 s bill 6 hours.
    assert spot.billed_seconds(19_807) == 6 * 3600
    assert spot.charge(19_807, 2) == Decimal("21.00")
    # The flat plan is read as before, untouched by the metered rows.
    assert [(p.gpu_slug, p.plan_days, p.price_per_lot_usd) for p in catalog.plans] == [
        ("rtx-4090", 7, Decimal("110.00"))
    ]


def test_the_shipped_catalog_prices_every_card_the_planner_knows_by_the_hour() -> None:
    """Metered rows for each card of gpus.csv, dated, every one labelled EXAMPLE (no quote)."""
    from toolkit.planner import gpus

    catalog = tariffs.load_catalog()
    assert {m.gpu_slug for m in catalog.meters} == {g.slug for g in gpus.load_catalog()}
    assert all(m.catalog_date == "2026-12-05" for m in catalog.meters)
    assert all("EXAMPLE" in m.source for m in catalog.meters)
    assert {m.market for m in catalog.meters} == {"on-demand", "spot"}
    assert catalog.dates() == ["2026-09-24"]  # the flat snapshot the seed's examples read


def test_the_calculator_prices_a_schedule_by_the_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tarifs-forfaits.csv"
    path.write_text(HEADER + FLAT + PER_SECOND + HOURLY, encoding="utf-8")
    code = rules.main(
        [
            "--catalog",
            str(path),
            "--metered",
            "--gpu",
            "h100-sxm",
            "--start",
            "2026-12-07T09:00+01:00",
            "--end",
            "2026-12-07T14:30:07+01:00",
            "--lots",
            "2",
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[1] == f"catalog: {path} (metered prices of 2026-12-05; quote)"
    assert out[3].split() == (
        "on-demand 2.99 USD (1 card) per second 5.5 h (19,807 s) 32.90 USD".split()
    )
    assert out[4].split() == (
        "spot 1.75 USD (1 card) per started hour 6 h (21,600 s) 21.00 USD".split()
    )


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            "2026-12-05,h100-sxm,H100 SXM,1,7,,quote,on-demand,2.99,1\n",
            "column 5 (plan_days): a row with a price_per_hour is a metered price",
        ),
        (
            "2026-12-05,h100-sxm,H100 SXM,1,,,quote,reserved,2.99,1\n",
            "column 8 (market): 'reserved' is not on-demand or spot",
        ),
        (
            "2026-12-05,h100-sxm,H100 SXM,1,,,quote,spot,2.99,86400\n",
            "column 10 (billing_seconds): 86400 s is longer than an hour",
        ),
        (
            "2026-12-05,h100-sxm,H100 SXM,1,,,quote,spot,0,60\n",
            "column 9 (price_per_hour): '0' is not a price in USD",
        ),
        (PER_SECOND, "a second on-demand price per second for h100-sxm"),
    ],
)
def test_a_bad_metered_row_is_refused_with_its_line_and_column(
    tmp_path: Path, row: str, expected: str
) -> None:
    with pytest.raises(rules.TariffError) as caught:
        _catalog(tmp_path, PER_SECOND if "second on-demand" in expected else FLAT, row)
    assert expected in caught.value.message
    assert "tarifs-forfaits.csv, line 3" in caught.value.message


def _metered_campaign() -> Any:
    data = campaign()
    rental = dict(METERED_RENTAL)
    rental.update(
        gpu_slug="h100-sxm",
        billing="per-second",
        market="on-demand",
        provider=None,
        start="2026-12-07T09:00+01:00",
        end="2026-12-07T14:30:07+01:00",
        lots=2,
    )
    data.append("Rentals", rental)
    return data


def test_the_settlement_prices_a_metered_rental_to_the_second(tmp_path: Path) -> None:
    data = _metered_campaign()
    refresh(data, tmp_path)
    row = next(r for r in data.tables["Settlement"] if r["item"] == "r-h100")
    assert isinstance(row["amount"], Formula) and row["amount"].value == Decimal("32.90")
    assert row["billed_seconds"] == 19_807
    assert row["price_per_hour"].value == Decimal("2.99")
    assert "Tariffs: on-demand price of 2026-12-05" in row["grounds"]
    assert "EXAMPLE" in row["grounds"]  # the shipped metered rows are example figures


def test_an_hourly_rental_without_its_tariffs_row_stays_unpriced_and_says_why(
    tmp_path: Path,
) -> None:
    data = _metered_campaign()
    data.tables["Rentals"][-1].update(billing="hourly", gpu_slug="h200")  # h200: no spot row
    data.tables["Rentals"][-1].update(market="spot")
    refresh(data, tmp_path)
    row = next(r for r in data.tables["Settlement"] if r["item"] == "r-h100")
    assert row["amount"] is None
    assert "no metered Tariffs price of h200 (spot, hourly, lot of 1, USD)" in row["grounds"]


@needs_soffice
@pytest.mark.libreoffice
def test_libreoffice_computes_the_metered_amount_to_the_python_cent(tmp_path: Path) -> None:
    data = _metered_campaign()
    refresh(data, tmp_path)
    path = tmp_path / "campaign.xlsx"
    store.save(data, path)
    rows = sheet_rows(recalculate(path, tmp_path / "lo"), "Settlement")
    office = next(r for r in rows if r["item"] == "r-h100")
    assert (office["price_per_hour"], office["billed_seconds"]) == (2.99, 19_807)
    assert Decimal(str(office["amount"])) == Decimal("32.9")


def test_the_planner_lists_the_metered_prices_of_the_cards_that_hold_the_need() -> None:
    """`iteralab gpus` shows each fitting card's hourly prices; spot is judged by the usage."""
    from click.testing import CliRunner

    from toolkit.cli import cli

    result = CliRunner().invoke(cli, ["gpus", "--need-gb", "30", "--usage", "endpoint"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("metered prices (by the hour or second, the price catalog's newest):")
    h100 = next(line for line in lines[at:] if line.startswith("  h100-sxm: "))
    assert h100 == (
        "  h100-sxm: spot 1.75 USD an hour per lot of 1 card, billed per started hour (spot: "
        "unsuitable for an always-on endpoint: it can be reclaimed at any time) "
        "[2026-12-05, EXAMPLE figure]; on-demand 2.99 USD an hour per lot of 1 card, billed "
        "per second [2026-12-05, EXAMPLE figure]"
    )
    document = CliRunner().invoke(cli, ["gpus", "--need-gb", "30", "--json"])
    import json

    metered = json.loads(document.output)["metered"]
    assert metered["b200"] == [
        {
            "market": "on-demand",
            "price_per_hour_usd": "11.98",
            "cards_per_lot": 2,
            "billing_seconds": 1,
            "catalog_date": "2026-12-05",
            "source": tariffs.load_catalog().meters[-2].source,
        }
    ]


def test_the_planner_prices_by_the_hour_only_lots_that_hold_the_split() -> None:
    """A 70B model needs TP8 on RTX 4090s: a one-card lot's hourly price is not its price."""
    from toolkit.planner import offers

    metered = offers.holding(offers.load_metered(), {"rtx-4090": 8, "b200": 2})
    assert list(metered) == ["b200"]


def test_iteralab_cost_prices_a_schedule_by_the_hour_as_the_script_does() -> None:
    """`iteralab cost --metered` prints the script's lines; --json carries each charge."""
    import json

    from click.testing import CliRunner

    from toolkit.cli import cli

    args = ["cost", "--metered", "--gpu", "h100-sxm", "--hours", "5.5", "--lots", "2"]
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[3].split() == (
        "on-demand 2.99 USD (1 card) per second 5.5 h (19,800 s) 32.89 USD".split()
    )
    document = json.loads(CliRunner().invoke(cli, [*args, "--market", "spot", "--json"]).output)
    assert (document["schedule_seconds"], document["lots"]) == (19_800, 2)
    (spot,) = document["metered"]
    assert (spot["market"], spot["billed_seconds"], spot["charge"]) == ("spot", 21_600, "21.00 USD")
    refused = CliRunner().invoke(cli, ["cost", "--metered", "--gpu", "h100-sxm", "--days", "7"])
    assert refused.exit_code == 2
    assert "--metered prices a GPU for a schedule" in refused.stderr
