"""The catalogue of bad inputs (docs/bad-inputs.md), one test each.

Each case: the exact message naming the place and what to do, a non-zero exit
code, and the workbook's bytes unchanged. Root runs these tests, so disk-full
and permission errors are injected as the OSError the system raises.
"""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner, Result

from tests.support.builders import SAMPLES, attempt, filled, locked_with, make_campaign, variant
from toolkit import editing, layout
from toolkit.cli import cli
from toolkit.errors import ModelError
from toolkit.evidence import journal
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


@contextmanager
def unchanged(path: Path) -> Iterator[None]:
    """Assert that the file's bytes are the same after the block."""
    before = path.read_bytes()
    yield
    assert path.read_bytes() == before


def invoke(runner: CliRunner, *args: object) -> Result:
    return runner.invoke(cli, [str(a) for a in args])


def saved(tmp_path: Path, data: WorkbookData | None = None) -> Path:
    """The workbook saved with its corpus and its Variants' head folder beside it."""
    path = tmp_path / "campaign.xlsx"
    store.save(data if data is not None else filled(), path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    shutil.copytree(SAMPLES / "head", tmp_path / "head")
    return path


def findings(runner: CliRunner, path: Path) -> list[dict]:
    """`iteralab validate --json`'s findings; asserts exit code 1."""
    result = invoke(runner, "validate", "--json", path)
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)["findings"]


def finding(sheet: str, row: int | None, column: str, check: str, message: str) -> dict:
    return {"sheet": sheet, "row": row, "column": column, "check": check, "message": message}


def edit_with_openpyxl(path: Path, change: object) -> None:
    """Change the file as a person would in a spreadsheet program (openpyxl load + save)."""
    book = openpyxl.load_workbook(path)
    change(book)  # type: ignore[operator]
    book.save(path)


# ---------------------------------------------------------------- files that are not workbooks


UNREADABLE = {
    "text": (
        b"id,text\n1,hello\n",
        "not a zip archive (an .xlsx file is one; a CSV or text file is not)",
    ),
    "empty": (b"", "the file is empty (0 bytes)"),
    "zip-without-workbook": (
        None,
        'damaged, or not a workbook (KeyError: "There is no item '
        "named '[Content_Types].xml' in the archive\")",
    ),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_file_that_is_not_a_workbook(runner: CliRunner, tmp_path: Path, case: str) -> None:
    content, why = UNREADABLE[case]
    path = tmp_path / "campaign.xlsx"
    if content is None:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("readme.txt", "hello")
    else:
        path.write_bytes(content)
    with unchanged(path):
        for args in (
            ["validate", path],
            ["lock", path],
            ["exclude", path, "a1", "--reason", "power cut"],
        ):
            result = invoke(runner, *args)
            assert result.exit_code == 1
            assert result.stderr.splitlines() == [
                f"error: {path}: not a readable .xlsx workbook: {why}",
                "  what to do: restore it from a copy, or start from `iteralab init`",
            ]


def test_a_truncated_workbook_points_at_its_backup(runner: CliRunner, tmp_path: Path) -> None:
    path = saved(tmp_path)
    store.save(store.read(path), path)  # now campaign.bak.xlsx exists
    path.write_bytes(path.read_bytes()[:5000])
    with unchanged(path):
        result = invoke(runner, "validate", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {path}: not a readable .xlsx workbook: damaged, or not a workbook "
        "(BadZipFile: File is not a zip file)",
        "  what to do: restore the backup campaign.bak.xlsx (the version before the last "
        "save), or start from `iteralab init`",
    ]


def test_a_sheet_damaged_inside_the_archive(runner: CliRunner, tmp_path: Path) -> None:
    path = saved(tmp_path)
    damaged = tmp_path / "damaged.xlsx"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet4.xml":
                content = content[:200]
            target.writestr(item, content)
    with unchanged(damaged):
        result = invoke(runner, "validate", damaged)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {damaged}: not a readable .xlsx workbook: damaged, or not a workbook "
        "(ParseError: unclosed token: line 2, column 0)"
    )


