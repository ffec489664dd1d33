"""A hostile campaign's tampering with the journal and the Audit sheet is named (#39, High 2
and 5): a forged journal record, an emptied or thinned journal, deleted Audit rows, and the
campaign head a reviewer keeps outside the folder (toolkit.evidence.journal, audit_chain,
anchor; `iteralab verify`).

Real files throughout: a copy of a quick demo campaign (tests/fixtures/layout3_campaign,
reported once so that it is in this layout, its Audit rows sealed), edited as a person or a
script edits it (openpyxl, a text editor's append)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from tests.support.paths import FIXTURES, SAMPLES
from toolkit.cli import cli
from toolkit.evidence import journal
from toolkit.evidence.anchor import anchor_path
from toolkit.evidence.audit_chain import campaign_head
from toolkit.evidence.validate import validate
from toolkit.findings import Finding
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"


@pytest.fixture(scope="module")
def reported_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo") / "campaign"
    shutil.copytree(FIXTURE, folder)
    shutil.copy(SAMPLES / "calibration.jsonl", folder / "calibration.jsonl")
    result = CliRunner().invoke(cli, ["report", str(folder / NAME), "--no-png"])
    assert result.exit_code == 0, result.output
    return folder


#: What the fixture campaign's copy already shows (a rule added after it was recorded):
#: each test looks at what its tampering adds.
BASELINE: set[Finding] = set()


@pytest.fixture
def book(reported_copy: Path, tmp_path: Path) -> Path:
    """A reported campaign of 6 attempts; Audit rows lock, amend, prices."""
    folder = tmp_path / "campaign"
    shutil.copytree(reported_copy, folder)
    path = folder / NAME
    if not BASELINE:
        BASELINE.update(validate(store.read(path), path) or [Finding("", None, "", "", "")])
    assert not [f for f in _found(path) if f.sheet in ("Attempts", "Audit")]
    return path


def _found(path: Path) -> list[Finding]:
    """The findings of ``path`` beyond the fixture's own."""
    return [f for f in validate(store.read(path), path) if f not in BASELINE]


def _checks(path: Path) -> list[tuple[str, int | None, str, str]]:
    return [(f.sheet, f.row, f.column, f.check) for f in _found(path)]


def _delete_row(path: Path, sheet: str, row: int) -> None:
    book = openpyxl.load_workbook(path)
    book[sheet].delete_rows(row)
    book.save(path)


def _set(path: Path, sheet: str, cell: str, value: object) -> None:
    book = openpyxl.load_workbook(path)
    book[sheet][cell] = value
    book.save(path)


def _lines(path: Path) -> list[str]:
    return journal.journal_path(path).read_text(encoding="utf-8").splitlines()


def test_a_forged_record_appended_to_the_journal_is_not_ingested_and_is_named(
    book: Path, runner: CliRunner
) -> None:
    """A new id and a copied predictions file: no start line of it, so never sealed."""
    genuine = journal.read(book)[0]
    forged = json.loads(json.dumps(genuine))
    forged["attempt"]["attempt_id"] = "a099-b1-fp32-r9-forged"
    forged["attempt"]["measured_s"] = 0.001
    with journal.journal_path(book).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(forged) + "\n")
    line = len(_lines(book))
    result = runner.invoke(cli, ["ingest", str(book)])
    assert result.exit_code == 0, result.output
    assert "a099-b1-fp32-r9-forged" not in {
        r["attempt_id"] for r in store.read(book).tables["Attempts"]
    }
    (finding,) = _found(book)
    assert (finding.sheet, finding.check) == ("Attempts", "journal")
    assert finding.message == (
        f"example_campaign.journal.jsonl: line {line}: attempt 'a099-b1-fp32-r9-forged' has no "
        "start line before it (or a record already used it): `iteralab run` writes a start "
        "before every attempt and one record after it, so this record was added by hand and "
        "is not ingested; remove that line"
    )


def test_a_second_record_for_one_start_is_refused(book: Path) -> None:
    """One start, one slot: the same attempt's record appended again with other numbers."""
    copy = json.loads(json.dumps(journal.read(book)[0]))
    copy["attempt"]["measured_s"] = 0.5
    with journal.journal_path(book).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(copy) + "\n")
    assert [r["attempt"].get("measured_s") for r in journal.read(book)][0] != 0.5
    assert _checks(book) == [("Attempts", None, "attempt_id", "journal")]


