"""A person sorting any table changes no number (issue 33): every cross-sheet link finds its
row by id (INDEX/MATCH on variant_id, rental_id), and the Settlement's totals add rows by
kind and currency, whatever their order.

How the sort is done, and why: LibreOffice headless offers no sort without a UNO bridge (not
installed here), so the test sorts as a spreadsheet program does: every data row of every
table is rewritten in Z-A order of its first column with openpyxl, each formula moved the
way Excel and LibreOffice move it when sorting (relative references shifted by the rows the
formula moved, absolute ones kept: openpyxl's Translator). Filter buttons only hide rows,
and every formula here counts hidden rows alike, so a sort is the harder case. Both engines
(LibreOffice and Gnumeric) then recalculate the original and the sorted copy, and each
table's rows, as the engine computes them, must be the same rows in another order.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.formula.translate import Translator
from openpyxl.worksheet.formula import ArrayFormula

from tests.support import report_campaign
from tests.support.recalc import recalculate, recalculate_gnumeric
from toolkit import layout

pytestmark = pytest.mark.libreoffice
ENGINES = {"libreoffice": recalculate, "gnumeric": recalculate_gnumeric}
TABLES = [s.name for s in layout.SHEETS if s.kind == "table"]


def _priced(folder: Path) -> Path:
    return report_campaign.priced_report(folder)


def _moved(value: Any, origin: str, target: str) -> Any:
    """A cell's content moved from ``origin`` to ``target`` as a sort moves it."""
    if isinstance(value, ArrayFormula):
        text = Translator(value.text, origin=origin).translate_formula(target)
        return ArrayFormula(target, text)
    if isinstance(value, str) and value.startswith("="):
        return Translator(value, origin=origin).translate_formula(target)
    return value


def sort_every_table(source: Path, target: Path) -> dict[str, int]:
    """Write ``source`` with each table's data rows in Z-A order of column A; the rows that
    moved, per sheet."""
    book = openpyxl.load_workbook(source)
    moved = {}
    for name in TABLES:
        ws = book[name]
        width = ws.max_column
        rows = [[ws.cell(r, c) for c in range(1, width + 1)] for r in range(2, ws.max_row + 1)]
        rows = [r for r in rows if any(c.value not in (None, "") for c in r)]
        contents = [[(c.value, c.coordinate, c.number_format) for c in r] for r in rows]
        order = sorted(
            range(len(contents)), key=lambda i: str(contents[i][0][0] or ""), reverse=True
        )
        moved[name] = sum(i != j for i, j in enumerate(order))
        for new_index, old_index in enumerate(order):
            for col, (value, origin, number_format) in enumerate(contents[old_index], start=1):
                cell = ws.cell(2 + new_index, col)
                cell.value = _moved(value, origin, cell.coordinate)
                cell.number_format = number_format
    book.save(target)
    return moved


def _key(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.9g}")  # sums in another order may differ in the last bit
    return None if value == "" else value


def table_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Each table's rows as an engine computed them, in a fixed order."""
    with warnings.catch_warnings():  # Gnumeric writes no default style: harmless here
        warnings.filterwarnings("ignore", "Workbook contains no default style")
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    out = {}
    for name in TABLES:
        width = len(layout.SHEET_BY_NAME[name].names)  # a chart beside may widen the sheet
        rows = [
            tuple(_key(v) for v in row[:width])
            for row in book[name].iter_rows(min_row=2, values_only=True)
        ]
        rows = [r for r in rows if any(v is not None for v in r)]
        out[name] = sorted(rows, key=repr)
    book.close()
    return out


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_sorting_every_table_changes_no_value(tmp_path: Path, engine: str) -> None:
    original = _priced(tmp_path)
    sorted_copy = tmp_path / "sorted" / "priced.xlsx"
    sorted_copy.parent.mkdir()
    moved = sort_every_table(original, sorted_copy)
    # The sort is not vacuous: the tables whose links once went by position moved rows.
    for name in ("Summary", "Settlement", "Verification", "Rentals", "Attempts", "Tariffs"):
        assert moved[name] > 0, name
    before = table_rows(ENGINES[engine](original, tmp_path / "before"))
    after = table_rows(ENGINES[engine](sorted_copy, tmp_path / "after"))
    for name in TABLES:
        assert after[name] == before[name], name
    settlement = {r[0]: r for r in after["Settlement"]}
    amount = layout.SETTLEMENT.names.index("amount")
    assert settlement["total incurred (USD)"][amount] == 2193.5
    errors = [
        v
        for name in TABLES
        for r in after[name]
        for v in r
        if isinstance(v, str) and v.startswith("#") and v.endswith(("!", "?", "A"))
    ]
    assert errors == []
