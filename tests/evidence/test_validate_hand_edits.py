"""What `validate` says about a workbook or a corpus edited by hand is what the other commands
then do: text in a timing leaves the report without a traceback, the toolkit's own
'incomplete' total validates, and a catalog date, a corpus or an addition that a later command
refuses is a finding first (and stops lock and amend where it stops run)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit import layout
from toolkit.cli import cli
from toolkit.report import summary
from toolkit.workbook import store

MEASURED = layout.column_letter(layout.ATTEMPTS, "measured_s")
CATALOG_DATE = layout.column_letter(layout.TARIFFS, "catalog_date")


def _findings(runner: CliRunner, workbook: Path) -> list[dict[str, object]]:
    result = runner.invoke(cli, ["validate", str(workbook), "--json"])
    findings: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return findings


def _edit(workbook: Path, sheet: str, cell: str, value: object) -> None:
    """Type ``value`` in ``sheet!cell`` as a person does in a spreadsheet program."""
    book = openpyxl.load_workbook(workbook)
    book[sheet][cell] = value
    book.save(workbook)


# --------------------------------------------------------------- text in measured_s


def test_text_in_measured_s_enters_none_of_the_timings() -> None:
    data = report_campaign.campaign()
    mine = [
        a
        for a in data.tables["Attempts"]
        if a["variant_id"] == "b1-fp32" and a["status"] == "completed"
    ]
    for seed, row in enumerate(mine, start=1):
        row["seed"] = seed
    mine[0]["measured_s"] = "fast"

    stats = next(s for s in summary.variant_stats(data) if s.variant_id == "b1-fp32")

    assert stats.runs == (40.8, 41.5, 40.9, 41.1)
    assert mine[0]["repetition"] not in stats.by_repetition
    assert sorted(stats.by_seed) == [2, 3, 4, 5]


def test_report_states_text_in_measured_s_as_a_finding_without_a_traceback(
    runner: CliRunner, tmp_path: Path
) -> None:
    workbook = report_campaign.write(tmp_path / "campaign.xlsx")
    row = next(
        i
        for i, a in enumerate(store.read(workbook).tables["Attempts"], start=2)
        if a["attempt_id"] == "b1-fp32-r1"
    )
    _edit(workbook, "Attempts", f"{MEASURED}{row}", "fast")

    result = runner.invoke(cli, ["report", str(workbook), "--no-png"])

    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert (
        f"warning: Attempts!{row} measured_s: measured_s must be a duration in seconds "
        "(>= 0); found 'fast'\n"
    ) in result.stderr
    b1 = next(r for r in store.read(workbook).tables["Summary"] if r["variant_id"] == "b1-fp32")
    assert b1["median_s"] == 41.0  # 40.8, 41.5, 40.9, 41.1: the text is not a duration


# --------------------------------------------------------------- the 'incomplete' total


def test_the_incomplete_total_the_report_writes_validates(
    runner: CliRunner, tmp_path: Path
) -> None:
    data = report_campaign.campaign()
    data.tables["Rentals"][0]["billing"] = "hourly"  # metered: no amount typed yet
    workbook = tmp_path / "campaign.xlsx"
    store.save(data, workbook)

    report = runner.invoke(cli, ["report", str(workbook), "--no-png"])

    assert report.exit_code == 0, report.output
    totals = [r for r in store.read(workbook).tables["Settlement"] if r["kind"] == "total incurred"]
    assert [r["amount"] for r in totals] == ["incomplete"]
    assert [f for f in _findings(runner, workbook) if f["sheet"] == "Settlement"] == []


def test_a_typed_amount_still_refuses_the_text_incomplete(
    runner: CliRunner, tmp_path: Path
) -> None:
    workbook = report_campaign.write(tmp_path / "campaign.xlsx")
    amount = layout.column_letter(layout.RENTALS, "amount")
    _edit(workbook, "Rentals", f"{amount}2", "incomplete")

    found = [
        (f["sheet"], f["row"], f["column"], f["message"])
        for f in _findings(runner, workbook)
        if f["check"] == layout.MONEY
    ]

    assert found == [
        ("Rentals", 2, "amount", "amount must be an amount (>= 0); found 'incomplete'")
    ]


# --------------------------------------------------------------- Tariffs catalog_date


@pytest.mark.parametrize("typed", ["31/02/2026", "2026-02-31", "2026-9-24"])
def test_validate_names_a_catalog_date_the_tariff_rules_refuse(
    runner: CliRunner, tmp_path: Path, typed: str
) -> None:
    workbook = report_campaign.write(tmp_path / "campaign.xlsx")
    _edit(workbook, "Tariffs", f"{CATALOG_DATE}4", typed)

    found = [f for f in _findings(runner, workbook) if f["check"] == "date"]

    assert found == [
        {
            "sheet": "Tariffs",
            "row": 4,
            "column": "catalog_date",
            "check": "date",
            "message": f"Tariffs!{CATALOG_DATE}4 catalog_date: {typed!r} is not a date YYYY-MM-DD: "
            "write the snapshot's date, e.g. 2026-09-24, typed as text; until then "
            "`iteralab report` prices nothing from Tariffs",
        }
    ]


def test_the_shipped_catalog_dates_have_no_finding(runner: CliRunner, tmp_path: Path) -> None:
    workbook = report_campaign.write(tmp_path / "campaign.xlsx")
    assert [f for f in _findings(runner, workbook) if f["sheet"] == "Tariffs"] == []


# --------------------------------------------------------------- the corpus


DUPLICATE_ID = '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n'


def test_validate_reads_the_corpus_as_the_runner_does(
    runner: CliRunner, filled_workbook: Path
) -> None:
    (filled_workbook.parent / "corpus.jsonl").write_text(DUPLICATE_ID, encoding="utf-8")

    found = [
        (f["sheet"], f["row"], f["column"], f["check"], f["message"])
        for f in _findings(runner, filled_workbook)
    ]

    corpus_file = filled_workbook.parent / "corpus.jsonl"
    assert found == [
        (
            "Protocol",
            layout.PROTOCOL.names.index("corpus_path") + 2,
            "corpus_path",
            "corpus-file",
            f"the corpus does not read: {corpus_file}: line 2: "
            "duplicate id 'a' (first on line 1); ids identify inputs: make each one "
            "unique, then validate again",
        )
    ]


def test_lock_refuses_a_corpus_the_runner_refuses(runner: CliRunner, filled_workbook: Path) -> None:
    (filled_workbook.parent / "corpus.jsonl").write_text(DUPLICATE_ID, encoding="utf-8")
    before = filled_workbook.read_bytes()

    result = runner.invoke(cli, ["lock", str(filled_workbook)])

    assert result.exit_code == 1
    assert "cannot lock: Protocol/Variants have 1 finding(s)" in result.stderr
    assert "line 2: duplicate id 'a' (first on line 1)" in result.stderr
    assert filled_workbook.read_bytes() == before


def test_amend_refuses_a_corpus_path_that_names_no_file(
    runner: CliRunner, filled_workbook: Path
) -> None:
    assert runner.invoke(cli, ["lock", str(filled_workbook)]).exit_code == 0
    row = layout.PROTOCOL.names.index("corpus_path") + 2
    _edit(filled_workbook, "Protocol", f"B{row}", "nope.jsonl")
    before = filled_workbook.read_bytes()

    result = runner.invoke(cli, ["amend", str(filled_workbook), "--reason", "x"])

    assert result.exit_code == 1
    assert (
        f"  Protocol!{row} corpus_path: corpus_path 'nope.jsonl' resolves to "
        f"{filled_workbook.parent / 'nope.jsonl'}, which does not exist"
    ) in result.stderr
    assert filled_workbook.read_bytes() == before


# --------------------------------------------------------------- what a save would drop


def _add_sheet(book: openpyxl.Workbook) -> None:
    book.create_sheet("vendor quote")["A1"] = "B200 quote: 2,071 USD for 7 days"


def _add_column(book: openpyxl.Workbook) -> None:
    ws = book["Variants"]
    ws.cell(row=1, column=ws.max_column + 1, value="my note")


def _add_form_row(book: openpyxl.Workbook) -> None:
    ws = book["Protocol"]
    ws.cell(row=ws.max_row + 1, column=1, value="reviewer")
    ws.cell(row=ws.max_row, column=2, value="J. Doe")


@pytest.mark.parametrize(
    ("add", "place", "named"),
    [
        (_add_sheet, ("vendor quote", None, ""), "sheet 'vendor quote'"),
        (
            _add_column,
            ("Variants", 1, "my note"),
            f"column 'my note' of Variants ({layout.letter(len(layout.VARIANTS.names) + 1)}1)",
        ),
        (
            _add_form_row,
            ("Protocol", len(layout.PROTOCOL.names) + 2, "reviewer"),
            f"row {len(layout.PROTOCOL.names) + 2} ('reviewer') of Protocol",
        ),
    ],
)
def test_validate_names_what_every_save_would_refuse(
    runner: CliRunner,
    filled_workbook: Path,
    add: Callable[[openpyxl.Workbook], None],
    place: tuple[str, int | None, str],
    named: str,
) -> None:
    book = openpyxl.load_workbook(filled_workbook)
    add(book)
    book.save(filled_workbook)

    found = [
        ((f["sheet"], f["row"], f["column"]), f["message"])
        for f in _findings(runner, filled_workbook)
        if f["check"] == "kept"
    ]

    assert found == [
        (
            place,
            f"{named} is not part of the workbook iteralab keeps: every "
            "command that saves (report, run, exclude, amend) refuses the workbook "
            "while it is there; move it to a file beside the workbook (or into a "
            "variant's description or the Decision memo), or remove it",
        )
    ]
