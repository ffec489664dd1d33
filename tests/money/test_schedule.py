"""The access window: union of phases, real elapsed hours, plans covering it (R19-R20)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from click.testing import CliRunner

from tests.support.recalc import needs_soffice, recalculate
from toolkit.cli import cli
from toolkit.errors import UsageError
from toolkit.money import schedule
from toolkit.workbook import store
from toolkit.workbook.model import Formula, WorkbookData
from toolkit.workbook.render import render

PARIS = schedule.rules.parse_zone("Europe/Paris")
COVERAGE_96 = [
    "plan     hours  covers 96 h",
    "3 days   72 h   no (short by 24 h)",
    "7 days   168 h  yes",
    "30 days  720 h  yes",
    "candidates: 7-day and 30-day plans (covering the schedule says nothing about finishing "
    "on time)",
]


def phase(name: str, start: str, end: str) -> schedule.Phase:
    return schedule.make_phase(name, start, end, PARIS)


def test_monday_9_to_friday_9_is_a_96_hour_window(runner: CliRunner) -> None:
    result = runner.invoke(
        cli, ["schedule", "--start", "2026-12-07T09:00", "--end", "2026-12-11T09:00"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "time zone: UTC for times written without an offset (no --tz given)",
        "access window: 2026-12-07T09:00+00:00 to 2026-12-11T09:00+00:00 = 96 h",
        *COVERAGE_96,
    ]


def test_overlapping_phases_are_counted_once() -> None:
    win = schedule.window(
        [
            phase("install", "2026-12-07T09:00", "2026-12-07T12:00"),
            phase("check", "2026-12-07T11:00", "2026-12-07T13:00"),
            phase("comparison", "2026-12-07T11:00", "2026-12-11T09:00"),
        ]
    )
    assert (win.hours, win.overlap_hours, win.span_hours) == (Decimal(96), Decimal(3), Decimal(96))
    assert win.gaps == ()


def test_phases_on_the_command_line_print_their_union(runner: CliRunner) -> None:
    result = runner.invoke(
        cli,
        [
            "schedule",
            "--tz",
            "Europe/Paris",
            "--phase",
            "install=2026-12-07T09:00/2026-12-07T12:00",
            "--phase",
            "comparison=2026-12-07T11:00/2026-12-10T09:00",
            "--phase",
            "export=2026-12-10T09:00/2026-12-11T09:00",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "time zone: Europe/Paris (--tz) for times written without an offset",
        "phase       start                   end                     hours",
        "install     2026-12-07T09:00+01:00  2026-12-07T12:00+01:00  3 h",
        "comparison  2026-12-07T11:00+01:00  2026-12-10T09:00+01:00  70 h",
        "export      2026-12-10T09:00+01:00  2026-12-11T09:00+01:00  24 h",
        "access window: 2026-12-07T09:00+01:00 to 2026-12-11T09:00+01:00 = 96 h (union of the "
        "phases; overlaps of 1 h counted once)",
        *COVERAGE_96,
    ]


def test_a_gap_between_phases_is_named_and_the_plan_covers_the_whole_span() -> None:
    win = schedule.window(
        [
            phase("install", "2026-12-07T09:00", "2026-12-07T12:00"),
            phase("export", "2026-12-10T09:00", "2026-12-11T09:00"),
        ]
    )
    lines = schedule.window_lines(win)
    assert win.hours == Decimal(27)
    assert lines[3:6] == [
        "access window: 27 h (union of the phases)",
        "gap: 2026-12-07T12:00+01:00 to 2026-12-10T09:00+01:00 (69 h) is in no phase; if the "
        "instance stays held, add it as a 'waiting' phase",
        "a plan runs without pause: it must cover 2026-12-07T09:00+01:00 to "
        "2026-12-11T09:00+01:00 = 96 h",
    ]
    assert lines[6:] == COVERAGE_96


def test_a_window_across_the_spring_dst_change_counts_real_hours_and_says_so(
    runner: CliRunner,
) -> None:
    result = runner.invoke(
        cli,
        [
            "schedule",
            "--tz",
            "Europe/Paris",
            "--start",
            "2026-03-27T09:00",
            "--end",
            "2026-03-31T09:00",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == "access window: 2026-03-27T09:00+01:00 to 2026-03-31T09:00+02:00 = 95 h"
    assert lines[2] == (
        "note: 2026-03-27T09:00+01:00 to 2026-03-31T09:00+02:00 crosses a UTC offset change "
        "(daylight saving time): 95 h of real elapsed time, 96 h on the wall clock; plans are "
        "checked against real elapsed hours"
    )


def test_a_window_across_the_autumn_dst_change_is_97_real_hours() -> None:
    win = schedule.window([phase("comparison", "2026-10-23T09:00", "2026-10-27T09:00")])
    assert win.hours == Decimal(97)


def test_offsets_in_the_times_need_no_tz(runner: CliRunner) -> None:
    result = runner.invoke(
        cli, ["schedule", "--start", "2026-12-07T09:00+01:00", "--end", "2026-12-11T08:00Z"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "access window: 2026-12-07T09:00+01:00 to 2026-12-11T08:00+00:00 = 96 h"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--start", "2026-12-11T09:00", "--end", "2026-12-07T09:00"],
            "error: phase 'window' ends at 2026-12-07T09:00+00:00, not after its start "
            "2026-12-11T09:00+00:00",
        ),
        (
            ["--phase", "lunch=2026-12-07T09:00/2026-12-07T10:00"],
            "error: --phase 'lunch=2026-12-07T09:00/2026-12-07T10:00': unknown phase 'lunch'",
        ),
        (
            ["--phase", "install=2026-12-07T09:00"],
            "error: --phase 'install=2026-12-07T09:00': expected NAME=START/END",
        ),
        (
            ["--tz", "Mars/Olympus", "--start", "2026-12-07T09:00", "--end", "2026-12-08T09:00"],
            "error: unknown time zone 'Mars/Olympus' (ZoneInfoNotFoundError)",
        ),
        (
            ["--tz", "Europe/Paris", "--start", "2026-03-29T02:30", "--end", "2026-03-30T09:00"],
            "error: phase 'window' start 2026-03-29T02:30 does not exist in Europe/Paris (clocks go "
            "forward)",
        ),
        (
            ["--tz", "Europe/Paris", "--start", "2026-10-25T02:30", "--end", "2026-10-26T09:00"],
            "error: phase 'window' start 2026-10-25T02:30 happens twice in Europe/Paris (clocks go "
            "back)",
        ),
        (["--start", "2026-12-07T09:00"], "error: --start and --end go together"),
        ([], "error: no phase to compute a window from"),
    ],
)
def test_bad_schedules_exit_2_with_a_clear_error(
    runner: CliRunner, argv: list[str], message: str
) -> None:
    result = runner.invoke(cli, ["schedule", *argv])
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == message


# --------------------------------------------------------------------------- the sheet

PHASES = [
    {"phase": "install", "start": "2026-12-07T09:00+01:00", "end": "2026-12-07T12:00+01:00"},
    {"phase": "comparison", "start": "2026-12-07T11:00+01:00", "end": "2026-12-09T18:00+01:00"},
    {"phase": "check", "start": "2026-12-07T11:00+01:00", "end": "2026-12-07T13:00+01:00"},
    {"phase": "export", "start": "2026-12-10T09:00+01:00", "end": "2026-12-11T09:00+01:00"},
]


def test_iteralab_schedule_reads_the_workbook(runner: CliRunner, tmp_path: Path) -> None:
    data = WorkbookData.empty()
    for row in PHASES:
        data.append("Schedule", row)
    path = tmp_path / "campaign.xlsx"
    store.save(data, path)
    result = runner.invoke(cli, ["schedule", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[5:8] == [
        "access window: 81 h (union of the phases; overlaps of 3 h counted once)",
        "gap: 2026-12-09T18:00+01:00 to 2026-12-10T09:00+01:00 (15 h) is in no phase; if the "
        "instance stays held, add it as a 'waiting' phase",
        "a plan runs without pause: it must cover 2026-12-07T09:00+01:00 to "
        "2026-12-11T09:00+01:00 = 96 h",
    ]


def test_a_bad_schedule_row_names_its_row_and_column() -> None:
    rows = [PHASES[0], {"phase": "export", "start": "2026-12-10T09:00+01:00", "end": None}]
    with pytest.raises(UsageError) as caught:
        schedule.phases_from_sheet(rows, [2, 3])
    assert caught.value.message == "sheet Schedule, row 3, column end: empty"


def cached(rows: list[dict[str, Any]], name: str) -> list[Any]:
    return [r[name].value if isinstance(r[name], Formula) else r[name] for r in rows]


def test_schedule_cells_compute_the_union_in_python() -> None:
    rows = schedule.schedule_cells(PHASES)
    assert cached(rows, "hours") == [3, 55, 2, 24]
    assert cached(rows, "counted_hours") == [3, 54, 0, 24]
    assert cached(rows, "window_hours") == [81, None, None, None]
    assert cached(rows, "span_hours") == [96, None, None, None]
    assert cached(rows, "covering_plans") == ["7-day and 30-day plans", None, None, None]


def test_an_unreadable_row_leaves_the_window_not_computed() -> None:
    rows = schedule.schedule_cells([PHASES[0], dict(PHASES[1], end="soon")])
    assert rows[0]["covering_plans"] == (
        "not computed: row 3: phase 'comparison' end 'soon' is not a date-time"
    )
    assert rows[0]["window_hours"] is None


@pytest.mark.parametrize(
    ("hours", "text"),
    [
        ("72", "3-day, 7-day and 30-day plans"),
        ("72.5", "7-day and 30-day plans"),
        ("168", "7-day and 30-day plans"),
        ("720", "30-day plan"),
        (
            "720.01",
            "none: longer than the 30-day plan (720 h); revise the schedule or price the "
            "extra period explicitly",
        ),
    ],
)
def test_covering_plans_text_at_the_plan_boundaries(hours: str, text: str) -> None:
    assert schedule.covering_text(Decimal(hours)) == text


@needs_soffice
@pytest.mark.libreoffice
def test_libreoffice_computes_the_schedule_cells_as_python(tmp_path: Path) -> None:
    data = WorkbookData.empty()
    rows = schedule.schedule_cells(PHASES)
    for row in rows:
        data.append("Schedule", row)
    path = tmp_path / "campaign.xlsx"
    render(data, path)
    ws = openpyxl.load_workbook(recalculate(path, tmp_path / "lo"), data_only=True)["Schedule"]
    values = list(ws.iter_rows(values_only=True))
    office = [
        dict(zip(values[0], row, strict=True))
        for row in values[1:]
        if any(v is not None for v in row)
    ]
    for name in ("hours", "counted_hours", "window_hours", "span_hours", "covering_plans"):
        python = cached(rows, name)
        got = [r[name] for r in office]
        if name == "covering_plans":
            assert got == python
        else:
            assert [None if v is None else round(Decimal(str(v)), 6) for v in got] == [
                None if v is None else round(Decimal(v), 6) for v in python
            ], name
