"""`iteralab ledger import`: a provider's billing export read into the Ledger sheet and
reconciled with Rentals (#16); a bad file is refused whole, the workbook byte for byte as
it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit.cli import cli
from toolkit.reporting import build
from toolkit.workbook import store

HEADER = "date,description,reference,amount,currency\n"


def _book(tmp_path: Path) -> Path:
    return report_campaign.write(tmp_path / "campaign.xlsx")


def _export(tmp_path: Path, text: str, name: str = "billing.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _import(book: Path, export: Path, *options: str) -> object:
    return CliRunner().invoke(cli, ["ledger", "import", str(book), str(export), *options])


def test_each_kind_of_difference_is_named(tmp_path: Path) -> None:
    book = _book(tmp_path)
    export = _export(
        tmp_path,
        HEADER
        + "2026-12-07,RTX 4090 7-day lot,ORD-1001,110.00,USD\n"
        + "2026-12-07,B200 7-day lot,ORD-1002,2,000.00,USD\n".replace("2,000.00", '"2,000.00"')
        + "2026-12-09,Object storage,ST-77,4.20,USD\n",
    )
    result = _import(book, export, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["imported"] == 3
    assert document["rentals"] == [
        {"rental_id": "r-4090", "status": "matched (1 ledger line(s))"},
        {
            "rental_id": "r-b200",
            "status": "amount differs: ledger 2,000.00 USD, workbook 2,071.00 USD",
        },
    ]
    assert document["ledger_only"] == [
        {
            "date": "2026-12-09",
            "reference": "ST-77",
            "description": "Object storage",
            "amount": "4.20 USD",
            "source": "billing.csv:4",
        }
    ]
    assert [r["reference"] for r in store.read(book).tables["Ledger"]] == [
        "ORD-1001",
        "ORD-1002",
        "ST-77",
    ]

    result, _ = build(book, pngs=False)
    rows = {r["item"]: r for r in store.read(book).tables["Settlement"]}
    assert rows["r-b200"]["ledger_status"].startswith("amount differs: ledger 2,000.00 USD")
    assert rows["ST-77"]["kind"] == "ledger only"
    assert rows["ST-77"]["ledger_status"] == "in the ledger, not in the workbook"
    assert rows["total incurred (USD)"]["amount"] == 2181  # ledger-only lines stay outside
    report = (tmp_path / "campaign_report" / "report.md").read_text(encoding="utf-8")
    assert "amount differs: ledger 2,000.00 USD, workbook 2,071.00 USD" in report
    assert "ST-77" in report


def test_a_rental_missing_from_the_ledger_and_a_reimport_replacing_its_lines(
    tmp_path: Path,
) -> None:
    book = _book(tmp_path)
    export = _export(tmp_path, HEADER + "2026-12-07,RTX 4090 lot,ORD-1001,110,USD\n")
    assert _import(book, export).exit_code == 0
    result = _import(book, export)
    assert result.exit_code == 0, result.output
    assert "r-b200: not in the ledger (reference ORD-1002)" in result.output
    assert "1 earlier line(s) kept" not in result.output
    assert len(store.read(book).tables["Ledger"]) == 1  # the same file imported again


def test_a_provider_with_its_own_column_names_is_mapped(tmp_path: Path) -> None:
    book = _book(tmp_path)
    export = _export(tmp_path, "Date,Item,Order,Total,Cur\n2026-12-07,lot,ORD-1001,110,usd\n")
    result = _import(
        book,
        export,
        "--column",
        "reference=Order",
        "--column",
        "amount=Total",
        "--column",
        "currency=Cur",
        "--column",
        "description=Item",
        "--column",
        "date=Date",
    )
    assert result.exit_code == 0, result.output
    assert "r-4090: matched (1 ledger line(s))" in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Date,Total\n2026-12-07,110\n",
            "billing.csv: line 1: no column for reference (header 'reference'), amount (header "
            "'amount'), currency (header 'currency'); the header holds 'Date', 'Total'",
        ),
        (
            HEADER + "2026-12-07,lot,ORD-1001,110 USD,USD\n",
            "billing.csv: line 2, column 'amount': '110 USD' is not an amount",
        ),
        (
            HEADER + "2026-12-07,lot,ORD-1001,110.00,US Dollars\n",
            "billing.csv: line 2, column 'currency': unknown currency 'US Dollars'",
        ),
        (HEADER, "billing.csv: no charge in the billing export"),
    ],
)
def test_a_bad_export_is_refused_and_nothing_is_written(
    tmp_path: Path, text: str, message: str
) -> None:
    book = _book(tmp_path)
    before = book.read_bytes()
    result = _import(book, _export(tmp_path, text))
    assert result.exit_code == 2  # bad input, as a tariff import's (issue 38)
    assert message in result.stderr
    assert "what to do:" in result.stderr
    assert book.read_bytes() == before


def test_a_bad_column_option_is_a_usage_error(tmp_path: Path) -> None:
    book = _book(tmp_path)
    result = _import(book, _export(tmp_path, HEADER), "--column", "price=Total")
    assert result.exit_code == 2
    assert "--column 'price=Total': expected FIELD=HEADER" in result.stderr
