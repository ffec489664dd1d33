"""Nothing a person typed vanishes at the next save (#39, High 1): text in a column with no
header, a note beside a form, a value with no field name, a second copy of a form field, a
cell comment, a row added to Summary. Each is named by validate and refused by every save,
as a headed extra column already is (toolkit.workbook.store, toolkit.workbook.comments)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from openpyxl.comments import Comment
from openpyxl.workbook.defined_name import DefinedName

from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.workbook import store, text_sheets

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

THRESHOLD_ROW = layout.PROTOCOL.names.index("threshold") + 2
REVIEWED_ROW = layout.DECISION.names.index("reviewed_by") + 2
BELOW_DECISION = len(layout.DECISION.names) + 2  # the first row under the last field
LAST_VARIANTS = layout.letter(len(layout.VARIANTS.names))
BEYOND_RENTALS = layout.letter(len(layout.RENTALS.names) + 2)
BEYOND_VARIANTS = layout.letter(len(layout.VARIANTS.names) + 1)


def _name(book: openpyxl.Workbook, name: str, refers_to: str, sheet: str = "") -> None:
    names = book[sheet].defined_names if sheet else book.defined_names
    names[name] = DefinedName(name, attr_text=refers_to)


def _edit(path: Path, change: Callable[[openpyxl.Workbook], None]) -> None:
    book = openpyxl.load_workbook(path)
    change(book)
    book.save(path)


CASES: list[tuple[str, Callable[[openpyxl.Workbook], None], str, tuple[str, int | None, str]]] = [
    (
        "headless-variants",
        lambda b: b["Variants"].cell(2, len(layout.VARIANTS.names) + 1, "call the provider"),
        f"Variants!{BEYOND_VARIANTS}2 (a value in a column with no header)",
        ("Variants", 2, ""),
    ),
    (
        "headless-rentals",
        lambda b: b["Rentals"].cell(2, len(layout.RENTALS.names) + 2, "x"),
        f"Rentals!{BEYOND_RENTALS}2 (a value in a column with no header)",
        ("Rentals", 2, ""),
    ),
    (
        "form-note",
        lambda b: b["Protocol"].cell(THRESHOLD_ROW, 4, "agreed with finance"),
        f"Protocol!D{THRESHOLD_ROW} (a value right of the help column)",
        ("Protocol", THRESHOLD_ROW, "threshold"),
    ),
    (
        "no-field-name",
        lambda b: b["Decision"].cell(BELOW_DECISION, 2, "J. Doe, 12 Dec"),
        f"Decision!B{BELOW_DECISION} (a value with no field name in column A)",
        ("Decision", BELOW_DECISION, ""),
    ),
    (
        "second-field",
        lambda b: (
            b["Decision"].cell(BELOW_DECISION + 1, 1, "reviewed_by"),
            b["Decision"].cell(BELOW_DECISION + 1, 2, "second reviewer"),
        ),
        f"a second 'reviewed_by' field at row {BELOW_DECISION + 1} of Decision (the first is row "
        f"{REVIEWED_ROW})",
        ("Decision", BELOW_DECISION + 1, "reviewed_by"),
    ),
    (
        "comment",
        lambda b: setattr(b["Variants"]["B2"], "comment", Comment("invoice disputed", "finance")),
        "the comment 'invoice disputed' on Variants!B2",
        ("Variants", None, ""),
    ),
    (
        "guide-note",
        lambda b: b["Guide"].cell(5, 3, "ask finance first"),
        "Guide!C5 (a value: every save writes this sheet whole)",
        ("Guide", 5, ""),
    ),
    (
        "guide-line-edited",
        lambda b: b["Guide"].cell(6, 1, "2. Variants: ask J. before adding one"),
        "Guide!A6 (a value: every save writes this sheet whole)",
        ("Guide", 6, ""),
    ),
    (
        "overview-note",
        lambda b: b["Overview"].cell(3, 5, "checked by finance"),
        "Overview!E3 (a value: every save writes this sheet whole)",
        ("Overview", 3, ""),
    ),
    (
        "overview-figure-typed-over",
        lambda b: b["Overview"].cell(3, 2, "b1-fp32"),
        "Overview!B3 (a value typed over a figure: every save writes this sheet whole, its "
        "figures as formulas)",
        ("Overview", 3, ""),
    ),
    (
        "overview-formula",
        lambda b: b["Overview"].cell(3, 3, "=B3"),
        "Overview!C3 (a formula: every save writes this sheet whole)",
        ("Overview", 3, ""),
    ),
    (
        "hyperlink",
        lambda b: setattr(b["Variants"]["B2"], "hyperlink", "http://example.com/quote"),
        "the hyperlink on Variants!B2 (to http://example.com/quote)",
        ("Variants", None, ""),
    ),
    (
        "hyperlink-inside",
        lambda b: setattr(b["Protocol"]["B3"], "hyperlink", "#Variants!A1"),
        "the hyperlink on Protocol!B3 (to #Variants!A1)",
        ("Protocol", None, ""),
    ),
    (
        "own-name",
        lambda b: _name(b, "budget_cap", "Tariffs!$C$2"),
        "the defined name 'budget_cap' of the workbook (standing for Tariffs!$C$2)",
        ("", None, ""),
    ),
    (
        "own-name-local",
        lambda b: _name(b, "reviewed", "Decision!$B$3", "Decision"),
        "the defined name 'reviewed' of sheet Decision (standing for Decision!$B$3)",
        ("Decision", None, ""),
    ),
]


@pytest.mark.parametrize(
    ("change", "named", "where"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_typed_content_is_named_by_validate_and_refused_by_every_save(
    runner: CliRunner,
    filled_workbook: Path,
    change: Callable[[openpyxl.Workbook], None],
    named: str,
    where: tuple[str, int | None, str],
) -> None:
    _edit(filled_workbook, change)
    findings = [f for f in validate(store.read(filled_workbook)) if f.check == "kept"]
    assert [(f.sheet, f.row, f.column) for f in findings] == [where]
    assert findings[0].message.startswith(f"{named} is not part of the workbook iteralab keeps")
    before = filled_workbook.read_bytes()
    result = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {filled_workbook}: holds what iteralab does not keep when it saves: {named}; "
        "nothing was written"
    )
    assert filled_workbook.read_bytes() == before


def test_a_duplicate_field_keeps_the_first_value_and_names_both_rows(filled_workbook: Path) -> None:
    """A second threshold two rows below the last field: the finding is at that row and
    names row 7."""
    row = openpyxl.load_workbook(filled_workbook)["Protocol"].max_row + 2

    def twice(book: openpyxl.Workbook) -> None:
        book["Protocol"].cell(row, 1, "threshold")
        book["Protocol"].cell(row, 2, "not a number")

    _edit(filled_workbook, twice)
    data = store.read(filled_workbook)
    assert data.forms["Protocol"]["threshold"] == 0.6  # row 7's, where findings point
    (finding,) = validate(data)
    assert (finding.sheet, finding.row, finding.column, finding.check) == (
        "Protocol",
        row,
        "threshold",
        "kept",
    )
    assert finding.message.startswith(
        f"a second 'threshold' field at row {row} of Protocol (the first is row {THRESHOLD_ROW})"
    )


def test_the_header_notes_iteralab_writes_are_not_typed_comments(filled_workbook: Path) -> None:
    _edit(filled_workbook, lambda book: None)  # an openpyxl round trip keeps them
    assert store.read(filled_workbook).unkept == []


def test_a_row_added_to_summary_is_refused(runner: CliRunner, reported: Path) -> None:
    rows = len(store.read(reported).tables["Summary"])
    _edit(
        reported,
        lambda b: (b["Summary"].cell(rows + 2, 1, "b1-fp32"), b["Summary"].cell(rows + 2, 2, 99)),
    )
    (addition,) = store.read(reported).unkept
    assert str(addition) == (
        f"Summary row {rows + 2} (typed: the report writes every row of this sheet itself)"
    )
    before = reported.read_bytes()
    assert runner.invoke(cli, ["report", str(reported), "--no-png"]).exit_code == 1
    assert reported.read_bytes() == before


NOTES = layout.column_letter(layout.SUMMARY, "notes")


def test_text_typed_over_a_summary_notes_cell_is_named_and_refused(
    runner: CliRunner, reported: Path
) -> None:
    """The report writes the notes as text (no formula to tell them apart): the save records
    a digest of each row's notes, and a read names a cell whose text it did not write."""
    _edit(reported, lambda b: setattr(b["Summary"][f"{NOTES}3"], "value", "invoice disputed"))
    named = (
        f"Summary!{NOTES}3 (text typed over the notes `iteralab report` writes; clear the cell "
        "and the next report writes them again)"
    )
    findings = [f for f in validate(store.read(reported)) if f.check == "kept"]
    assert [(f.sheet, f.row, f.column) for f in findings] == [("Summary", 3, "notes")]
    assert findings[0].message.startswith(f"{named} is not part of the workbook iteralab keeps")
    before = reported.read_bytes()
    attempt = str(openpyxl.load_workbook(reported)["Attempts"]["A2"].value)
    for args in (
        ["report", str(reported), "--no-png"],
        ["exclude", str(reported), attempt, "--reason", "power cut"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 1
        assert result.stderr.splitlines()[0] == (
            f"error: {reported}: holds what iteralab does not keep when it saves: {named}; "
            "nothing was written"
        )
    assert reported.read_bytes() == before


def test_a_cleared_notes_cell_passes_and_the_report_writes_it_again(
    runner: CliRunner, reported: Path
) -> None:
    written = store.read(reported).tables["Summary"]
    row = next(i for i, r in enumerate(written) if r["notes"]) + 2
    _edit(reported, lambda b: setattr(b["Summary"][f"{NOTES}{row}"], "value", None))
    assert store.read(reported).unkept == []
    assert runner.invoke(cli, ["report", str(reported), "--no-png"]).exit_code == 0
    assert store.read(reported).tables["Summary"][row - 2]["notes"] == written[row - 2]["notes"]


def test_the_notes_the_report_wrote_pass_every_later_save(
    runner: CliRunner, reported: Path
) -> None:
    """Kept through a save that does not recompute the Summary (an exclusion) and an openpyxl
    round trip (as Excel saves it): the digests travel with the workbook."""
    _edit(reported, lambda book: None)
    attempt = str(store.read(reported).tables["Attempts"][0]["attempt_id"])
    result = runner.invoke(cli, ["exclude", str(reported), attempt, "--reason", "power cut"])
    assert result.exit_code == 0, result.output
    assert store.read(reported).unkept == []


def test_without_its_seal_the_guide_is_checked_by_place(filled_workbook: Path) -> None:
    """A workbook whose seal a program dropped (or an older iteralab never wrote): a value
    beside the Guide's column is named; an edited line of the Guide cannot be told apart."""

    def edit(book: openpyxl.Workbook) -> None:
        del book.defined_names[text_sheets.NAME]
        book["Guide"].cell(6, 1, "2. Variants: ask J. before adding one")
        book["Guide"].cell(5, 3, "ask finance first")

    _edit(filled_workbook, edit)
    assert [str(a) for a in store.read(filled_workbook).unkept] == [
        "Guide!C5 (a value: every save writes this sheet whole)"
    ]


def test_the_guide_and_overview_a_report_wrote_pass_every_later_save(
    runner: CliRunner, reported: Path
) -> None:
    """An Overview with figures, banners and headline names, after an openpyxl round trip
    (as a spreadsheet program saves it) and a save that rewrites it (an exclusion)."""
    _edit(reported, lambda book: None)
    assert store.read(reported).unkept == []
    attempt = str(store.read(reported).tables["Attempts"][0]["attempt_id"])
    result = runner.invoke(cli, ["exclude", str(reported), attempt, "--reason", "power cut"])
    assert result.exit_code == 0, result.output
    assert store.read(reported).unkept == []


def test_names_a_spreadsheet_program_keeps_for_itself_are_not_a_persons(
    filled_workbook: Path,
) -> None:
    """Excel marks a newer function it saved (``_xlfn.``) and a filter's range (``_xlnm.``)."""

    def edit(book: openpyxl.Workbook) -> None:
        _name(book, "_xlfn.MINIFS", "#NAME?")
        _name(book, "_xlnm._FilterDatabase", "Variants!$A$1:$B$3", "Variants")

    _edit(filled_workbook, edit)
    assert store.read(filled_workbook).unkept == []
