"""Messages a reviewer found unclear or wrong: each says what happened and what to do,
exits non-zero when nothing was done, and leaves the workbook as it was (click's CliRunner)."""

from __future__ import annotations

import errno
import hashlib
import json
import re
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner, Result

from tests.support import report_campaign
from tests.support.paths import DOCS
from toolkit import layout, reporting
from toolkit.cli import cli
from toolkit.evidence import journal


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _refused(result: Result) -> list[str]:
    """The lines of a refusal: the command exited 1 and said this on stderr."""
    assert result.exit_code == 1, result.output
    return result.stderr.splitlines()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A locked campaign with attempts, never reported (a report would save it)."""
    return report_campaign.write(tmp_path / "campaign.xlsx")


# ---------------------------------------------------------------- report --out


def test_a_report_folder_that_cannot_be_created_saves_nothing(book: Path, tmp_path: Path) -> None:
    """A path under a file: a clean error naming the folder; the workbook keeps its bytes."""
    (tmp_path / "a-file").write_text("not a folder", encoding="utf-8")
    folder = tmp_path / "a-file" / "report"
    before = _sha256(book)
    result = _invoke("report", book, "--no-png", "--out", folder)
    assert _refused(result) == [
        f"error: {folder}: cannot create the report folder (Not a directory); the workbook "
        "is unchanged",
        "  what to do: a part of that path is a file, not a folder: give --out another folder, "
        "then run the command again",
    ]
    assert _sha256(book) == before
    assert not (tmp_path / "campaign_report").exists()


def test_a_report_folder_that_can_be_created_is_written(book: Path, tmp_path: Path) -> None:
    """The check does not stand in the way: a new nested folder is created and filled."""
    folder = tmp_path / "out" / "nested"
    result = _invoke("report", book, "--no-png", "--out", folder)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == ["attempts.csv", "manifest.csv", "report.md"]


def test_a_full_disk_while_writing_the_report_folder_is_a_message_not_a_traceback(
    book: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the save, the reviewer's first file (report.md's "in progress" page, written
    before the set) meets a full disk: what failed, where, what to do."""
    first = tmp_path / "campaign_report" / "report.md"

    def full_disk(target: Path, text: str, **options: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(reporting, "write_text", full_disk)
    result = _invoke("report", book, "--no-png")
    assert _refused(result) == [
        f"error: {first}: No space left on device (files already written stay whole; none is "
        "half-written)",
        "  what to do: free disk space or fix the permission, then run the command again "
        "(--debug shows where it failed)",
    ]
    assert not first.exists()


# ---------------------------------------------------------------- ingest without a journal


def test_ingest_without_a_journal_names_it_and_counts_the_workbook(book: Path) -> None:
    """No '0 already' beside recorded attempts: the missing journal is named, exit 1."""
    path = journal.journal_path(book)
    assert not path.exists()
    before = _sha256(book)
    result = _invoke("ingest", book)
    assert result.exit_code == 1
    held = len(report_campaign.campaign().tables["Attempts"])
    assert result.stderr.splitlines() == [
        f"error: {path}: no journal at this path, nothing to ingest; {book} is unchanged "
        f"({held} attempt(s) recorded in it)",
        "  what to do: the runner writes every attempt there first: it is the evidence behind "
        f"those rows; if {book.name} was moved, move {path.name} beside it, if it was deleted, "
        "restore it from a backup",
    ]
    assert result.stdout == ""
    assert _sha256(book) == before


def test_ingest_json_without_a_journal_prints_no_document(book: Path) -> None:
    result = _invoke("ingest", book, "--json")
    assert (result.exit_code, result.stdout) == (1, "")
    assert "no journal at this path, nothing to ingest" in result.stderr


def test_ingest_of_a_fresh_workbook_says_nothing_has_run(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "fresh.xlsx"
    assert runner.invoke(cli, ["init", str(path)]).exit_code == 0
    result = runner.invoke(cli, ["ingest", str(path)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1] == (
        f"  what to do: the runner writes it when `iteralab run {path}` records an attempt; "
        "until then there is nothing to ingest"
    )


# ---------------------------------------------------------------- docs/bad-inputs.md


def test_the_layout_version_message_is_the_one_the_doc_shows(book: Path) -> None:
    """The doc writes OLDEST and NEWEST where the tool names the versions it reads."""
    workbook = openpyxl.load_workbook(book)
    workbook["Guide"]["A2"] = "layout_version:0"
    workbook.save(book)
    result = _invoke("validate", book)
    assert result.exit_code == 1
    message = result.stderr.splitlines()[0].removeprefix("error: ")
    readable = f"versions {layout.OLDEST_READABLE} to {layout.LAYOUT_VERSION}"
    assert message == f"{book}: layout version 0; this iteralab reads layout {readable}"
    documented = message.replace(str(book), "PATH").replace(readable, "versions OLDEST to NEWEST")
    text = (DOCS / "bad-inputs.md").read_text(encoding="utf-8")
    assert f"`{documented}`" in text
    assert not re.search(r"reads layout versions? \d", text)


# ---------------------------------------------------------------- --json "format"


def test_validate_json_names_its_format(book: Path) -> None:
    result = _invoke("validate", book, "--json")
    document = json.loads(result.stdout)
    assert list(document) == ["format", "workbook", "valid", "findings", "notes", "warnings"]
    assert (document["format"], document["workbook"]) == ("iteralab-validate/1", str(book))


def _documented_formats() -> dict[str, str]:
    """docs/json.md's table: command -> the format column."""
    rows = re.findall(
        r"^\| `([a-z ]+) --json` \| ([^|]+) \|",
        (DOCS / "json.md").read_text(encoding="utf-8"),
        flags=re.MULTILINE,
    )
    return {command: cell.strip() for command, cell in rows}


def test_docs_json_names_the_validate_format() -> None:
    assert _documented_formats()["validate"] == "`iteralab-validate/1`"


@pytest.mark.parametrize(
    "args",
    [
        ["env", "--json"],
        [
            "memory",
            "estimate",
            "--params",
            "8B",
            "--layers",
            "32",
            "--hidden-size",
            "4096",
            "--heads",
            "32",
            "--json",
        ],
        ["cost", "--gpu", "rtx-4090", "--days", "7", "--json"],
        ["schedule", "--start", "2026-12-07T09:00", "--end", "2026-12-11T09:00", "--json"],
    ],
    ids=["env", "memory-estimate", "cost", "schedule"],
)
def test_every_json_document_names_its_format(args: list[str]) -> None:
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    assert re.fullmatch(r"iteralab-[a-z-]+/\d+", json.loads(result.stdout).get("format", ""))


# ---------------------------------------------------------------- ledger import


def test_ledger_import_text_writes_amounts_to_the_cent(book: Path, tmp_path: Path) -> None:
    """`4.2` in the export reads `4.20 USD`, as in the JSON document and the report."""
    export = tmp_path / "billing.csv"
    export.write_text(
        "date,description,reference,amount,currency\n2026-12-09,Object storage,ST-0042,4.2,USD\n",
        encoding="utf-8",
    )
    result = _invoke("ledger", "import", book, export)
    assert result.exit_code == 0, result.output
    assert (
        "  in the ledger, not in the workbook: ST-0042 4.20 USD (billing.csv:2)"
        in result.stdout.splitlines()
    )


# ---------------------------------------------------------------- init in a missing folder


def test_init_in_a_missing_folder_names_it(tmp_path: Path) -> None:
    path = tmp_path / "nodir" / "x.xlsx"
    result = _invoke("init", path)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {path}: the folder {path.parent} does not exist; nothing created",
        f"  what to do: create it first (mkdir -p {path.parent}), or give a path in an "
        "existing folder",
    ]
    assert not path.parent.exists()


def test_init_under_a_file_says_it_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    path = tmp_path / "notes.txt" / "x.xlsx"
    result = _invoke("init", path)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {path}: {path.parent} is a file, not a folder; nothing created"
    )
