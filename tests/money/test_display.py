"""What a finance reviewer reads (issue 33): every amount in its own currency, a billed amount
that differs reaching the total, the known subtotal of an incomplete total."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.support import report_campaign
from toolkit import layout
from toolkit.evidence.validate import validate
from toolkit.reporting import build
from toolkit.workbook import store
from toolkit.workbook.model import Formula

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return report_campaign.priced_report(tmp_path_factory.mktemp("priced"))


def _formats(path: Path, sheet: layout.Sheet, key: str, column: str) -> dict[Any, str]:
    """The number format of ``column``'s cell on each row, by the row's ``key`` value."""
    ws = openpyxl.load_workbook(path)[sheet.name]
    k, c = sheet.names.index(key) + 1, sheet.names.index(column) + 1
    return {
        ws.cell(r, k).value: ws.cell(r, c).number_format
        for r in range(2, ws.max_row + 1)
        if ws.cell(r, k).value is not None
    }


def _value(cell: Any) -> Any:
    return cell.value if isinstance(cell, Formula) else cell


def test_a_eur_tariff_shows_eur_and_a_usd_one_usd(priced: Path) -> None:
    ws = openpyxl.load_workbook(priced)[layout.TARIFFS.name]
    names = layout.TARIFFS.names
    price, currency = names.index("price_per_lot_usd") + 1, names.index("currency") + 1
    shown = {  # the flat plans' rows (a metered row leaves the lot price empty)
        (ws.cell(r, currency).value or "", ws.cell(r, price).number_format)
        for r in range(2, ws.max_row + 1)
        if ws.cell(r, price).value is not None
    }
    assert shown == {("USD", '#,##0.00" USD"'), ("EUR", '#,##0.00" EUR"')}


def test_a_tariff_without_currency_shows_usd_as_the_column_help_says(tmp_path: Path) -> None:
    data = report_campaign.priced()
    data.tables["Tariffs"][0]["currency"] = None
    path = tmp_path / "blank.xlsx"
    store.save(data, path)
    ws = openpyxl.load_workbook(path)[layout.TARIFFS.name]
    assert (
        ws.cell(2, layout.TARIFFS.names.index("price_per_lot_usd") + 1).number_format
        == '#,##0.00" USD"'
    )


def test_a_typed_eur_amount_shows_eur_in_rentals(tmp_path: Path) -> None:
    data = report_campaign.priced()
    data.tables["Rentals"][-1]["amount"] = 208.0  # r-eu, as its invoice says
    data.tables["Rentals"][0]["amount"] = 110.0  # r-4090
    path = tmp_path / "typed.xlsx"
    store.save(data, path)
    shown = _formats(path, layout.RENTALS, "rental_id", "amount")
    assert (shown["r-eu"], shown["r-4090"]) == ('#,##0.00" EUR"', '#,##0.00" USD"')


def test_a_eur_rental_shows_eur_in_every_settlement_money_cell(priced: Path) -> None:
    for column in ("amount", "counted_amount", "price_per_lot"):
        shown = _formats(priced, layout.SETTLEMENT, "item", column)
        assert shown["r-eu"] == '#,##0.00" EUR"', column
        assert shown["r-4090"] == '#,##0.00" USD"', column
    for column in ("amount", "known_subtotal", "spent_per_accepted"):
        shown = _formats(priced, layout.SETTLEMENT, "item", column)
        assert (shown["total incurred (EUR)"], shown["total incurred (USD)"]) == (
            '#,##0.00" EUR"',
            '#,##0.00" USD"',
        ), column
    decision = _formats(priced, layout.SETTLEMENT, "item", "projected_cost_per_expected_usd")
    assert decision["b8-fp32"] == '#,##0.00" USD"'  # the decision part is in USD only
    ledger = _formats(priced, layout.LEDGER, "reference", "amount")
    assert (ledger["EU-7"], ledger["ORD-1001"]) == ('#,##0.00" EUR"', '#,##0.00" USD"')


def test_a_billed_amount_that_differs_reaches_the_total_s_ledger_status(priced: Path) -> None:
    rows = {r["item"]: r for r in store.read(priced).tables["Settlement"]}
    assert rows["r-b200"]["ledger_status"] == (
        "amount differs: ledger 2,072.00 USD, workbook 2,071.00 USD"
    )
    total = rows["total incurred (USD)"]
    assert total["amount"] == 2193.5  # the workbook's figures, never the ledger's silently
    assert total["ledger_status"] == (
        "check: r-b200: amount differs: ledger 2,072.00 USD, workbook 2,071.00 USD"
    )


def test_a_billing_line_recorded_as_another_cost_is_matched_not_left_ledger_only(
    priced: Path,
) -> None:
    rows = {r["item"]: r for r in store.read(priced).tables["Settlement"]}
    assert rows["S3-12"]["ledger_status"] == "matched (1 ledger line(s))"
    assert not [r for r in rows.values() if r["kind"] == "ledger only"]
    assert rows["total incurred (EUR)"]["ledger_status"] == (
        "check: labour: not in the ledger (reference labour)"
    )


def test_an_incomplete_total_shows_its_known_subtotal_beside_it(tmp_path: Path) -> None:
    data = report_campaign.priced()
    data.append("Rentals", dict(report_campaign.METERED_RENTAL))
    path = tmp_path / "incomplete.xlsx"
    store.save(data, path)
    build(path, pngs=False)
    rows = {r["item"]: r for r in store.read(path).tables["Settlement"]}
    total = rows["total incurred (USD)"]
    assert (total["amount"], total["known_subtotal"], total["spent_per_accepted"]) == (
        "incomplete",
        2193.5,
        None,
    )
    assert "no amount yet for r-h100: the known subtotal is 2,193.50 USD" in total["grounds"]
    assert rows["r-h100"]["counted_amount"] is None


def test_spent_per_accepted_and_the_forecast_agree_between_python_and_the_cached_cells(
    priced: Path,
) -> None:
    """20 expected outputs, 1 corpus confirmed: the forecast divides the plan by 20, the spent
    figure the incurred total by 1; neither is the other."""
    rows = {r["item"]: r for r in store.read(priced).tables["Settlement"]}
    assert rows["b8-fp32"]["projected_cost_per_expected_usd"] == 5.5  # 110.00 USD / 20
    assert rows["b8-fp32"]["cost_per_accepted_usd"] is None
    assert rows["total incurred (USD)"]["spent_per_accepted"] == 2193.5  # / 1 confirmed
    assert rows["total incurred (EUR)"]["spent_per_accepted"] == 508


def test_a_catalog_date_typed_as_an_excel_date_validates_and_prices(tmp_path: Path) -> None:
    """Excel turns 2026-09-24 typed in a cell into a date: accepted as that day, and the
    report writes it back as ISO text the Settlement's lookups match."""
    path = tmp_path / "dated.xlsx"
    store.save(report_campaign.priced(), path)
    book = openpyxl.load_workbook(path)
    ws = book[layout.TARIFFS.name]
    column = layout.TARIFFS.names.index("catalog_date") + 1
    dated = [r for r in range(2, ws.max_row + 1) if ws.cell(r, column).value == "2026-09-24"]
    for r in dated:
        ws.cell(r, column).value = dt.datetime(2026, 9, 24)
        ws.cell(r, column).number_format = "yyyy-mm-dd"
    book.save(path)
    assert dated
    data = store.read(path)
    assert data.tables["Tariffs"][0]["catalog_date"] == "2026-09-24T00:00"
    assert [f for f in validate(data, path) if f.sheet == "Tariffs"] == []
    build(path, pngs=False)
    back = store.read(path)
    flat = [r for r in back.tables["Tariffs"] if r.get("price_per_hour") is None]
    assert {r["catalog_date"] for r in flat} == {"2026-09-24", "2026-11-20"}
    rows = {r["item"]: r for r in back.tables["Settlement"]}
    assert rows["b8-fp32"]["budget_usd"] == 110


def test_a_typed_other_cost_is_blue_and_the_excluded_column_grey(priced: Path) -> None:
    """Blue: typed by a person; grey: written by the toolkit (`exclude` writes excluded)."""
    book = openpyxl.load_workbook(priced)
    ws = book[layout.SETTLEMENT.name]
    fill = {
        ws.cell(r, 1).value: {
            n: ws.cell(r, layout.SETTLEMENT.names.index(n) + 1).fill.fgColor.rgb
            for n in ("item", "amount", "grounds")
        }
        for r in range(2, ws.max_row + 1)
    }
    assert set(fill["S3-12"].values()) == {"FFDDEBF7"}  # other cost: typed
    assert set(fill["r-4090"].values()) == {"FFEDEDED"}  # rental: from Rentals
    attempts = book[layout.ATTEMPTS.name]
    excluded = layout.ATTEMPTS.names.index("excluded") + 1
    assert attempts.cell(2, excluded).fill.fgColor.rgb == "FFEDEDED"
