"""The Settlement's decision rows rank flat plans and metered prices together by what the
schedule costs: a metered on-demand price wins a short schedule, a flat plan a long one; the
metered row holds its price per hour, billed seconds and charge as formulas. A metered figure
labelled EXAMPLE never outranks a quoted flat price, so the seed's flat examples stay."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.support.recalc import needs_soffice, recalculate
from tests.support.report_campaign import campaign, quoted_meter
from toolkit.report.refresh import refresh
from toolkit.workbook import store
from toolkit.workbook.model import Formula


def _with_meter(price: float, comparison_end: str | None = None) -> Any:
    """The report campaign (20 expected corpora, a 96 h Schedule) with a quoted on-demand RTX
    4090 price per second of its own date; ``comparison_end`` stretches the Schedule."""
    data = campaign(expected_outputs=20)
    data.append("Tariffs", quoted_meter(price))
    if comparison_end is not None:
        phase = next(r for r in data.tables["Schedule"] if r["phase"] == "comparison")
        phase["end"] = comparison_end
    return data


def _decision(data: Any, tmp_path: Path, item: str) -> dict[str, Any]:
    refresh(data, tmp_path)
    return next(
        r
        for r in data.tables["Settlement"]
        if r.get("item") == item and r.get("kind") == "configuration"
    )


def _value(cell: Any) -> Any:
    return cell.value if isinstance(cell, Formula) else cell


def test_a_short_schedule_is_priced_at_the_metered_price_to_the_second(tmp_path: Path) -> None:
    row = _decision(_with_meter(0.75), tmp_path, "b8-fp32")
    # 96 h held at 0.75 an hour = 72.00, below the 7-day plan's 110.00.
    assert (row["plan_days"], row["billed_seconds"], row["cards_per_lot"]) == (None, 345_600, 1)
    assert _value(row["price_per_hour"]) == Decimal("0.75")
    assert _value(row["budget_usd"]) == Decimal("72.00")
    assert row["budget_usd"].text.startswith("IF(ISNUMBER(")
    assert "ROUND(" in row["budget_usd"].text
    assert "metered on-demand price per second, 96 h billed per lot" in row["grounds"]
    assert row["catalog_date"] == "2026-12-06"


def test_a_long_schedule_keeps_the_flat_plan_that_is_cheaper_for_it(tmp_path: Path) -> None:
    # 160 h: 0.75 x 160 = 120.00 metered against the 7-day plan's 110.00.
    data = _with_meter(0.75, comparison_end="2026-12-14T01:00+01:00")
    row = _decision(data, tmp_path, "b8-fp32")
    assert (row["plan_days"], row["billed_seconds"]) == (7, None)
    assert _value(row["budget_usd"]) == Decimal("110.00")
    assert "7-day plan" in row["grounds"]


def test_an_example_metered_figure_never_outranks_a_quoted_flat_plan(tmp_path: Path) -> None:
    """The shipped catalog's EXAMPLE metered RTX 4090 price (0.69 an hour: 66.24 for 96 h)
    is not a quote: the decision keeps the catalog's 7-day plan of 110.00 USD."""
    row = _decision(campaign(expected_outputs=20), tmp_path, "b8-fp32")
    assert (row["plan_days"], _value(row["budget_usd"])) == (7, Decimal("110.00"))


@needs_soffice
@pytest.mark.libreoffice
def test_libreoffice_computes_the_metered_decision_to_the_python_cent(tmp_path: Path) -> None:
    data = _with_meter(0.75)
    refresh(data, tmp_path)
    path = tmp_path / "campaign.xlsx"
    store.save(data, path)
    sheet = openpyxl.load_workbook(recalculate(path, tmp_path / "lo"), data_only=True)
    values = list(sheet["Settlement"].iter_rows(values_only=True))
    rows = [dict(zip(values[0], row, strict=True)) for row in values[1:]]
    office = next(r for r in rows if r["item"] == "b8-fp32" and r["kind"] == "configuration")
    assert (office["price_per_hour"], office["billed_seconds"]) == (0.75, 345_600)
    assert Decimal(str(office["budget_usd"])) == Decimal("72")
