"""`iteralab tariffs import`: another provider's dated price snapshot joins the Tariffs sheet
(#16). Provider and currency are kept, a bad file is refused whole with its file, line and
column (the workbook byte for byte as it was), an import after attempts is logged in Audit,
and prices in two currencies are never compared, added or converted."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.support import report_campaign
from tests.support.builders import filled
from tests.support.paths import SAMPLES
from toolkit import layout
from toolkit.cli import cli
from toolkit.errors import CatalogError
from toolkit.evidence import money_log, money_rules
from toolkit.money import incurred, settlement, tariffs
from toolkit.report import costs
from toolkit.reporting import build
from toolkit.workbook import store

rules = tariffs.rules
SAMPLE = SAMPLES / "tariffs_other_provider.csv"
HEADER = (
    "catalog_date,provider,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot,"
    "currency,source\n"
)
GOOD = [
    "2026-11-20,Example Cloud EU,rtx-4090,RTX 4090,1,7,104.00,EUR,example figure",
    "2026-11-20,Example Cloud EU,b200,B200,2,7,1930.00,EUR,example figure",
]


def _book(tmp_path: Path) -> Path:
    """The reported campaign: locked, attempts recorded, Tariffs holding the shipped snapshot."""
    return report_campaign.write(tmp_path / "campaign.xlsx")


def _csv(tmp_path: Path, lines: list[str], header: str = HEADER, name: str = "prices.csv") -> Path:
    path = tmp_path / name
    path.write_text(header + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _import(book: Path, snapshot: Path, *options: str) -> Result:
    return CliRunner().invoke(cli, ["tariffs", "import", str(book), str(snapshot), *options])


def _tariffs(book: Path) -> list[tuple[Any, ...]]:
    return [
        (
            r.get("provider"),
            r.get("catalog_date"),
            r.get("gpu_slug"),
            r.get("plan_days"),
            r.get("price_per_lot_usd"),
            r.get("currency"),
        )
        for r in store.read(book).tables["Tariffs"]
    ]


#: The shipped catalog's rows as a new campaign's Tariffs holds them: its two flat plans,
#: then its metered prices (no plan_days, no price per lot).
SHIPPED = [
    (None, "2026-09-24", "rtx-4090", 7, 110, "USD"),
    (None, "2026-09-24", "b200", 7, 2071, "USD"),
] + [(None, m.catalog_date, m.gpu_slug, None, None, "USD") for m in tariffs.load_catalog().meters]


# --------------------------------------------------------------------------- a good import


def test_the_sample_snapshot_joins_the_tariffs_with_its_provider_and_currency(
    tmp_path: Path,
) -> None:
    book = _book(tmp_path)
    result = _import(book, SAMPLE)
    assert result.exit_code == 0, result.output
    assert _tariffs(book) == SHIPPED + [
        ("Example Cloud EU", "2026-11-20", "demo-cpu-host", 7, 32, "EUR"),
        ("Example Cloud EU", "2026-11-20", "rtx-4090", 7, 104, "EUR"),
        ("Example Cloud EU", "2026-11-20", "rtx-4090", 30, 395, "EUR"),
        ("Example Cloud EU", "2026-11-20", "b200", 7, 1930, "EUR"),
    ]
    assert result.output.splitlines()[0] == (
        "imported Example Cloud EU's snapshot of 2026-11-20 (4 row(s), EUR) from "
        "tariffs_other_provider.csv into campaign.xlsx (Tariffs sheet: 0 earlier row(s) of "
        f"that snapshot replaced, {len(SHIPPED)} row(s) of other snapshots kept)"
    )
    assert "  b200: 7 days, 1,930.00 EUR per lot of 2 cards" in result.output.splitlines()


def test_importing_the_same_file_again_changes_nothing(tmp_path: Path) -> None:
    book = _book(tmp_path)
    assert _import(book, SAMPLE).exit_code == 0
    before = book.read_bytes()
    again = _import(book, SAMPLE)
    assert again.exit_code == 0, again.output
    assert again.output == (
        "Example Cloud EU's snapshot of 2026-11-20 (4 row(s), EUR) from "
        "tariffs_other_provider.csv: already in campaign.xlsx as it is; "
        "nothing changed\n"
    )
    assert book.read_bytes() == before


def test_another_date_adds_a_snapshot_and_keeps_the_others(tmp_path: Path) -> None:
    book = _book(tmp_path)
    assert _import(book, _csv(tmp_path, GOOD)).exit_code == 0
    later = [line.replace("2026-11-20", "2026-12-01").replace("104.00", "99.00") for line in GOOD]
    result = _import(book, _csv(tmp_path, later, name="december.csv"), "--json")
    assert result.exit_code == 0, result.output
    assert (json.loads(result.output)["replaced"], json.loads(result.output)["kept"]) == (
        0,
        len(SHIPPED) + 2,
    )
    assert _tariffs(book) == SHIPPED + [
        ("Example Cloud EU", "2026-11-20", "rtx-4090", 7, 104, "EUR"),
        ("Example Cloud EU", "2026-11-20", "b200", 7, 1930, "EUR"),
        ("Example Cloud EU", "2026-12-01", "rtx-4090", 7, 99, "EUR"),
        ("Example Cloud EU", "2026-12-01", "b200", 7, 1930, "EUR"),
    ]


def test_a_corrected_snapshot_replaces_its_rows_in_place(tmp_path: Path) -> None:
    book = _book(tmp_path)
    assert _import(book, _csv(tmp_path, GOOD)).exit_code == 0
    corrected = [GOOD[0].replace("104.00", "101.50")]
    result = _import(book, _csv(tmp_path, corrected, name="corrected.csv"))
    assert result.exit_code == 0, result.output
    assert (
        f"(Tariffs sheet: 2 earlier row(s) of that snapshot replaced, {len(SHIPPED)} row(s) of other "
        "snapshots kept)" in result.output
    )
    assert _tariffs(book) == SHIPPED + [
        ("Example Cloud EU", "2026-11-20", "rtx-4090", 7, 101.5, "EUR")
    ]


def test_provider_and_currency_options_serve_a_file_without_those_columns(tmp_path: Path) -> None:
    book = _book(tmp_path)
    lines = ["2026-11-20,rtx-4090,RTX 4090,1,7,104.00,price page"]
    path = _csv(
        tmp_path,
        lines,
        header="catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source\n",
    )
    result = _import(book, path, "--provider", "Other Cloud", "--currency", "eur")
    assert result.exit_code == 0, result.output
    assert _tariffs(book)[-1] == ("Other Cloud", "2026-11-20", "rtx-4090", 7, 104, "EUR")


def test_the_column_mapping_reads_a_provider_s_own_headers(tmp_path: Path) -> None:
    book = _book(tmp_path)
    path = _csv(
        tmp_path,
        ["2026-11-20,Other Cloud,rtx-4090,RTX 4090,1,7,104.00,EUR,page"],
        header="Date,Seller,GPU,Name,Cards,Days,Price,Currency,Source\n",
    )
    result = _import(
        book,
        path,
        *[
            f"--column={f}={h}"
            for f, h in (
                ("catalog_date", "Date"),
                ("provider", "Seller"),
                ("gpu_slug", "GPU"),
                ("gpu_name", "Name"),
                ("cards_per_lot", "Cards"),
                ("plan_days", "Days"),
                ("price_per_lot", "Price"),
                ("currency", "Currency"),
                ("source", "Source"),
            )
        ],
    )
    assert result.exit_code == 0, result.output
    assert _tariffs(book)[-1] == ("Other Cloud", "2026-11-20", "rtx-4090", 7, 104, "EUR")


def test_the_json_document_says_what_was_imported(tmp_path: Path) -> None:
    book = _book(tmp_path)
    result = _import(book, _csv(tmp_path, GOOD), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert {k: v for k, v in document.items() if k not in ("rows", "logged_in_audit")} == {
        "format": "iteralab-tariffs-import/1",
        "workbook": str(book),
        "csv": str(tmp_path / "prices.csv"),
        "snapshots": [
            {
                "provider": "Example Cloud EU",
                "catalog_date": "2026-11-20",
                "currencies": ["EUR"],
                "rows": 2,
            }
        ],
        "imported": 2,
        "changed": True,
        "replaced": 0,
        "kept": len(SHIPPED),
    }
    assert document["rows"][1] == {
        "provider": "Example Cloud EU",
        "catalog_date": "2026-11-20",
        "gpu_slug": "b200",
        "gpu_name": "B200",
        "plan_days": 7,
        "cards_per_lot": 2,
        "price_per_lot": "1930.00 EUR",
        "market": None,
        "price_per_hour": None,
        "billing_seconds": None,
        "currency": "EUR",
        "source": "example figure",
    }
    assert len(document["logged_in_audit"]) == 2  # the prices as they stood, then the import


# --------------------------------------------------------------------------- Audit


def test_an_import_after_attempts_is_logged_in_audit_and_validate_is_satisfied(
    tmp_path: Path,
) -> None:
    book = _book(tmp_path)
    assert _import(book, _csv(tmp_path, GOOD)).exit_code == 0
    data = store.read(book)
    prices = [r for r in data.tables["Audit"] if r.get("action") == "prices"]
    assert prices[0]["reason"] == "prices and schedule as the attempts were set against them"
    assert prices[1]["reason"].startswith(
        f"edited after the first attempt: Tariffs!{len(SHIPPED) + 2} row: empty -> "
        "{'catalog_date': '2026-11-20', "
    )
    assert len(json.loads(prices[0]["details"])["Tariffs"]) == len(SHIPPED)
    assert len(json.loads(prices[1]["details"])["Tariffs"]) == len(SHIPPED) + 2
    assert money_log.money_edit_findings(data) == []


def test_an_import_before_any_attempt_logs_nothing(tmp_path: Path) -> None:
    book = tmp_path / "fresh.xlsx"
    store.save(filled(), book)
    assert _import(book, _csv(tmp_path, GOOD)).exit_code == 0
    data = store.read(book)
    assert [r for r in data.tables["Audit"] if r.get("action") == "prices"] == []
    assert len(data.tables["Tariffs"]) == 2


# --------------------------------------------------------------------------- bad files


@pytest.mark.parametrize(
    ("lines", "header", "message"),
    [
        (
            GOOD,
            HEADER.replace(",currency", ""),
            "prices.csv, line 1: no column for currency (header 'currency'); the header holds ",
        ),
        (
            [GOOD[0].replace("104.00", "cheap")],
            HEADER,
            "prices.csv, line 2, column 7 (price_per_lot): 'cheap' is not a price in EUR",
        ),
        (
            [GOOD[0].replace("104.00", "-104.00")],
            HEADER,
            "prices.csv, line 2, column 7 (price_per_lot): '-104.00' is not a price in EUR",
        ),
        (
            [GOOD[0].replace("104.00", "1,104.00")],
            HEADER,
            "prices.csv, line 2: 10 fields, the header has 9",
        ),
        (
            [GOOD[1], GOOD[0].replace(",EUR,", ",EURO,")],
            HEADER,
            "prices.csv, line 3, column 8 (currency): 'EURO' is not an ISO 4217 currency code",
        ),
        (
            [GOOD[0].replace("2026-11-20", "20/11/2026")],
            HEADER,
            "prices.csv, line 2, column 1 (catalog_date): '20/11/2026' is not a date YYYY-MM-DD",
        ),
        (
            [GOOD[0].replace(",1,7,", ",1,14,")],
            HEADER,
            "prices.csv, line 2, column 6 (plan_days): '14' is not 3, 7, 30",
        ),
        (
            [GOOD[0].replace(",1,7,", ",0,7,")],
            HEADER,
            "prices.csv, line 2, column 5 (cards_per_lot): '0' is not a whole number >= 1",
        ),
        (
            [GOOD[0].replace(",1,7,", ",1.5,7,")],
            HEADER,
            "prices.csv, line 2, column 5 (cards_per_lot): '1.5' is not a whole number >= 1",
        ),
        (
            [GOOD[0], GOOD[1], GOOD[0].replace("104.00", "99.00")],
            HEADER,
            "prices.csv, line 4: a second 7-day price for rtx-4090 of Example Cloud EU on 2026-11-20 "
            "(the first is at ",
        ),
        (
            [GOOD[0].replace("Example Cloud EU", "")],
            HEADER,
            "prices.csv, line 2, column 2 (provider): empty; every imported price names its provider",
        ),
    ],
)
def test_a_bad_file_is_refused_whole_naming_file_line_and_column(
    tmp_path: Path, lines: list[str], header: str, message: str
) -> None:
    book = _book(tmp_path)
    before = book.read_bytes()
    result = _import(book, _csv(tmp_path, [*lines, GOOD[1].replace("b200", "h100")], header))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "what to do:" in result.output
    assert book.read_bytes() == before


def test_every_bad_line_is_listed_not_only_the_first(tmp_path: Path) -> None:
    path = _csv(tmp_path, [GOOD[0].replace("104.00", "x"), GOOD[1].replace(",7,", ",5,")])
    with pytest.raises(CatalogError) as caught:
        from toolkit.money import tariff_import

        tariff_import.read_snapshot(path)
    assert caught.value.message.splitlines()[0] == (
        f"{path}: 2 line(s) cannot be imported; nothing was written:"
    )
    assert [line.split(":")[0] for line in caught.value.message.splitlines()[1:]] == [
        f"  - {path}, line 2, column 7 (price_per_lot)",
        f"  - {path}, line 3, column 6 (plan_days)",
    ]


def test_a_line_that_contradicts_the_currency_option_is_refused(tmp_path: Path) -> None:
    book = _book(tmp_path)
    before = book.read_bytes()
    result = _import(book, _csv(tmp_path, GOOD), "--currency", "USD")
    assert result.exit_code == 2
    assert (
        "prices.csv, line 2, column 8 (currency): 'EUR' but --currency USD was given"
        in result.output
    )
    assert book.read_bytes() == before


# --------------------------------------------------------------------------- currencies


def test_the_seed_prices_still_hold_after_an_import(tmp_path: Path) -> None:
    book = _book(tmp_path)
    assert _import(book, SAMPLE).exit_code == 0
    result = CliRunner().invoke(cli, ["cost", "--gpu", "rtx-4090", "--days", "7", "--lots", "2"])
    assert (
        "flat price: 220.00 USD for 2 GPUs (2 lots of 1 card x 110.00 USD per lot)"
        in result.output.splitlines()
    )
    catalog = tariffs.catalog_from_workbook(store.read(book))
    assert rules.budget(catalog.only("").plan("b200", 7), 1) == Decimal("2071.00")


def test_eur_offers_are_named_and_left_out_never_compared_with_usd(tmp_path: Path) -> None:
    """The EUR lots are cheaper in number, but 104 EUR is not compared with 110 USD: the
    decision prices in USD and says which offers it left out; incurred stays 110 + 2,071 USD."""
    book = _book(tmp_path)
    assert _import(book, _csv(tmp_path, GOOD)).exit_code == 0
    build(book, pngs=False)
    rows = {r["item"]: r for r in store.read(book).tables["Settlement"]}
    decision = rows["b4-fp32"]
    assert (decision["price_per_lot_usd"], decision["catalog_date"]) == (110, "2026-09-24")
    assert (
        "offers of rtx-4090 in EUR (Example Cloud EU, snapshot of 2026-11-20) left out: "
        "prices in different currencies are never compared or converted without a dated "
        "exchange rate typed by you"
    ) in decision["grounds"]
    assert rows["total incurred (USD)"]["amount"] == 110 + 2071
    assert "total incurred (EUR)" not in rows


def test_a_gpu_sold_only_in_another_currency_stays_unpriced_with_the_reason() -> None:
    catalog = rules.build_catalog([_plan("Example Cloud EU", "h100", "2400.00", "EUR")], "test")
    cover = costs.cheapest_cover(catalog, "h100", 1, 3600.0, Decimal(96), None)
    assert cover.plan is None
    assert cover.note == (
        "h100 is priced only in EUR (Example Cloud EU, snapshot of 2026-11-20): the "
        "Settlement's decision columns are in USD and prices in another currency are never "
        "compared or converted (no exchange rate is assumed)"
    )


def test_the_cheaper_of_two_usd_providers_is_chosen_within_its_currency() -> None:
    catalog = rules.build_catalog(
        [
            _plan("", "rtx-4090", "110.00", "USD", "2026-09-24"),
            _plan("Other Cloud", "rtx-4090", "100.00", "USD", "2026-09-24"),
            _plan("Example Cloud EU", "rtx-4090", "50.00", "EUR"),
        ],
        "test",
    )
    cover = costs.cheapest_cover(catalog, "rtx-4090", 1, 3600.0, Decimal(96), None)
    assert cover.plan is not None
    assert (cover.plan.provider, cover.plan.price_per_lot_usd) == ("Other Cloud", Decimal("100.00"))
    row = settlement.configuration_row(
        settlement.Configuration("b4", "rtx-4090", 7, 1, provider="Other Cloud"), catalog, 2
    )
    assert row["budget_usd"].value == Decimal("100.00")
    provider = layout.column_letter(layout.TARIFFS, "provider")
    assert f'Tariffs!${provider}$2:${provider}$5001="Other Cloud"' in row["price_per_lot_usd"].text


def test_a_settlement_row_refuses_a_plan_in_another_currency() -> None:
    catalog = rules.build_catalog([_plan("Example Cloud EU", "h100", "2400.00", "EUR")], "test")
    with pytest.raises(CatalogError) as caught:
        settlement.configuration_row(settlement.Configuration("b8", "h100", 7, 1), catalog, 2)
    assert caught.value.message == (
        "b8: the 7-day h100 plan of Example Cloud EU is priced in EUR; the Settlement's "
        "configuration columns are in USD and prices are never converted"
    )


def test_a_rental_is_priced_only_from_its_provider_in_its_own_currency() -> None:
    catalog = rules.build_catalog(
        [
            _plan("", "rtx-4090", "110.00", "USD", "2026-09-24"),
            _plan("Example Cloud EU", "rtx-4090", "104.00", "EUR"),
        ],
        "test",
    )

    def priced(provider: str, currency: str) -> incurred.Priced:
        return incurred.price(
            incurred.Rental(
                2,
                {
                    "rental_id": "r",
                    "provider": provider,
                    "gpu_slug": "rtx-4090",
                    "lots": 2,
                    "billing": "flat-7d",
                    "currency": currency,
                },
            ),
            catalog,
        )

    assert priced("Example Cloud EU", "EUR").amount == Decimal("208.00")
    assert priced("IteraGPU", "USD").amount == Decimal("220.00")  # the unnamed catalog
    refused = priced("IteraGPU", "EUR")
    assert refused.amount is None
    assert refused.grounds == (
        "Tariffs prices are in USD, the rental in EUR: type the amount charged in Rentals.amount"
    )


def test_two_providers_may_price_the_same_plan_on_the_same_date() -> None:
    data = filled()
    for provider, currency in ((None, None), ("Example Cloud EU", "EUR")):
        data.append(
            "Tariffs",
            {
                "catalog_date": "2026-09-24",
                "gpu_slug": "rtx-4090",
                "gpu_name": "RTX 4090",
                "cards_per_lot": 1,
                "plan_days": 7,
                "price_per_lot_usd": 110.0,
                "source": "x",
                "provider": provider,
                "currency": currency,
            },
        )
    assert money_rules.RULES["Tariffs"](data) == []
    data.tables["Tariffs"][1]["currency"] = "euro"
    assert [(f.column, f.check) for f in money_rules.RULES["Tariffs"](data)] == [
        ("currency", "currency")
    ]


def test_the_calculator_asks_whose_prices_when_a_file_holds_several(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _csv(tmp_path, [*GOOD, "2026-09-24,,rtx-4090,RTX 4090,1,7,110.00,USD,seed"])
    code = rules.main(["--catalog", str(path), "--gpu", "rtx-4090", "--days", "7"])
    assert code == 2
    assert (
        "holds the prices of several providers ('Example Cloud EU', one naming no "
        "provider): say whose prices to use" in capsys.readouterr().err
    )
    assert (
        rules.main(
            [
                "--catalog",
                str(path),
                "--provider",
                "example cloud eu",
                "--gpu",
                "rtx-4090",
                "--days",
                "7",
                "--lots",
                "2",
            ]
        )
        == 0
    )
    assert (
        "flat price: 208.00 EUR for 2 GPUs (2 lots of 1 card x 104.00 EUR per lot)"
        in capsys.readouterr().out.splitlines()
    )


def _plan(
    provider: str, gpu: str, price: str, currency: str, date: str = "2026-11-20"
) -> tariffs.Plan:
    return rules.make_plan(
        {
            "catalog_date": date,
            "gpu_slug": gpu,
            "gpu_name": gpu.upper(),
            "cards_per_lot": 1,
            "plan_days": 7,
            "price_per_lot_usd": price,
            "source": "test",
            "provider": provider,
            "currency": currency,
        },
        lambda column: f"test, row {provider or '-'}, column {column}",
    )
