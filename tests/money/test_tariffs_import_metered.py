"""`iteralab tariffs import` takes metered prices (by the hour or the second, on demand or
spot) as it takes flat plans: every line checked by the tariff rules, every bad line named
with its file, line and column, nothing written from a file that does not read whole; an
imported metered price prices a rental to the second in the Settlement."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from toolkit.cli import cli
from toolkit.errors import CatalogError
from toolkit.money import incurred, tariff_import, tariffs
from toolkit.workbook import store

METERED = (
    "catalog_date,provider,gpu_slug,gpu_name,cards_per_lot,market,price_per_hour,"
    "billing_seconds,currency,source\n"
)
ON_DEMAND = "2026-12-01,Example Cloud,h100-sxm,H100 SXM,1,on-demand,2.49,1,USD,quote Q-7"
SPOT = "2026-12-01,Example Cloud,h100-sxm,H100 SXM,1,spot,1.30,3600,USD,quote Q-7"
BOTH = (
    "catalog_date,provider,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot,market,"
    "price_per_hour,billing_seconds,currency,source\n"
)
FLAT = "2026-12-01,Example Cloud,h100-sxm,H100 SXM,1,7,310.00,,,,USD,quote Q-7"


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "campaign.xlsx"
    result = CliRunner().invoke(cli, ["init", str(book)])
    assert result.exit_code == 0, result.output
    return book


def _csv(tmp_path: Path, header: str, *lines: str) -> Path:
    path = tmp_path / "prices.csv"
    path.write_text(header + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _import(book: Path, snapshot: Path, *options: str) -> Result:
    return CliRunner().invoke(cli, ["tariffs", "import", str(book), str(snapshot), *options])


def _imported(book: Path) -> list[tuple[object, ...]]:
    """The Example Cloud rows of Tariffs, numbers as the sheet holds them."""
    return [
        (
            r.get("gpu_slug"),
            r.get("plan_days"),
            r.get("price_per_lot_usd"),
            r.get("market"),
            r.get("price_per_hour"),
            r.get("billing_seconds"),
        )
        for r in store.read(book).tables["Tariffs"]
        if r.get("provider") == "Example Cloud"
    ]


def test_a_metered_snapshot_joins_the_tariffs_with_market_price_per_hour_and_step(
    tmp_path: Path,
) -> None:
    book = _book(tmp_path)
    result = _import(book, _csv(tmp_path, METERED, ON_DEMAND, SPOT))
    assert result.exit_code == 0, result.output
    assert _imported(book) == [
        ("h100-sxm", None, None, "on-demand", 2.49, 1),
        ("h100-sxm", None, None, "spot", 1.3, 3600),
    ]
    assert result.output.splitlines()[1:3] == [
        "  h100-sxm: on-demand, 2.49 USD an hour per lot of 1 card, billed per second",
        "  h100-sxm: spot, 1.30 USD an hour per lot of 1 card, billed per started hour",
    ]
    catalog = tariffs.catalog_from_workbook(store.read(book)).only("Example Cloud")
    assert [(m.market, m.price_per_hour) for m in catalog.metered("h100-sxm")] == [
        ("on-demand", Decimal("2.49")),
        ("spot", Decimal("1.3")),
    ]


def test_flat_and_metered_lines_share_one_file_and_importing_it_again_changes_nothing(
    tmp_path: Path,
) -> None:
    book = _book(tmp_path)
    path = _csv(
        tmp_path,
        BOTH,
        FLAT,
        "2026-12-01,Example Cloud,h100-sxm,H100 SXM,1,,,spot,1.30,3600,USD,quote Q-7",
    )
    assert _import(book, path).exit_code == 0
    assert _imported(book) == [
        ("h100-sxm", 7, 310, None, None, None),
        ("h100-sxm", None, None, "spot", 1.3, 3600),
    ]
    before = book.read_bytes()
    again = _import(book, path, "--json")
    assert again.exit_code == 0, again.output
    document = json.loads(again.output)
    assert document["changed"] is False
    assert [
        (r["plan_days"], r["price_per_lot"], r["market"], r["price_per_hour"], r["billing_seconds"])
        for r in document["rows"]
    ] == [
        (7, "310.00 USD", None, None, None),
        (None, None, "spot", "1.30 USD", 3600),
    ]
    assert book.read_bytes() == before


def test_the_column_mapping_names_a_provider_s_own_metered_headers(tmp_path: Path) -> None:
    header = METERED.replace("price_per_hour", "Hourly").replace("billing_seconds", "Step")
    book = _book(tmp_path)
    result = _import(
        book,
        _csv(tmp_path, header, ON_DEMAND),
        "--column",
        "price_per_hour=Hourly",
        "--column",
        "billing_seconds=Step",
    )
    assert result.exit_code == 0, result.output
    assert _imported(book) == [("h100-sxm", None, None, "on-demand", 2.49, 1)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            ON_DEMAND.replace("on-demand", "reserved"),
            "prices.csv, line 2, column 6 (market): 'reserved' is not on-demand or spot",
        ),
        (
            ON_DEMAND.replace(",2.49,", ",,"),
            "prices.csv, line 2, column 7 (price_per_hour): empty; a file without plan_days "
            "and price_per_lot columns holds metered prices only",
        ),
        (
            ON_DEMAND.replace(",2.49,", ",0,"),
            "prices.csv, line 2, column 7 (price_per_hour): '0' is not a price in USD",
        ),
        (
            ON_DEMAND.replace(",2.49,", ",2.49 USD,"),
            "prices.csv, line 2, column 7 (price_per_hour): '2.49 USD' is not a price in USD",
        ),
        (
            ON_DEMAND.replace(",2.49,1,", ",2.49,7200,"),
            "prices.csv, line 2, column 8 (billing_seconds): 7200 s is longer than an hour",
        ),
        (
            ON_DEMAND.replace(",2.49,1,", ",2.49,0,"),
            "prices.csv, line 2, column 8 (billing_seconds): '0' is not a whole number >= 1",
        ),
    ],
)
def test_a_bad_metered_line_is_refused_whole_naming_file_line_and_column(
    tmp_path: Path, line: str, message: str
) -> None:
    book = _book(tmp_path)
    before = book.read_bytes()
    result = _import(book, _csv(tmp_path, METERED, line, SPOT))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "what to do:" in result.output
    assert book.read_bytes() == before


def test_a_line_with_both_prices_is_refused_as_two_rows_in_one(tmp_path: Path) -> None:
    both = FLAT.replace(",,,,USD", ",spot,1.30,3600,USD")
    with pytest.raises(CatalogError) as caught:
        tariff_import.read_snapshot(_csv(tmp_path, BOTH, both))
    assert (
        "line 2, column 6 (plan_days): a row with a price_per_hour is a metered price and "
        "has no plan_days (what to do: put the flat plan and the metered price on two rows)"
    ) in caught.value.message


def test_a_metered_price_twice_is_named_with_both_lines(tmp_path: Path) -> None:
    with pytest.raises(CatalogError) as caught:
        tariff_import.read_snapshot(_csv(tmp_path, METERED, SPOT, SPOT.replace("1.30", "1.20")))
    assert (
        "prices.csv, line 3: a second spot price per started hour for h100-sxm of Example "
        "Cloud on 2026-12-01 (the first is at "
    ) in caught.value.message
    assert "prices.csv, line 2)" in caught.value.message


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (
            METERED.replace(",billing_seconds", ""),
            "no column for billing_seconds (header 'billing_seconds')",
        ),
        (
            "catalog_date,provider,gpu_slug,gpu_name,cards_per_lot,currency,source\n",
            "no column for plan_days and price_per_lot (a flat plan) or market, "
            "price_per_hour, billing_seconds (a metered price)",
        ),
    ],
)
def test_a_file_without_a_whole_kind_of_price_is_refused_at_its_header(
    tmp_path: Path, header: str, message: str
) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(header + "2026-12-01\n", encoding="utf-8")
    with pytest.raises(CatalogError) as caught:
        tariff_import.read_snapshot(path)
    assert caught.value.message.startswith(f"{path}, line 1: {message}; the header holds ")


def test_an_imported_metered_price_prices_a_rental_to_the_second(tmp_path: Path) -> None:
    book = _book(tmp_path)
    assert _import(book, _csv(tmp_path, METERED, ON_DEMAND, SPOT)).exit_code == 0
    catalog = tariffs.catalog_from_workbook(store.read(book))
    rental = incurred.Rental(
        2,
        {
            "rental_id": "r-h100",
            "provider": "Example Cloud",
            "gpu_slug": "h100-sxm",
            "cards_per_lot": 1,
            "lots": 1,
            "billing": "per-second",
            "market": "on-demand",
            "start": "2026-12-07T09:00:00+00:00",
            "end": "2026-12-07T14:30:07+00:00",
            "currency": "USD",
        },
    )
    priced = incurred.price(rental, catalog)
    # 19,807 s at 2.49 an hour: 13.69984... -> 13.70, to the cent.
    assert priced.amount == Decimal("13.70")
    assert "on-demand price of 2026-12-01 by Example Cloud" in priced.grounds
