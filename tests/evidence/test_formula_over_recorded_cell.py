"""A formula typed over an Attempts or Manifest cell is named as a formula: ``=1+1`` over a
measured duration was reported as "now empty" (openpyxl saves no value with a formula), as
if the cell had been cleared (toolkit.workbook.formula_scan, toolkit.evidence.chain).

Real files: a copy of the quick demo campaign of tests/fixtures/layout3_campaign, edited as
openpyxl (or a spreadsheet program) saves it."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import openpyxl
import pytest

from tests.support.paths import FIXTURES
from toolkit import layout
from toolkit.evidence.validate import validate
from toolkit.findings import Finding
from toolkit.workbook import store
from toolkit.workbook.formula_scan import typed_formulas
from toolkit.workbook.model import Formula

pytestmark = pytest.mark.campaign  # reads a whole campaign: not in `make test-fast`

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"
MEASURED = layout.column_letter(layout.ATTEMPTS, "measured_s")


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    return folder / NAME


def _added(path: Path, change: dict[str, str]) -> list[Finding]:
    before = set(validate(store.read(path), path))
    book = openpyxl.load_workbook(path)
    for ref, value in change.items():
        sheet, cell = ref.split("!")
        book[sheet][cell] = value
    book.save(path)
    return [f for f in validate(store.read(path), path) if f not in before]


def test_a_formula_over_a_measured_duration_is_named_as_a_formula(campaign: Path) -> None:
    found = _added(campaign, {f"Attempts!{MEASURED}2": "=1+1"})
    assert [(f.sheet, f.row, f.column, f.check) for f in found] == [
        ("Attempts", 2, "measured_s", "edited"),
        ("Attempts", 2, "measured_s", "formula"),
    ]
    assert found[0].message == (
        "attempt 'a001-b1-fp32-r1-d4b5': measured_s was 6.197434 when recorded (journal), now "
        "the formula =1+1 (a formula typed where the runner writes a value): restore it; "
        "attempt rows change only through `iteralab exclude`"
    )
    assert found[1].message == (
        f"measured_s holds the formula =1+1 in Attempts!{MEASURED}2: iteralab writes a value "
        "there, never a formula: restore the value it wrote (the journal and the .bak.xlsx "
        "keep it)"
    )


def test_a_formula_over_a_manifest_cell_is_named_as_a_formula(campaign: Path) -> None:
    letter = layout.column_letter(layout.MANIFEST, "model_revision")
    found = _added(campaign, {f"Manifest!{letter}2": '="2.0"'})
    edited = [f for f in found if f.check == "edited"]
    assert [(f.sheet, f.row, f.column) for f in edited] == [("Manifest", 2, "model_revision")]
    assert 'now the formula ="2.0" (a formula typed where the runner writes a value)' in (
        edited[0].message
    )


def _sheet_zip(cells: str) -> io.BytesIO:
    handle = io.BytesIO()
    with zipfile.ZipFile(handle, "w") as archive:
        archive.writestr(
            "xl/worksheets/sheet1.xml",
            '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            f'<sheetData><row r="2">{cells}</row></sheetData></worksheet>',
        )
    handle.seek(0)
    return handle


def test_a_formula_filled_down_is_found_in_every_cell_it_fills() -> None:
    """Excel writes a filled-down formula once, the cells below pointing at it."""
    handle = _sheet_zip(
        '<c r="M2"><f t="shared" ref="M2:M3" si="0">L2*2&amp;""</f><v>4</v></c>'
        '<c r="M3"><f t="shared" si="0"/><v>6</v></c>'
        '<c r="N2" t="s"><v>3</v></c>'
    )
    assert typed_formulas(handle, "xl/worksheets/sheet1.xml") == {
        (2, 13): Formula('L2*2&""'),
        (3, 13): Formula('L3*2&""'),
    }
