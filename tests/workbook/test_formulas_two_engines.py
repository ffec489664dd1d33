"""Every formula the toolkit writes computes the same in LibreOffice and in Gnumeric as the
Python generator cached (B4): Gnumeric is as strict as Excel where LibreOffice is lenient.

Each workbook CI builds (the template, the example campaign, reported campaigns with
failures, exclusions, no data, and the recorded demo) is recalculated by each engine; every
formula cell is compared with its cached value and a difference names the sheet, the cell,
the formula and both values.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from tests.support import demo_rows, report_campaign
from tests.support.builders import filled
from tests.support.paths import ROOT, SAMPLES
from tests.support.recalc import ENGINES, differences, formula_cells
from toolkit.evidence import locking
from toolkit.reporting import build
from toolkit.workbook import store

pytestmark = pytest.mark.libreoffice


def _template(folder: Path) -> Path:
    return Path(shutil.copy(ROOT / "workbook_template.xlsx", folder / "template.xlsx"))


def _example(folder: Path) -> Path:
    return Path(shutil.copy(SAMPLES / "example_campaign.xlsx", folder / "example.xlsx"))


def _reported(folder: Path) -> Path:
    """Interrupted and excluded attempts, several variants, prices and a schedule."""
    path = report_campaign.write(folder / "campaign.xlsx")
    build(path, pngs=False)
    return path


def _money(folder: Path) -> Path:
    """Every incurred case: a typed rental amount, a metered rental without one (an incomplete
    total), other costs in two currencies, a variant not yet confirmed, lots grown for the
    deadline."""
    data = report_campaign.campaign(expected_outputs=20_000)
    data.tables["Rentals"][0]["amount"] = 104.5
    data.append("Rentals", dict(report_campaign.METERED_RENTAL))
    data.append(
        "Settlement",
        {
            "item": "storage",
            "kind": "other cost",
            "amount": 12.5,
            "currency": "USD",
            "grounds": "invoice S-42",
        },
    )
    data.append(
        "Settlement",
        {
            "item": "labour",
            "kind": "other cost",
            "amount": 300,
            "currency": "EUR",
            "grounds": "contract 7",
        },
    )
    data.tables["Verification"] = data.tables["Verification"][1:]
    path = folder / "money.xlsx"
    store.save(data, path)
    build(path, pngs=False)
    return path


def _resumed(folder: Path) -> Path:
    """A configuration relying on its resume variant (R13): the Settlement adds both
    variants' campaign_s."""
    path = folder / "resumed.xlsx"
    store.save(report_campaign.campaign(resume=True), path)
    build(path, pngs=False)
    return path


def _providers(folder: Path) -> Path:
    """Tariffs of three providers, two on one date for one plan, one in EUR: the lookups
    match the provider too (an empty provider cell included), a EUR rental is priced from
    its provider's EUR snapshot."""
    data = report_campaign.campaign()
    for provider, date, slug, cards, price, currency in (
        ("IteraGPU", "2026-09-24", "rtx-4090", 1, 100.0, "USD"),
        ("Example Cloud EU", "2026-11-20", "rtx-4090", 1, 104.0, "EUR"),
        ("Example Cloud EU", "2026-11-20", "b200", 2, 1930.0, "EUR"),
    ):
        data.append(
            "Tariffs",
            {
                "catalog_date": date,
                "gpu_slug": slug,
                "gpu_name": slug,
                "cards_per_lot": cards,
                "plan_days": 7,
                "price_per_lot_usd": price,
                "source": "example figure",
                "provider": provider,
                "currency": currency,
            },
        )
    data.append(
        "Rentals",
        {
            "rental_id": "r-eu",
            "provider": "Example Cloud EU",
            "gpu_slug": "rtx-4090",
            "cards_per_lot": 1,
            "lots": 2,
            "billing": "flat-7d",
            "market": "on-demand",
            "currency": "EUR",
        },
    )
    path = folder / "providers.xlsx"
    store.save(data, path)
    build(path, pngs=False)
    return path


def _priced(folder: Path) -> Path:
    """As a finance reviewer prices it (issue 33): 20 expected outputs, a EUR snapshot and
    rental, a ledger line that differs, a billing line recorded as another cost."""
    return report_campaign.priced_report(folder)


def _no_data(folder: Path) -> Path:
    """Locked, no attempt yet: every variant says no data."""
    data = filled()
    locking.lock(data)
    path = folder / "empty.xlsx"
    store.save(data, path)
    build(path, pngs=False)
    return path


def _demo(folder: Path) -> Path:
    path = demo_rows.workbook(folder)
    build(path, pngs=False)
    return path


WORKBOOKS = {
    "template": _template,
    "example": _example,
    "reported": _reported,
    "money": _money,
    "resumed": _resumed,
    "providers": _providers,
    "priced": _priced,
    "no-data": _no_data,
    "demo": _demo,
}
#: Formula cells each workbook holds at least: the check is not vacuous.
MINIMUM_FORMULAS = {
    "template": 0,
    "example": 0,
    "reported": 150,
    "money": 150,
    "resumed": 150,
    "providers": 150,
    "priced": 150,
    "no-data": 20,
    "demo": 60,
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("name", list(WORKBOOKS))
def test_every_formula_cell_recalculates_to_its_cached_value(
    tmp_path: Path, engine: str, name: str
) -> None:
    path = WORKBOOKS[name](tmp_path)
    formulas = formula_cells(path)
    assert len(formulas) >= MINIMUM_FORMULAS[name]
    if name in ("priced", "money", "reported"):  # the Overview's figures are formulas too
        assert sum(sheet == "Overview" for sheet, _ in formulas) >= 10
    assert differences(path, engine, tmp_path / engine, formulas) == []


@pytest.mark.parametrize("name", ["template", "reported", "priced", "demo"])
def test_no_formula_needs_array_entry(tmp_path: Path, name: str) -> None:
    """An old-style array formula ({=...}) edited without Ctrl+Shift+Enter computes another
    value: iteralab writes none, so every formula can be edited as typed."""
    path = WORKBOOKS[name](tmp_path)
    book = openpyxl.load_workbook(path)
    cells = [cell for ws in book.worksheets for row in ws.iter_rows() for cell in row]
    arrays = [
        f"{c.parent.title}!{c.coordinate}" for c in cells if isinstance(c.value, ArrayFormula)
    ]
    assert arrays == []
    assert (
        sum(isinstance(c.value, str) and c.value.startswith("=") for c in cells)
        >= (MINIMUM_FORMULAS[name])
    )


def test_a_eur_rental_shows_its_price_per_lot_in_eur_never_under_a_usd_heading(
    tmp_path: Path,
) -> None:
    rows = {r["item"]: r for r in store.read(_providers(tmp_path)).tables["Settlement"]}
    eu = rows["r-eu"]
    assert (float(eu["price_per_lot"]), eu["currency"], float(eu["amount"])) == (
        104.0,
        "EUR",
        208.0,
    )
    assert eu["price_per_lot_usd"] is None and eu["budget_usd"] is None
