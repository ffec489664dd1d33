"""Command-line inputs a hostile campaign tried (#39, Medium and Low): a timeout of nan, a
workbook under .xlsm or behind a symbolic link, `report --out ""`, a journal that is a link
to a device, a journal line edited while its row still follows its seal
(toolkit.commands, toolkit.workbook.store, toolkit.evidence.journal, chain)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempt, locked_with
from toolkit.cli import cli
from toolkit.errors import WorkbookError
from toolkit.evidence import chain, journal
from toolkit.workbook import store


@pytest.mark.parametrize("value", ["nan", "inf", "-nan"])
def test_a_timeout_that_is_not_a_number_of_seconds_is_a_usage_error(
    runner: CliRunner, filled_workbook: Path, value: str
) -> None:
    result = runner.invoke(cli, ["run", str(filled_workbook), "--timeout", value])
    assert result.exit_code == 2
    assert (
        f"Invalid value for '--timeout': {value!r} is not a number of seconds; give one such as 600"
    ) in result.stderr


def test_a_workbook_named_xlsm_is_refused_unchanged(
    runner: CliRunner, filled_workbook: Path
) -> None:
    xlsm = filled_workbook.with_suffix(".xlsm")
    shutil.copy(filled_workbook, xlsm)
    before = xlsm.read_bytes()
    result = runner.invoke(cli, ["lock", str(xlsm)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {xlsm}: iteralab writes .xlsx workbooks only, not .xlsm; it is unchanged"
    )
    assert xlsm.read_bytes() == before
    assert not store.backup_path(filled_workbook).exists()  # the .xlsx's backup untouched


def test_a_workbook_behind_a_symbolic_link_is_written_through_it(
    runner: CliRunner, filled_workbook: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link.xlsx"
    link.symlink_to(filled_workbook)
    assert runner.invoke(cli, ["lock", str(link)]).exit_code == 0
    assert link.is_symlink()
    assert store.read(filled_workbook).tables["Audit"][0]["action"] == "lock"


def test_report_out_empty_names_no_folder(runner: CliRunner, filled_workbook: Path) -> None:
    result = runner.invoke(cli, ["report", str(filled_workbook), "--out", ""])
    assert result.exit_code == 2
    assert "Invalid value for '--out': names no folder; give one, or leave --out out" in (
        result.stderr
    )


def test_a_journal_linked_to_a_device_is_named(tmp_path: Path) -> None:
    book = tmp_path / "camp.xlsx"
    journal.journal_path(book).symlink_to(os.devnull)
    with pytest.raises(WorkbookError) as err:
        journal.append(book, journal.record({"attempt_id": "a1"}, None))
    assert err.value.message == (
        f"{journal.journal_path(book)}: cannot append to the journal (not a plain file)"
    )


def test_an_edited_journal_line_is_named_as_the_journals_edit() -> None:
    """The row still follows its seal: restoring the workbook to the journal would be wrong."""
    data = locked_with(attempt("a1", measured_s=20.1))
    record = journal.record(dict(data.tables["Attempts"][0], measured_s=15), None)
    (finding,) = chain.chain_findings(data, [json.loads(json.dumps(record))])
    assert (finding.row, finding.column, finding.check) == (2, "measured_s", "edited")
    assert finding.message == (
        "attempt 'a1': the journal's record says measured_s 15, the sealed row 20.1, and the "
        "row still follows its seal: the journal line was edited; restore the journal from a "
        "copy of the campaign folder (the row is as recorded: leave it)"
    )


def test_disk_full_while_xlsxwriter_writes_is_a_named_save_error(
    filled_workbook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """xlsxwriter wraps the refusal in its FileCreateError: it was a traceback."""
    import errno
    import zipfile

    from xlsxwriter.exceptions import FileCreateError

    def full(self: object, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    before = filled_workbook.read_bytes()
    data = store.read(filled_workbook)
    monkeypatch.setattr(zipfile.ZipFile, "__init__", full)
    with pytest.raises(WorkbookError) as err:
        store.save(data, filled_workbook)
    assert isinstance(err.value.__cause__, FileCreateError)
    assert str(err.value) == (
        f"{filled_workbook}: could not save (No space left on device); "
        "the workbook is unchanged\n  what to do: free disk space in "
        f"{filled_workbook.parent}, then run the command again"
    )
    monkeypatch.undo()
    assert filled_workbook.read_bytes() == before


def test_a_memo_longer_than_a_cell_keeps_is_refused_not_cut(
    runner: CliRunner, filled_workbook: Path
) -> None:
    import openpyxl

    from toolkit import layout

    row = layout.DECISION.names.index("reasons") + 2
    book = openpyxl.load_workbook(filled_workbook)
    book["Decision"].cell(row, 2).value = "x" * 40_000  # openpyxl cuts it to 32,767...
    book.save(filled_workbook)
    _rewrite_parts(filled_workbook, lambda xml: xml.replace("x" * 32_767, "x" * 40_000))
    (addition,) = store.read(filled_workbook).unkept
    assert str(addition) == (
        f"Decision!B{row} (reasons: 40,000 characters, over the 32,767 an "
        "Excel cell keeps; a save would cut it)"
    )
    before = filled_workbook.read_bytes()
    assert runner.invoke(cli, ["lock", str(filled_workbook)]).exit_code == 1
    assert filled_workbook.read_bytes() == before


def _rewrite_parts(path: Path, change: object) -> None:
    """...a script writing the XML itself does not."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        parts = [(info, archive.read(info.filename)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in parts:
            if info.filename.startswith("xl/worksheets/sheet"):
                data = change(data.decode("utf-8")).encode("utf-8")  # type: ignore[operator]
            archive.writestr(info, data)


def test_a_refused_xls_leaves_no_lock_file(runner: CliRunner, tmp_path: Path) -> None:
    xls = tmp_path / "w.xls"
    xls.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504)
    result = runner.invoke(cli, ["report", str(xls)])
    assert result.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.xls"]


@pytest.mark.parametrize("command", ["report", "lock", "ingest", "exclude"])
def test_an_xls_renamed_xlsx_is_refused_before_any_lock_file(
    runner: CliRunner, tmp_path: Path, command: str
) -> None:
    """An old binary workbook saved under .xlsx passes the name check: the refusal that reads
    its first bytes now comes before the writer lock, so no NAME.xlsx.lock stays beside it."""
    book = tmp_path / "w.xlsx"
    book.write_bytes(store.OLE_MAGIC + b"\0" * 504)
    args = [command, str(book)] + (["a1", "--reason", "r"] if command == "exclude" else [])
    result = runner.invoke(cli, args)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {book}: an Excel 97-2003 (.xls) file or a password-protected workbook, not .xlsx",
        "  what to do: open it in Excel or LibreOffice and save it as .xlsx without a password",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.xlsx"]


def test_a_missing_workbook_leaves_no_lock_file(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["lock", str(tmp_path / "none.xlsx")])
    assert result.exit_code == 1
    assert f"error: {tmp_path / 'none.xlsx'}: no such workbook" in result.stderr
    assert list(tmp_path.iterdir()) == []
