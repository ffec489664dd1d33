"""The demo's money rests on EXAMPLE figures, and says so wherever a cost is shown: the
Settlement's cells, report.md, both charts (issue 33). One rule: a row whose grounds or source
say EXAMPLE."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest

from tests.support import demo_rows
from toolkit import layout
from toolkit.report import charts
from toolkit.reporting import build


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("demo")
    path = demo_rows.workbook(folder)
    result, _ = build(path, pngs=False)
    return path, result


def _shown(path: Path, item: str, column: str) -> str:
    ws = openpyxl.load_workbook(path)[layout.SETTLEMENT.name]
    row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == item)
    return str(ws.cell(row, layout.SETTLEMENT.names.index(column) + 1).number_format)


def test_every_settlement_cost_of_the_demo_shows_example(demo: tuple[Path, object]) -> None:
    path, _ = demo
    for item, column in (
        ("b8-fp32", "budget_usd"),
        ("b8-fp32", "projected_cost_per_expected_usd"),
        ("demo-rental", "amount"),
        ("total incurred (USD)", "amount"),
    ):
        assert _shown(path, item, column) == '#,##0.00" USD EXAMPLE"', (item, column)


def test_report_md_marks_the_same_amounts(demo: tuple[Path, object]) -> None:
    path, _ = demo
    text = (path.parent / f"{path.stem}_report" / "report.md").read_text(encoding="utf-8")
    assert "| total incurred (USD) | total incurred |  | 35.00 USD EXAMPLE |" in text
    assert (
        "| 35.00 USD EXAMPLE | 1 |  | 35.00 USD per expected corpus (forecast; EXAMPLE "
        "figures) |" in text
    )


def test_both_cost_charts_name_the_example_provider_plan_and_date(
    demo: tuple[Path, object],
) -> None:
    path, result = demo
    with zipfile.ZipFile(path) as z:
        xml = "".join(z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/"))
    note = "EXAMPLE figures: shipped catalog; 7-day plans; catalog of 2026-09-24"
    assert note in xml
    assert charts.costs_note(result.costs) == note  # type: ignore[attr-defined]