def test_an_emptied_journal_is_named_for_every_sealed_row(book: Path) -> None:
    journal.journal_path(book).write_bytes(b"")
    assert _checks(book) == [("Attempts", row, "attempt_id", "journal") for row in range(2, 8)]
    message = _found(book)[0].message
    first = store.read(book).tables["Attempts"][0]["attempt_id"]
    assert message == (
        f"attempt {first!r} is sealed in this sheet but its record is not in the journal: the "
        "journal's line was deleted or the journal replaced, so the row cannot be checked "
        "against what the runner wrote; restore the journal from a copy of the campaign "
        "folder (the row itself is kept)"
    )


def test_deleting_the_journal_lines_of_sealed_attempts_is_named(book: Path) -> None:
    lines = _lines(book)
    kept = [line for line in lines if '"a001-' not in line or "attempt-start" in line]
    assert len(kept) == len(lines) - 1
    journal.journal_path(book).write_text("\n".join(kept) + "\n", encoding="utf-8")
    assert [c for c in _checks(book) if c[0] == "Attempts"] == [
        ("Attempts", 2, "attempt_id", "journal")
    ]


def test_deleting_the_audit_prices_row_then_changing_a_price_is_named_and_not_sealed_over(
    book: Path, runner: CliRunner
) -> None:
    audit = store.read(book).tables["Audit"]
    assert [r["action"] for r in audit] == ["lock", "amend", "prices"]
    _delete_row(book, "Audit", 4)
    _set(book, "Tariffs", "G2", 3)  # the 7-day plan's price, 35 before
    expected = [("Audit", None, "row_sha256", "anchor")]
    assert [c for c in _checks(book) if c[0] == "Audit"] == expected
    anchor = anchor_path(book).read_bytes()
    assert runner.invoke(cli, ["report", str(book), "--no-png"]).exit_code == 0
    assert anchor_path(book).read_bytes() == anchor  # the anchor only moves forward
    assert [c for c in _checks(book) if c[0] == "Audit"] == expected


def test_a_deleted_audit_row_above_others_breaks_their_chain(book: Path) -> None:
    _delete_row(book, "Audit", 3)  # the amendment
    assert ("Audit", 3, "row_sha256", "chain") in _checks(book)


def test_deleting_the_exclusion_row_and_readmitting_the_attempt_is_named(
    book: Path, runner: CliRunner
) -> None:
    attempt = store.read(book).tables["Attempts"][0]["attempt_id"]
    assert (
        runner.invoke(cli, ["exclude", str(book), attempt, "--reason", "host rebooted"]).exit_code
        == 0
    )
    _delete_row(book, "Audit", 5)
    _set(book, "Attempts", "A2", store.read(book).tables["Attempts"][0]["attempt_id"])
    book_x = openpyxl.load_workbook(book)
    sheet = book_x["Attempts"]
    header = [c.value for c in sheet[1]]
    sheet.cell(2, header.index("excluded") + 1).value = "no"
    sheet.cell(2, header.index("exclusion_reason") + 1).value = None
    book_x.save(book)
    assert ("Audit", None, "row_sha256", "anchor") in _checks(book)


def test_report_and_decision_memo_print_the_campaign_head(book: Path) -> None:
    data = store.read(book)
    head = campaign_head(data)
    report = (book.parent / "example_campaign_report" / "report.md").read_text(encoding="utf-8")
    assert f"Campaign head: `{head}`" in report
    assert f"campaign head: {head} " in data.forms["Decision"]["draft"]


def test_verify_accepts_the_current_and_an_earlier_head(book: Path, runner: CliRunner) -> None:
    head = campaign_head(store.read(book))
    result = runner.invoke(cli, ["verify", str(book), "--head", head])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"campaign head: {head} (6 attempt row(s), 3 Audit row(s))",
        "the kept head is this workbook's current state",
    ]
    attempt = store.read(book).tables["Attempts"][0]["attempt_id"]
    assert (
        runner.invoke(cli, ["exclude", str(book), attempt, "--reason", "host rebooted"]).exit_code
        == 0
    )
    result = runner.invoke(cli, ["verify", str(book), "--head", head])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1] == (
        "the kept head names this workbook's first 6 attempt row(s) and 3 Audit row(s), "
        "unchanged; 0 attempt row(s) and 1 Audit row(s) were added since"
    )


