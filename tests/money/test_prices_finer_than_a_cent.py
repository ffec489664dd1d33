"""Hostile prices (#39, Medium and Low money): a tariff finer than a cent printed rounded
("100 lots x 110.00 = 11,000.40"), a 1e26 tariff that no workbook keeps exactly
(tariffs/calcul_forfaits.py, toolkit.report, toolkit.evidence.money_rules)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.money.tariffs import rules
from toolkit.workbook import store

HEADER = "catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source\n"


def _catalog(tmp_path: Path, price: str) -> Path:
    catalog = tmp_path / "catalog.csv"
    catalog.write_text(HEADER + f"2026-09-24,rtx-4090,RTX 4090,1,7,{price},quote\n", "utf-8")
    return catalog


def test_a_price_finer_than_a_cent_is_printed_with_its_digits(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["cost", "--catalog", str(_catalog(tmp_path, "110.004")), "--gpu", "rtx-4090"]
        + ["--days", "7", "--lots", "100", "--accepted-results", "3"],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        "plan: RTX 4090 (rtx-4090), 7 days, 110.004 USD per lot of 1 card",
        "flat price: 11,000.40 USD for 100 GPUs (100 lots of 1 card x 110.004 USD per lot)",
        "billing: flat; the whole plan is due however short the run (no hourly billing)",
        # A quotient is rounded half-up to the cent; the amounts it divides are not.
        "cost per accepted result: 3,666.80 USD (11,000.40 USD / 3 distinct validated corpora)",
    ]


def test_amounts_are_shown_exactly_with_at_least_the_cents() -> None:
    assert rules.money(Decimal("110.004"), "USD") == "110.004 USD"
    assert rules.money(Decimal("110.0040") * 1000, "EUR") == "110,004.00 EUR"
    assert rules.money(Decimal("35"), "USD") == "35.00 USD"
    assert rules.amount_text(Decimal("1234.5"), grouping=False) == "1234.50"


def test_report_and_memo_print_a_price_finer_than_a_cent_as_it_is(tmp_path: Path) -> None:
    """report.md's rentals and costs and the Decision memo read 110.004 USD, not 110.00."""
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    data = store.read(book)
    data.tables["Tariffs"][0]["price_per_lot_usd"] = 110.004  # rtx-4090, 7 days
    store.save(data, book)
    result = CliRunner().invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "campaign_report" / "report.md").read_text("utf-8")
    assert "| r-4090 | rental | b1-fp32, b4-fp32, b8-fp32, b8-bf16, b16-fp32 | 110.004 USD |" in (
        report
    )
    assert "| b1-fp32 | rtx-4090 | 7 days | 1 | 110.004 USD |" in report
    reasons = store.read(book).forms["Decision"]["reasons"]
    assert "its 110.004 USD budget over 1 expected corpus(es)" in reasons
    assert "2,181.004 USD incurred" in reasons  # 110.004 + 2,071.00, each rental once
    assert "110.00 USD budget" not in reasons


def test_a_price_no_workbook_keeps_exactly_is_refused_with_line_and_column(
    tmp_path: Path,
) -> None:
    catalog = _catalog(tmp_path, "100000000000000000000000000")
    result = CliRunner().invoke(cli, ["cost", "--catalog", str(catalog), "--list"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {catalog}, line 2, column 6 (price_per_lot_usd): 100000000000000000000000000 "
        "USD is past what a workbook keeps exactly: a price is below 1,000,000,000,000 a lot, "
        "in at most 13 significant digits (a spreadsheet cell keeps 15, and a total of prices "
        "needs the rest to keep its cents)",
        "  what to do: check the price (a stray exponent or extra digits?); write it as the "
        "provider bills it, e.g. 2071.00",
    ]


@pytest.mark.parametrize("price", [1e26, 1234567890.12345])
def test_a_tariffs_cell_past_those_bounds_is_a_finding_naming_its_cell(
    tmp_path: Path, price: float
) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    data = store.read(book)
    data.tables["Tariffs"][1]["price_per_lot_usd"] = price
    found = [f for f in validate(data, book) if f.check == "exact"]
    assert [(f.sheet, f.row, f.column) for f in found] == [("Tariffs", 3, "price_per_lot_usd")]
    assert found[0].message.startswith(
        f"price_per_lot_usd {price} is past what a workbook keeps exactly: a price is below "
        "1,000,000,000,000 a lot, in at most 13 significant digits"
    )
