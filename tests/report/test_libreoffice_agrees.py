"""A real spreadsheet engine agrees with the Python generator (issue 6).

The reported workbook is recalculated by LibreOffice headless with forced
recalculation on load; every computed cell of Summary, Settlement and Schedule
must equal the value the generator cached, to the digits the cell's number
format shows. Under CI (ITERALAB_REQUIRE_LIBREOFFICE=1) a missing LibreOffice
is a failure, never a skip.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.support import demo_rows, report_campaign
from tests.support.recalc import SOFFICE, recalculate
from toolkit import layout
from toolkit.reporting import build

pytestmark = pytest.mark.libreoffice

#: Decimals shown by each column kind's number format (render.NUMBER_FORMATS).
SHOWN = {
    layout.SECONDS: 3,
    layout.NUMBER: 2,
    layout.USD: 2,
    layout.USD_OR_UNDEFINED: 2,
    layout.RATIO: 4,
    layout.INT: 0,
    layout.BYTES: 0,
}
CHECKED = (layout.SUMMARY, layout.SETTLEMENT, layout.SCHEDULE)


@pytest.fixture(autouse=True)
def _libreoffice_present() -> None:
    if SOFFICE is None and os.environ.get("ITERALAB_REQUIRE_LIBREOFFICE"):
        pytest.fail("LibreOffice (soffice) is required here (ITERALAB_REQUIRE_LIBREOFFICE=1)")


def _shown(value: Any, kind: str) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and kind in SHOWN:
        return round(Decimal(repr(value)), SHOWN[kind])
    return value


def _sheet(path: Path, sheet: layout.Sheet) -> list[dict[str, Any]]:
    ws = openpyxl.load_workbook(path, data_only=True)[sheet.name]
    rows = list(ws.iter_rows(values_only=True))
    names = list(rows[0])
    return [
        {n: (None if v == "" else v) for n, v in zip(names, r, strict=False) if n}
        for r in rows[1:]
        if any(v not in (None, "") for v in r)
    ]


def _report(workbook: Path) -> tuple[Path, Path]:
    build(workbook, pngs=False)
    return workbook, recalculate(workbook, workbook.parent / "libreoffice")


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The constructed campaign (failures, exclusion, GPU prices), reported and recalculated."""
    return _report(report_campaign.write(tmp_path_factory.mktemp("campaign") / "campaign.xlsx"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The attempts `iteralab demo` recorded on a real run, reported and recalculated."""
    return _report(demo_rows.workbook(tmp_path_factory.mktemp("demo")))


@pytest.mark.parametrize(
    ("campaign", "sheet"),
    [
        *(("reported", sheet) for sheet in CHECKED),
        ("demo", layout.SUMMARY),
        ("demo", layout.SETTLEMENT),  # the demo has no Schedule rows
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_libreoffice_recalculates_every_computed_cell_to_the_generators_value(
    request: pytest.FixtureRequest, campaign: str, sheet: layout.Sheet
) -> None:
    workbook, recalculated = request.getfixturevalue(campaign)
    ours, theirs = _sheet(workbook, sheet), _sheet(recalculated, sheet)
    assert len(ours) == len(theirs) > 0
    for mine, lo in zip(ours, theirs, strict=True):
        for column in sheet.all_columns:
            assert _shown(lo.get(column.name), column.kind) == _shown(
                mine.get(column.name), column.kind
            ), (sheet.name, mine.get(sheet.names[0]), column.name)


def test_libreoffice_medians_counts_and_costs_are_the_expected_numbers(
    reported: tuple[Path, Path],
) -> None:
    summary = {r["variant_id"]: r for r in _sheet(reported[1], layout.SUMMARY)}
    assert [
        summary["b8-fp32"][k]
        for k in ("attempts", "excluded", "successes", "median_s", "min_s", "max_s")
    ] == [5, 1, 4, 15.3, 14.9, 15.8]
    assert [summary["b4-fp32"][k] for k in ("failed", "median_s")] == [1, 15.75]
    assert summary["b16-fp32"]["median_s"] is None
    assert summary["b16-fp32"]["median_s_reason"].startswith("no data")
    settlement = {r["item"]: r for r in _sheet(reported[1], layout.SETTLEMENT)}
    # One expected output: the forecast is the budget; never a blend with the count.
    assert [
        settlement["b8-b200"][k]
        for k in (
            "budget_usd",
            "accepted_corpora",
            "projected_cost_per_expected_usd",
            "cost_per_accepted_usd",
        )
    ] == [2071, 1, 2071, None]
    # Outside the equal-quality comparison (quality fail; not feasible): no cost compared.
    assert settlement["b8-bf16"]["projected_cost_per_expected_usd"] is None
    assert [
        settlement["b4-fp32"][k]
        for k in ("budget_usd", "accepted_corpora", "projected_cost_per_expected_usd")
    ] == [110, 1, None]
    total = settlement["total incurred (USD)"]
    assert (total["amount"], total["spent_per_accepted"]) == (2181, 2181)
    assert settlement["b8-cpu"]["budget_usd"] is None


def test_a_row_typed_into_attempts_later_enters_the_live_median(
    reported: tuple[Path, Path], tmp_path: Path
) -> None:
    """Adding a row by hand (here with openpyxl, as Excel would) moves the recalculated median."""
    book = openpyxl.load_workbook(reported[0])
    ws = book[layout.ATTEMPTS.name]
    names = [c.value for c in ws[1]]
    row = report_campaign.campaign_attempt("b4-fp32", 3, 14.0, attempt_id="b4-fp32-r3b")
    ws.append([row.get(n) for n in names])
    edited = tmp_path / "edited.xlsx"
    book.save(edited)
    summary = {
        r["variant_id"]: r for r in _sheet(recalculate(edited, tmp_path / "lo"), layout.SUMMARY)
    }
    assert [
        summary["b4-fp32"][k] for k in ("attempts", "successes", "median_s", "min_s", "run_3_s")
    ] == [6, 5, 15.6, 14.0, 14.0]


def test_libreoffice_medians_of_the_real_demo_are_the_medians_of_its_recorded_runs(
    demo: tuple[Path, Path],
) -> None:
    expected = demo_rows.medians()
    summary = {r["variant_id"]: r for r in _sheet(demo[1], layout.SUMMARY)}
    assert {vid: summary[vid]["median_s"] for vid in expected} == expected
    assert all(summary[vid]["successes"] == n for vid, n in demo_rows.successes().items())
