"""Attempts that ran outside the rental that pays for them are a finding (issue 33)."""

from __future__ import annotations

from tests.support.report_campaign import campaign
from toolkit.evidence.validate import validate
from toolkit.workbook.model import WorkbookData


def _window_findings(data: WorkbookData) -> list[tuple[str, int | None, str | None, str]]:
    return [
        (f.sheet, f.row, f.column, f.message) for f in validate(data) if f.check == "rental-window"
    ]


def test_attempts_inside_their_rental_raise_nothing() -> None:
    assert _window_findings(campaign()) == []


def test_attempts_before_the_rental_start_are_named_on_the_rental_row() -> None:
    data = campaign()
    data.tables["Rentals"][0]["start"] = "2026-12-09T09:00+01:00"  # r-4090, after the runs
    findings = _window_findings(data)
    assert len(findings) == 1
    sheet, row, column, message = findings[0]
    assert (sheet, row, column) == ("Rentals", 2, "start")
    assert message.startswith("attempt b1-fp32-r1 and ")
    assert (
        "of rental 'r-4090' started before the rental's start (2026-12-09T09:00+01:00), "
        "the first at 2026-12-08T10:00+01:00: they ran on a machine this rental did not "
        "pay for"
    ) in message


def test_attempts_after_the_rental_end_are_named_on_its_end() -> None:
    data = campaign()
    data.tables["Rentals"][1]["end"] = "2026-12-08T09:30+01:00"  # r-b200, before its runs
    findings = _window_findings(data)
    assert [(s, r, c) for s, r, c, _ in findings] == [("Rentals", 3, "end")]
    assert "started after the rental's end (2026-12-08T09:30+01:00)" in findings[0][3]
