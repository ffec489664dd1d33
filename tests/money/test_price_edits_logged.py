"""Tariffs, Rentals and Schedule edited after the first attempt are logged in Audit and named
by validate until logged (#16): prices stay editable, never silently."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.report_campaign import campaign
from toolkit.evidence.validate import sheet_findings
from toolkit.report.refresh import refresh
from toolkit.workbook.model import WorkbookData


def _logged(data: WorkbookData) -> list[str]:
    return [str(r["reason"]) for r in data.tables["Audit"] if r["action"] == "prices"]


def _edits(data: WorkbookData) -> list[tuple[str, int | None, str, str]]:
    return [
        (f.sheet, f.row, f.column, f.message)
        for f in sheet_findings(data)
        if f.check == "edited-after-attempts"
    ]


def test_the_first_report_after_attempts_records_the_prices(tmp_path: Path) -> None:
    data = campaign()
    assert _logged(data) == []
    refresh(data, tmp_path)
    assert _logged(data) == ["prices and schedule as the attempts were set against them"]
    [record] = [r for r in data.tables["Audit"] if r["action"] == "prices"]
    assert json.loads(record["details"])["Rentals"][0]["rental_id"] == "r-4090"
    assert _edits(data) == []
    refresh(data, tmp_path)
    assert len(_logged(data)) == 1  # nothing changed: nothing logged


def test_a_price_edited_afterwards_is_named_then_logged(tmp_path: Path) -> None:
    data = campaign()
    refresh(data, tmp_path)
    data.tables["Tariffs"][0]["price_per_lot_usd"] = 99
    data.tables["Rentals"][1]["amount"] = 2000
    assert _edits(data) == [
        (
            "Tariffs",
            2,
            "price_per_lot_usd",
            "price_per_lot_usd changed after attempts were "
            "recorded (110 -> 99) and is not logged yet: `iteralab report` logs it in Audit (or "
            "undo the edit)",
        ),
        (
            "Rentals",
            3,
            "amount",
            "amount changed after attempts were recorded (empty -> 2000) "
            "and is not logged yet: `iteralab report` logs it in Audit (or undo the edit)",
        ),
    ]
    result = refresh(data, tmp_path)
    assert _logged(data)[-1] == (
        "edited after the first attempt: Tariffs!2 price_per_lot_usd: "
        "110 -> 99; Rentals!3 amount: empty -> 2000"
    )
    assert result.notes[0].startswith("logged in Audit (prices): edited after the first")
    assert _edits(data) == []


def test_a_schedule_phase_added_afterwards_is_one_finding(tmp_path: Path) -> None:
    data = campaign()
    refresh(data, tmp_path)
    data.append(
        "Schedule",
        {"phase": "export", "start": "2026-12-11T09:00+01:00", "end": "2026-12-11T10:00+01:00"},
    )
    [(sheet, row, column, message)] = _edits(data)
    assert (sheet, row, column) == ("Schedule", 4, "")
    assert message.startswith("a row was added after attempts were recorded (empty -> {")
