"""The memo says which report run it reflects, and validate names a memo older than the
numbers it quotes (issue 33)."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from tests.support import report_campaign
from toolkit import layout
from toolkit.evidence.validate import validate
from toolkit.reporting import build
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _stale(path: Path) -> list[str]:
    return [f.message for f in validate(store.read(path), path) if f.check == "stale-memo"]


def _reported(tmp_path: Path) -> Path:
    return report_campaign.priced_report(tmp_path)


def test_the_memo_names_its_report_run_and_is_current_after_it(tmp_path: Path) -> None:
    path = _reported(tmp_path)
    stamp = store.read(path).forms["Decision"]["report_run"]
    assert stamp.startswith("report of 20")
    assert "; inputs Protocol " in stamp and ", Tariffs " in stamp and ", Ledger " in stamp
    assert _stale(path) == []


def test_a_tariff_changed_in_excel_after_the_report_makes_the_memo_stale(tmp_path: Path) -> None:
    path = _reported(tmp_path)
    stamp = store.read(path).forms["Decision"]["report_run"]
    book = openpyxl.load_workbook(path)  # as a person editing a price in a spreadsheet
    book["Tariffs"].cell(2, layout.TARIFFS.names.index("price_per_lot_usd") + 1).value = 999
    book.save(path)
    when = stamp.split("; inputs ")[0]
    assert _stale(path) == [
        f"the memo reflects the {when}; Tariffs changed since, so the "
        "numbers it quotes may be out of date: run `iteralab report` again"
    ]
    build(path, pngs=False)
    assert _stale(path) == []


def test_sorting_an_input_table_does_not_make_the_memo_stale(tmp_path: Path) -> None:
    path = _reported(tmp_path)
    data = store.read(path)
    data.tables["Rentals"].reverse()
    data.tables["Verification"].reverse()
    store.save(data, path)
    assert _stale(path) == []


def test_report_does_not_state_the_stale_memo_it_rewrites(tmp_path: Path) -> None:
    path = _reported(tmp_path)
    data = store.read(path)
    data.tables["Verification"][0]["checked"] = "ids, format, 40 predictions read"
    store.save(data, path)
    assert len(_stale(path)) == 1
    result, _ = build(path, pngs=False)
    assert [f for f in result.findings if f.check == "stale-memo"] == []
    assert _stale(path) == []
