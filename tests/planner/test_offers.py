"""Reading the price catalog for a card: lots, billing unit, spot vs on-demand, storage and
egress, tokens/s per dollar (R21, R34; planner.offers and the prices of planner.choice)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from toolkit.cli import cli
from toolkit.errors import CatalogError
from toolkit.planner import choice, gpus, memory, offers
from toolkit.planner.need import Need
from toolkit.planner.offers import Offer

CONFIGS = FIXTURES / "configs"
HEADER = "catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source"
PLAIN = f"""{HEADER}
2026-01-01,rtx-4090,RTX 4090,1,7,99.00,older catalog
2026-09-24,rtx-4090,RTX 4090,1,7,110.00,catalog of 2026-09-24
2026-09-24,rtx-4090,RTX 4090,1,3,60.00,catalog of 2026-09-24
2026-09-24,b200,B200,2,7,2071.00,catalog of 2026-09-24
"""
EXTRA = f"""{HEADER},availability,storage_usd_per_gb_month,egress_usd_per_gb
2026-09-24,rtx-4090,RTX 4090,1,7,110.00,test,spot,0.10,
2026-09-24,h100-sxm,H100 SXM,8,7,5000.00,test,on-demand,,0.05
"""


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tarifs-forfaits.csv"
    path.write_text(text, encoding="utf-8")
    return path


def fits_one_4090(found: dict[str, Offer], usage: str | None = None) -> choice.Candidate:
    est = memory.estimate(
        memory.shape_from_config(CONFIGS / "mistral-7b-v0.1.json"), precision="int4", seq_len=4096
    )
    rtx = next(g for g in gpus.load_catalog() if g.slug == "rtx-4090")
    return choice.rank([rtx], found, estimate=est, usage=usage)[0]


# --- the offers ---------------------------------------------------------------------------


def test_offers_join_by_slug_for_the_plan_latest_catalog_first(tmp_path: Path) -> None:
    path = _csv(tmp_path, PLAIN)
    assert offers.load_offers(path, 7) == (
        {
            "rtx-4090": Offer(
                gpu_slug="rtx-4090",
                cards_per_lot=1,
                price_per_lot_usd=Decimal("110.00"),
                plan_days=7,
                catalog_date="2026-09-24",
            ),
            "b200": Offer(
                gpu_slug="b200",
                cards_per_lot=2,
                price_per_lot_usd=Decimal("2071.00"),
                plan_days=7,
                catalog_date="2026-09-24",
            ),
        },
        "no price in catalog",
    )
    assert offers.load_offers(path, 3)[0] == {
        "rtx-4090": Offer(
            gpu_slug="rtx-4090",
            cards_per_lot=1,
            price_per_lot_usd=Decimal("60.00"),
            plan_days=3,
            catalog_date="2026-09-24",
        )
    }


def test_the_shipped_catalog_holds_the_two_known_prices() -> None:
    found, _ = offers.load_offers(None, 7)
    assert {s: (o.cards_per_lot, o.price_per_lot_usd) for s, o in found.items()} == {
        "rtx-4090": (1, Decimal("110.00")),
        "b200": (2, Decimal("2071.00")),
    }


def test_without_a_tariff_file_no_price_is_invented(tmp_path: Path) -> None:
    assert offers.load_offers(tmp_path / "tarifs-forfaits.csv", 7) == (
        {},
        "no price in catalog (tarifs-forfaits.csv not found)",
    )


def test_the_optional_columns_are_read_when_the_catalog_has_them(tmp_path: Path) -> None:
    found, _ = offers.load_offers(_csv(tmp_path, EXTRA), 7)
    rtx, h100 = found["rtx-4090"], found["h100-sxm"]
    assert (rtx.availability, rtx.storage_usd_per_gb_month, rtx.egress_usd_per_gb) == (
        "spot",
        Decimal("0.10"),
        None,
    )
    assert (h100.availability, h100.interruptible, rtx.interruptible) == ("on-demand", False, True)
    assert rtx.extras_text() == "storage 0.10 USD per GB-month, egress not in the catalog"
    assert (
        Offer(
            gpu_slug="b200",
            cards_per_lot=2,
            price_per_lot_usd=Decimal(1),
            plan_days=7,
            catalog_date="d",
        ).extras_text()
        == "storage and egress not in the catalog"
    )


def test_an_unknown_availability_names_its_line(tmp_path: Path) -> None:
    path = _csv(tmp_path, EXTRA.replace(",spot,", ",cheap,"))
    with pytest.raises(CatalogError) as err:
        offers.load_offers(path, 7)
    assert err.value.message == (
        "tarifs-forfaits.csv, line 2, column availability: 'cheap' is "
        "not one of on-demand, reserved, spot, interruptible"
    )


def test_a_negative_storage_price_names_its_line(tmp_path: Path) -> None:
    path = _csv(tmp_path, EXTRA.replace(",0.10,", ",-1,"))
    with pytest.raises(CatalogError) as err:
        offers.load_offers(path, 7)
    assert err.value.message == (
        "tarifs-forfaits.csv, line 2, column storage_usd_per_gb_month: '-1' is not an amount in USD"
    )


def test_the_billing_unit_is_the_flat_plan_of_a_lot() -> None:
    assert (
        Offer(
            gpu_slug="b200",
            cards_per_lot=2,
            price_per_lot_usd=Decimal("2071.00"),
            plan_days=7,
            catalog_date="d",
        ).billing_unit
        == "flat 7-day plan per lot of 2 cards (no hourly billing)"
    )
    assert (
        Offer(
            gpu_slug="rtx-4090",
            cards_per_lot=1,
            price_per_lot_usd=Decimal("110.00"),
            plan_days=3,
            catalog_date="d",
        ).billing_unit
        == "flat 3-day plan per lot of 1 card (no hourly billing)"
    )


# --- spot vs on-demand against the usage ----------------------------------------------------


SPOT = Offer(
    gpu_slug="rtx-4090",
    cards_per_lot=1,
    price_per_lot_usd=Decimal("50.00"),
    plan_days=7,
    catalog_date="d",
    availability="spot",
)


@pytest.mark.parametrize(
    ("usage", "warning"),
    [
        ("endpoint", "spot: unsuitable for an always-on endpoint: it can be reclaimed at any time"),
        (
            "unresumable",
            "spot: unsuitable for a long job that cannot resume: it can be reclaimed at any time",
        ),
        ("batch", None),
        ("checkpointed", None),
        (
            None,
            "spot: only for fault-tolerant batch work or checkpointed fine-tuning, never for an "
            "always-on endpoint (say --usage)",
        ),
    ],
)
def test_spot_suits_fault_tolerant_work_only(usage: str | None, warning: str | None) -> None:
    assert offers.usage_fit(SPOT, usage) == warning


def test_on_demand_suits_every_usage() -> None:
    on_demand = Offer(
        gpu_slug="h100-sxm",
        cards_per_lot=8,
        price_per_lot_usd=Decimal("5000"),
        plan_days=7,
        catalog_date="d",
        availability="on-demand",
    )
    assert [offers.usage_fit(on_demand, u) for u in offers.USAGES] == [None] * 4


def test_an_unstated_availability_is_flagged_for_an_endpoint_only() -> None:
    unknown = Offer(
        gpu_slug="b200",
        cards_per_lot=2,
        price_per_lot_usd=Decimal("2071.00"),
        plan_days=7,
        catalog_date="d",
    )
    assert offers.usage_fit(unknown, "batch") is None
    assert offers.usage_fit(unknown, "endpoint") == (
        "the catalog does not say whether the lot can be interrupted: check before relying on "
        "it for an always-on endpoint"
    )


def test_a_spot_lot_is_marked_unsuitable_for_an_always_on_endpoint() -> None:
    rtx = fits_one_4090({"rtx-4090": SPOT}, usage="endpoint")
    assert (rtx.split_label, rtx.budget_usd) == ("1 card", Decimal("50.00"))
    assert rtx.warnings == (
        "spot: unsuitable for an always-on endpoint: it can be reclaimed at any time",
    )
    assert fits_one_4090({"rtx-4090": SPOT}, usage="batch").warnings == ()


def test_the_command_warns_of_spot_for_an_endpoint(runner, tmp_path: Path) -> None:
    result = runner.invoke(
        cli,
        [
            "gpus",
            "--config",
            str(CONFIGS / "mistral-7b-v0.1.json"),
            "--precision",
            "int4",
            "--seq-len",
            "4096",
            "--usage",
            "endpoint",
            "--tariffs",
            str(_csv(tmp_path, EXTRA)),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        "warning: rtx-4090: spot: unsuitable for an always-on endpoint: it can be reclaimed "
        "at any time" in lines
    )
    assert any(
        line.startswith(
            "  rtx-4090: 110.00 USD, flat 7-day plan per lot of 1 card (no "
            "hourly billing); spot; storage 0.10 USD per GB-month, egress "
            "not in the catalog; 1 replica of 1 card x "
        )
        for line in lines
    )


# --- prices of splits: one lot holds the split, or it is not offered -------------------------


def test_a_split_larger_than_a_lot_is_never_priced_as_several_lots() -> None:
    b200 = next(g for g in gpus.load_catalog() if g.slug == "b200")
    found = choice.rank(
        [b200],
        {
            "b200": Offer(
                gpu_slug="b200",
                cards_per_lot=2,
                price_per_lot_usd=Decimal("2071.00"),
                plan_days=7,
                catalog_date="d",
            )
        },
        need=Need.from_gb(Decimal(400)),
    )[0]
    # 400 GiB on 180 GiB cards: TP4, one machine of 4; a lot holds 2.
    assert (found.split_label, found.replicas, found.budget_usd) == ("TP4", None, None)
    assert found.price_reason == (
        "not offered: TP4 needs one machine of 4 cards, a lot holds 2 "
        "(separate lots are separate machines)"
    )


def test_a_two_card_lot_is_never_counted_twice() -> None:
    b200 = next(g for g in gpus.load_catalog() if g.slug == "b200")
    found = choice.rank(
        [b200],
        {
            "b200": Offer(
                gpu_slug="b200",
                cards_per_lot=2,
                price_per_lot_usd=Decimal("2071.00"),
                plan_days=7,
                catalog_date="d",
            )
        },
        need=Need.from_gb(Decimal(300)),
    )[0]
    assert (found.split_label, found.replicas, found.budget_usd) == ("TP2", 1, Decimal("2071.00"))
    assert found.warnings == (
        "the price catalog does not state how the lot's 2 cards are "
        "linked: NVLink 5th gen (gpus.csv) assumed; check with "
        "`nvidia-smi topo -m`",
    )


def test_tokens_per_dollar_count_every_replica_of_the_lot() -> None:
    b200 = next(g for g in gpus.load_catalog() if g.slug == "b200")
    est = memory.estimate(
        memory.shape_from_config(CONFIGS / "llama-2-70b.json"), precision="bf16", seq_len=4096
    )
    found = choice.rank(
        [b200],
        {
            "b200": Offer(
                gpu_slug="b200",
                cards_per_lot=2,
                price_per_lot_usd=Decimal("2071.00"),
                plan_days=7,
                catalog_date="d",
            )
        },
        estimate=est,
    )[0]
    assert (found.split_label, found.replicas, found.tokens_batch) == ("1 card", 2, 57)
    assert found.tokens_per_usd == Decimal(2 * 57) / Decimal("2071.00")