def test_an_xls_or_password_protected_file(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    with unchanged(path):
        result = invoke(runner, "validate", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {path}: an Excel 97-2003 (.xls) file or a password-protected workbook, not .xlsx",
        "  what to do: open it in Excel or LibreOffice and save it as .xlsx without a password",
    ]


# ---------------------------------------------------------------- workbooks of the wrong shape


def test_a_workbook_from_an_older_template_version(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "LAYOUT_VERSION", 0)
    path = saved(tmp_path)
    monkeypatch.undo()
    with unchanged(path):
        result = invoke(runner, "lock", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {path}: layout version 0; this iteralab reads layout versions "
        f"{layout.OLDEST_READABLE} to {layout.LAYOUT_VERSION}",
        "  what to do: migrate: rename this file, `iteralab init` a new workbook under the old "
        "name, copy your Protocol, Variants, Tariffs and Schedule rows into it, lock it, and "
        "replay the attempts with `iteralab ingest` (docs/bad-inputs.md)",
    ]


def test_a_workbook_from_a_newer_iteralab_is_refused_unchanged(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "LAYOUT_VERSION", layout.LAYOUT_VERSION + 1)
    path = saved(tmp_path)
    monkeypatch.undo()
    with unchanged(path):
        result = invoke(runner, "validate", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {path}: layout version {layout.LAYOUT_VERSION + 1}, written by a newer "
        f"iteralab; this one reads layout versions {layout.OLDEST_READABLE} to "
        f"{layout.LAYOUT_VERSION}"
    )
    assert "upgrade iteralab" in result.stderr


def test_an_older_workbook_migrates_as_the_message_says(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented migration keeps every attempt and its chain: same protocol content,
    same lock hash; the journal replays the rows."""
    old = locked_with(attempt("a1"), attempt("a2", repetition=2))
    path = tmp_path / "campaign.xlsx"
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    shutil.copytree(SAMPLES / "head", tmp_path / "head")
    manifest = {
        "manifest_id": "m1",
        "recorded_at": "2026-12-07T09:00+00:00",
        "variant_id": "b1-fp32",
        "corpus_sha256": "f",
        "corpus_items": 1000,
    }
    for row in old.tables["Attempts"]:
        journal.append(path, journal.record(dict(row, row_sha256=None), manifest))
    monkeypatch.setattr(layout, "LAYOUT_VERSION", 0)
    store.save(old, path)
    monkeypatch.undo()

    path.rename(tmp_path / "campaign-v0.xlsx")
    assert invoke(runner, "init", path).exit_code == 0
    with editing.change(path, refresh_derived=False) as edit:  # the person copies the input sheets
        new = edit.data
        new.forms["Protocol"].update(old.forms["Protocol"])
        for row in old.tables["Variants"]:
            new.append("Variants", row)
    assert invoke(runner, "lock", path).exit_code == 0
    assert invoke(runner, "ingest", path).exit_code == 0
    result = invoke(runner, "validate", path)
    assert result.stdout == f"{path}: valid (3 variants, 2 attempts, no findings)\n"


def _remove_memory_sheet(book: openpyxl.Workbook) -> None:
    book.remove(book["Memory"])


def _rename_measured_column(book: openpyxl.Workbook) -> None:
    book["Attempts"].cell(
        row=1, column=layout.ATTEMPTS.names.index("measured_s") + 1, value="measured"
    )


def _rename_metric_field(book: openpyxl.Workbook) -> None:
    book["Protocol"].cell(row=6, column=1, value="the metric")


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        pytest.param(
            _remove_memory_sheet,
            [
                "error: {path}: missing sheet(s) Memory",
                "  what to do: this is not an iteralab workbook, or sheets were renamed or deleted; "
                "restore them or start from `iteralab init`",
            ],
            id="missing-sheet",
        ),
        pytest.param(
            _rename_measured_column,
            [
                "error: {path}: sheet Attempts lacks column(s) measured_s in row 1",
                "  what to do: restore the header row (names exactly as in `iteralab init`'s "
                "template)",
            ],
            id="missing-column",
        ),
        pytest.param(
            _rename_metric_field,
            ["error: {path}: sheet Protocol lacks field(s) metric in column A"],
            id="missing-form-field",
        ),
    ],
)
def test_a_missing_sheet_column_or_field_is_named(
    runner: CliRunner, tmp_path: Path, damage: object, expected: list[str]
) -> None:
    path = saved(tmp_path)
    edit_with_openpyxl(path, damage)  # type: ignore[arg-type]
    with unchanged(path):
        result = invoke(runner, "validate", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[: len(expected)] == [
        line.format(path=path) for line in expected
    ]


# ---------------------------------------------------------------- cells that break the rules


def test_wrong_cell_types(runner: CliRunner, tmp_path: Path) -> None:
    data = filled()
    data.forms["Protocol"]["repetitions"] = "five"
    data.tables["Variants"][0]["batch_size"] = 1.5
    path = saved(tmp_path, data)
    with unchanged(path):
        assert findings(runner, path) == [
            finding(
                "Protocol",
                12,
                "repetitions",
                "int",
                "repetitions must be a whole number; found 'five'",
            ),
            finding(
                "Variants", 2, "batch_size", "int", "batch_size must be a whole number; found 1.5"
            ),
        ]


def test_blank_required_fields(runner: CliRunner, tmp_path: Path) -> None:
    data = filled()
    data.forms["Protocol"]["metric"] = None
    data.tables["Variants"][2]["precision"] = None
    path = saved(tmp_path, data)
    with unchanged(path):
        assert findings(runner, path) == [
            finding("Protocol", 6, "metric", "required", "metric is required: fill it in"),
            finding("Variants", 4, "precision", "required", "precision is required: fill it in"),
        ]


def test_duplicate_attempt_ids(runner: CliRunner, tmp_path: Path) -> None:
    path = saved(tmp_path, locked_with(attempt("a1"), attempt("a1", repetition=2)))
    with unchanged(path):
        assert findings(runner, path) == [
            finding(
                "Attempts",
                2,
                "attempt_id",
                "unique",
                "attempt_id 'a1' appears more than once: give each row its own attempt_id",
            ),
            finding(
                "Attempts",
                3,
                "attempt_id",
                "unique",
                "attempt_id 'a1' appears more than once: give each row its own attempt_id",
            ),
        ]


def test_an_unknown_variant(runner: CliRunner, tmp_path: Path) -> None:
    path = saved(tmp_path, locked_with(attempt(variant_id="b16-fp32")))
    with unchanged(path):
        assert findings(runner, path) == [
            finding(
                "Attempts",
                2,
                "variant_id",
                "exists",
                "variant 'b16-fp32' is not declared "
                "in Variants: declare it (with `iteralab amend`) or correct the id",
            )
        ]


def test_zero_or_negative_durations_standing_for_missing_measurements(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = saved(tmp_path, locked_with(attempt(load_s=0, warmup_s=-1.0)))
    with unchanged(path):
        assert findings(runner, path) == [
            finding(
                "Attempts",
                2,
                "load_s",
                "zero",
                "load_s is 0, which would stand for 'not "
                "measured': leave it empty and say why in load_s_reason",
            ),
            finding(
                "Attempts",
                2,
                "warmup_s",
                "seconds",
                "warmup_s must be a duration in seconds (>= 0); found -1",
            ),
        ]


def test_a_protocol_edited_after_the_lock(runner: CliRunner, tmp_path: Path) -> None:
    data = locked_with()
    data.forms["Protocol"]["threshold"] = 0.5
    path = saved(tmp_path, data)
    with unchanged(path):
        assert findings(runner, path) == [
            finding(
                "Protocol",
                7,
                "threshold",
                "locked",
                "threshold changed after the lock "
                "(0.6 -> 0.5): undo the edit, or record it with `iteralab amend --reason "
                "...` (attempts before it stay marked)",
            )
        ]


def test_an_attempt_row_edited_by_hand(runner: CliRunner, tmp_path: Path) -> None:
    data = locked_with(attempt("a1"), attempt("a2", repetition=2))
    data.tables["Attempts"][0]["corpus_accepted"] = "no"
    path = saved(tmp_path, data)
    with unchanged(path):
        assert findings(runner, path) == [
            finding(
                "Attempts",
                2,
                "row_sha256",
                "chain",
                "attempt 'a1' does not follow from "
                "its cells and the row above it: this row was edited after it was "
                "recorded, or the attempt recorded before it was deleted: compare with the "
                "backup (.bak.xlsx) and the journal (.journal.jsonl) beside the workbook, "
                "and restore the row",
            )
        ]


def test_a_predictions_file_edited_after_the_attempt(runner: CliRunner, tmp_path: Path) -> None:
    original = b'{"id":"d1","prediction":"austen"}\n'
    (tmp_path / "preds").mkdir()
    (tmp_path / "preds" / "a1.jsonl").write_bytes(original.replace(b"austen", b"bronte"))
    path = saved(
        tmp_path,
        locked_with(
            attempt(
                predictions_path="preds/a1.jsonl",
                predictions_sha256=hashlib.sha256(original).hexdigest(),
            )
        ),
    )
    now = hashlib.sha256((tmp_path / "preds" / "a1.jsonl").read_bytes()).hexdigest()
    with unchanged(path):
        assert findings(runner, path) == [
            finding(
                "Attempts",
                2,
                "predictions_sha256",
                "predictions",
                f"attempt 'a1': preds/a1.jsonl no longer matches its SHA-256 (recorded "
                f"{hashlib.sha256(original).hexdigest()[:12]}..., now {now[:12]}...): the "
                "predictions were edited or replaced after the attempt; restore the "
                "original file",
            )
        ]


# ---------------------------------------------------------------- corpus and model (runner)


CORPUS = {
    "duplicate-id": (
        b'{"id":"a","text":"x"}\n{"id":"a","text":"y"}\n',
        "line 2: duplicate id 'a' (first on line 1)",
        "ids identify inputs: make each one unique",
    ),
    "missing-id": (
        b'{"id":"a","text":"x"}\n{"text":"y"}\n',
        "line 2: no id",
        "give every input a stable, unique id",
    ),
    "not-utf8": (
        b'{"id":"a","text":"caf\xe9"}\n',
        "line 1, byte column 22: bytes that are not UTF-8 (b'\\xe9\"}\\n')",
        "save the corpus as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)",
    ),
    "empty": (b"", "the corpus holds no item", "one input per line, each with an id and a text"),
}


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_a_bad_corpus_stops_the_run_before_any_attempt(
    runner: CliRunner, tmp_path: Path, case: str
) -> None:
    content, message, hint = CORPUS[case]
    book = make_campaign(tmp_path, 4, [variant("b1-fp32", 1)])
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_bytes(content)
    with unchanged(book):
        result = invoke(runner, "run", book)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {corpus_file}: {message}",
        f"  what to do: {hint}",
    ]
    assert not journal.journal_path(book).exists()


def test_a_model_folder_missing_files(tmp_path: Path) -> None:
    """Loading refuses it (during `run`, the attempt becomes a failed row saying so, R13)."""
    from toolkit.runner.engines import model

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ModelError) as err:
        model.load(variant("x", 1, model_path="model", head_path=None), tmp_path)
    assert err.value.message.startswith(f"model {tmp_path / 'model'}: cannot load (")
    assert err.value.hint == (
        "check model_path/head_path; the folder needs config, weights and tokenizer files"
    )


def test_a_head_folder_missing_its_weights(tmp_path: Path) -> None:
    from toolkit.runner.engines import model

    (tmp_path / "head").mkdir()
    (tmp_path / "head" / "head.json").write_text("{}")
    with pytest.raises(ModelError) as err:
        model.load(variant("x", 1, head_path="head"), tmp_path)
    assert str(err.value) == (
        f"head_path {tmp_path / 'head'}: head.safetensors is missing\n"
        "  what to do: a head folder holds head.json and "
        "head.safetensors"
    )


# ---------------------------------------------------------------- saving


def test_disk_full_during_a_save(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = saved(tmp_path)

    def full_disk(data: object, target: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "render", full_disk)
    with unchanged(path):
        result = invoke(runner, "lock", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {path}: could not save (No space left on device); the workbook is unchanged",
        f"  what to do: free disk space in {tmp_path}, then run the command again",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "campaign.xlsx",
        "campaign.xlsx.lock",
        "corpus.jsonl",
        "head",
    ]


def test_permission_denied_during_a_save(
    runner: CliRunner, tmp_path: Path, deny_replace: Callable[[Path], None]
) -> None:
    path = saved(tmp_path)
    deny_replace(path)
    with unchanged(path):
        result = invoke(runner, "lock", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {path}: could not save (Permission denied); the workbook is unchanged",
        f"  what to do: make {tmp_path} writable for you (and the workbook not read-only; on "
        "Windows close it in Excel), then run the command again",
    ]


def test_a_workbook_open_in_excel(runner: CliRunner, tmp_path: Path) -> None:
    path = saved(tmp_path, locked_with(attempt("a1")))
    (tmp_path / "~$campaign.xlsx").write_bytes(b"someone")
    with unchanged(path):
        result = invoke(runner, "exclude", path, "a1", "--reason", "power cut")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {path}: open in Excel or LibreOffice (found ~$campaign.xlsx)",
        "  what to do: save and close it there, then run the command again",
    ]
