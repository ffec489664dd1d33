"""Settlement rows: budgets and costs per accepted corpus, formulas agreeing with Python."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.recalc import needs_soffice, recalculate, sheet_rows
from toolkit import layout
from toolkit.errors import CatalogError, UsageError
from toolkit.money import tariffs
from toolkit.money.settlement import Configuration, OtherCost, settlement_rows
from toolkit.workbook.model import Formula, WorkbookData
from toolkit.workbook.render import render

CENT = Decimal("0.01")
MONEY = ("price_per_lot_usd", "budget_usd", "cost_per_accepted_usd")

CONFIGS = [
    Configuration(
        "b8-rtx4090",
        "rtx-4090",
        7,
        2,
        accepted=3,
        quality_verdict="pass",
        median_s=12.5,
        campaign_hours=Decimal("96"),
    ),
    Configuration("b8-b200", "b200", 7, 1, accepted=0, quality_verdict="pass"),
    Configuration("b4-b200", "b200", 7, 1, accepted=None),
    Configuration("b1-b200", "b200", 7, 3, accepted=["corpus-a", "corpus-a", "corpus-b"]),
    Configuration("b1-rtx4090", "rtx-4090", 7, 1, accepted=7),
]
OTHERS = [OtherCost("storage", Decimal("12.345"), "object storage for predictions, invoice 42")]


def value(cell: Any) -> Any:
    """A row cell's Python value (a formula's cached value)."""
    return cell.value if isinstance(cell, Formula) else cell


def rows_by_item(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["item"]: {k: value(v) for k, v in row.items()} for row in rows}


@pytest.fixture
def catalog() -> Any:
    return tariffs.load_catalog()


def test_two_rtx_4090_lots_for_7_days_budget_220_usd(catalog: Any) -> None:
    row = rows_by_item(settlement_rows(CONFIGS, [], catalog))["b8-rtx4090"]
    assert (row["lots"], row["cards"], row["price_per_lot_usd"], row["budget_usd"]) == (
        2,
        2,
        Decimal("110.00"),
        Decimal("220.00"),
    )
    assert row["cost_per_accepted_usd"] == Decimal("220.00") / 3


def test_one_b200_lot_is_2071_usd_for_two_cards_not_doubled(catalog: Any) -> None:
    row = rows_by_item(settlement_rows(CONFIGS, [], catalog))["b8-b200"]
    assert (row["lots"], row["cards_per_lot"], row["cards"], row["budget_usd"]) == (
        1,
        2,
        2,
        Decimal("2071.00"),
    )


def test_budget_formula_multiplies_price_by_lots_never_by_cards(catalog: Any) -> None:
    row = settlement_rows(CONFIGS, [], catalog)[1]
    names = layout.SETTLEMENT.names
    letter = {n: layout.column_letter(layout.SETTLEMENT, n) for n in names}
    assert row["budget_usd"].text == (
        f"IF(ISNUMBER({letter['price_per_lot_usd']}3),{letter['price_per_lot_usd']}3*"
        f'{letter["lots"]}3,"no price in Tariffs")'
    )


def test_zero_accepted_corpora_make_the_cost_undefined_and_keep_the_budget(catalog: Any) -> None:
    row = rows_by_item(settlement_rows(CONFIGS, [], catalog))["b8-b200"]
    assert row["accepted_corpora"] == 0
    assert row["cost_per_accepted_usd"] == "undefined"
    assert row["budget_usd"] == Decimal("2071.00")


def test_accepted_corpora_not_yet_validated_leave_the_cost_empty(catalog: Any) -> None:
    row = rows_by_item(settlement_rows(CONFIGS, [], catalog))["b4-b200"]
    assert row["accepted_corpora"] is None
    assert row["cost_per_accepted_usd"] == ""


def test_accepted_corpora_count_distinct_corpora_not_repetitions(catalog: Any) -> None:
    row = rows_by_item(settlement_rows(CONFIGS, [], catalog))["b1-b200"]
    assert row["accepted_corpora"] == 2
    assert row["cost_per_accepted_usd"] == Decimal("3106.50")


def test_other_costs_have_their_own_rows_with_grounds(catalog: Any) -> None:
    row = rows_by_item(settlement_rows([], OTHERS, catalog))["storage"]
    assert row["kind"] == "other cost"
    assert row["budget_usd"] == Decimal("12.345")
    assert row["grounds"] == "object storage for predictions, invoice 42"
    assert row["cost_per_accepted_usd"] is None


def test_another_cost_without_grounds_is_refused(catalog: Any) -> None:
    with pytest.raises(UsageError, match="has no grounds"):
        settlement_rows([], [OtherCost("egress", Decimal("3"), " ")], catalog)


def test_another_cost_as_a_binary_float_is_refused(catalog: Any) -> None:
    with pytest.raises(UsageError, match="is not a decimal amount"):
        settlement_rows([], [OtherCost("egress", 3.1, "invoice")], catalog)  # type: ignore[arg-type]


def test_a_configuration_without_a_catalog_price_says_which(catalog: Any) -> None:
    with pytest.raises(CatalogError) as caught:
        settlement_rows([Configuration("b1", "rtx-4090", 3, 1)], [], catalog)
    assert caught.value.message.startswith(
        "no 3-day price for rtx-4090 in the catalog of 2026-09-24"
    )


def test_negative_accepted_corpora_are_refused(catalog: Any) -> None:
    with pytest.raises(UsageError, match="accepted results must be a whole number >= 0"):
        settlement_rows([Configuration("b1", "b200", 7, 1, accepted=-1)], [], catalog)


# --------------------------------------------------------------------------- LibreOffice


def workbook(
    tmp_path: Path,
    catalog: Any,
    configs: list[Configuration],
    tariff_rows: list[dict[str, Any]] | None = None,
) -> tuple[Path, list[dict]]:
    """Render Tariffs + Settlement; return the file and the Settlement rows."""
    data = WorkbookData.empty()
    for row in tariff_rows if tariff_rows is not None else tariffs.tariff_rows(catalog):
        data.append("Tariffs", row)
    rows = settlement_rows(configs, OTHERS, catalog)
    for row in rows:
        data.append("Settlement", row)
    path = tmp_path / "campaign.xlsx"
    render(data, path)
    return path, rows


def cents(amount: Any) -> Any:
    """An amount rounded half-up to the cent (text such as 'undefined' as it is)."""
    if isinstance(amount, (int, float, Decimal)) and not isinstance(amount, bool):
        return Decimal(str(amount)).quantize(CENT, rounding=ROUND_HALF_UP)
    return amount or None


@needs_soffice
@pytest.mark.libreoffice
def test_libreoffice_recalculates_every_cost_to_the_python_cent(
    tmp_path: Path, catalog: Any
) -> None:
    """Each price, budget and cost LibreOffice computes equals the Python value to the cent."""
    path, rows = workbook(tmp_path, catalog, CONFIGS)
    recalculated = sheet_rows(recalculate(path, tmp_path / "lo"), "Settlement")
    assert len(recalculated) == len(rows)
    for python, office in zip(rows, recalculated, strict=True):
        for name in (*MONEY, "cards_per_lot", "cards"):
            assert cents(office[name]) == cents(value(python[name])), (python["item"], name)
    assert [cents(r["cost_per_accepted_usd"]) for r in recalculated] == [
        Decimal("73.33"),
        "undefined",
        None,
        Decimal("3106.50"),
        Decimal("15.71"),
        None,
    ]


@needs_soffice
@pytest.mark.libreoffice
def test_libreoffice_says_no_price_when_the_tariffs_row_is_gone(
    tmp_path: Path, catalog: Any
) -> None:
    """Deleting a Tariffs row shows 'no price in Tariffs' in the formulas, never a 0 budget.

    The cached values still hold the Python budget, so this also shows that
    LibreOffice recalculated rather than keeping them.
    """
    only_rtx = [r for r in tariffs.tariff_rows(catalog) if r["gpu_slug"] == "rtx-4090"]
    path, _ = workbook(tmp_path, catalog, CONFIGS[1:2], tariff_rows=only_rtx)
    assert sheet_rows(path, "Settlement")[0]["budget_usd"] == 2071
    row = sheet_rows(recalculate(path, tmp_path / "lo"), "Settlement")[0]
    assert (row["price_per_lot_usd"], row["budget_usd"], row["cost_per_accepted_usd"]) == (
        "no price in Tariffs",
        "no price in Tariffs",
        "no price in Tariffs",
    )