def test_verify_refuses_a_head_the_workbook_no_longer_holds(book: Path, runner: CliRunner) -> None:
    """A folder re-sealed with the toolkit's own functions verifies inside; the kept head
    does not."""
    head = campaign_head(store.read(book))
    from toolkit.evidence import audit_chain

    data = store.read(book)
    data.tables["Audit"].pop()  # the prices row, then the Audit re-sealed as a forger would
    for row in data.tables["Audit"]:
        row["row_sha256"] = None
    data.layout_version = audit_chain.SINCE - 1
    audit_chain.seal_older_rows(data)
    store.save(data, book)
    anchor_path(book).unlink()
    result = runner.invoke(cli, ["verify", str(book), "--head", head])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {book}: no state of this workbook has the head {head}: its attempt or Audit "
        "rows were rewritten (or re-sealed) since that head was taken, or it is another "
        "campaign's"
    )


def test_a_torn_last_line_of_an_attempt_the_workbook_holds_gets_no_made_up_record(
    book: Path,
) -> None:
    from toolkit.runner import lost  # one rule for run --resume, ingest and report

    whole = journal.journal_path(book).read_bytes()
    last = whole.rindex(b"\n", 0, len(whole) - 1) + 1
    journal.journal_path(book).write_bytes(whole[: last + (len(whole) - last) // 2])
    torn_id = store.read(book).tables["Attempts"][-1]["attempt_id"]
    assert torn_id in {s["attempt_id"] for s in journal.unfinished(book)}
    assert lost.record_lost_attempts(book) == []  # ingest and report
    assert lost.journal_interrupted(book, journal.unfinished(book)) == []  # run's prepare
    assert journal.journal_path(book).read_bytes() == whole[: last + (len(whole) - last) // 2]
    (finding,) = _found(book)
    assert (finding.row, finding.check) == (7, "journal")
    assert finding.message.startswith(
        f"attempt {torn_id!r} is sealed in this sheet but its record is not in the journal "
        "(example_campaign.journal.jsonl: line "
    )


def test_a_merge_stopped_before_its_save_is_finished_and_logged_by_the_next(
    book: Path, tmp_path: Path, runner: CliRunner
) -> None:
    """It said '8 already' (the workbook held 6) and the merge's Audit row was lost."""
    other = tmp_path / "other"
    shutil.copytree(book.parent, other)
    last = store.read(book).tables["Attempts"][-1]["attempt_id"]
    lines = _lines(book)
    kept = [line for line in lines if f'"{last}"' not in line]
    assert len(kept) == len(lines) - 2  # its start and its record
    journal.journal_path(book).write_text("\n".join(kept) + "\n", encoding="utf-8")
    from toolkit import editing

    with editing.change(book, refresh_derived=False) as edit:
        edit.data.tables["Attempts"].pop()
    # The killed merge: the other copy's start and record appended here, no save.
    theirs = [line for line in lines if f'"{last}"' in line]
    with journal.journal_path(book).open("a", encoding="utf-8") as handle:
        handle.write("\n".join(theirs) + "\n")
    result = runner.invoke(cli, ["merge", str(book), str(other / NAME)])
    assert result.exit_code == 0, result.output
    data = store.read(book)
    assert data.tables["Attempts"][-1]["attempt_id"] == last
    assert data.tables["Audit"][-1]["action"] == "merge"
    assert json.loads(data.tables["Audit"][-1]["details"])["attempts"] == [last]
    assert _lines(book).count(theirs[-1]) == 1  # not appended twice


def test_a_deleted_chain_anchor_is_named_while_sealed_rows_remain(
    book: Path, runner: CliRunner
) -> None:
    """validate said valid: a cut of the last rows can no longer be seen without it."""
    anchor_path(book).unlink()
    (finding,) = _found(book)
    assert (finding.sheet, finding.row, finding.column, finding.check) == (
        "Attempts",
        None,
        "",
        "anchor",
    )
    assert finding.message == (
        "example_campaign.chain.json is missing beside the workbook and its journal, though the "
        "Attempts sheet holds 6 sealed row(s): every save since the first wrote it, so it was deleted or not "
        "copied along, and rows cut from the end of the sheet (with their journal lines and "
        "predictions files) can no longer be seen; restore it from a copy of the campaign "
        "folder (the next command that saves writes a new one from the rows as they stand)"
    )
    attempt = str(store.read(book).tables["Attempts"][0]["attempt_id"])
    result = runner.invoke(cli, ["exclude", str(book), attempt, "--reason", "power cut"])
    assert result.exit_code == 0, result.output
    assert anchor_path(book).is_file()
    assert [f for f in _found(book) if f.check == "anchor"] == []
