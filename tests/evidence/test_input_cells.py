"""Hostile input cells: a formula typed where a value belongs, a corpus_path naming no file
(toolkit.workbook.store, toolkit.evidence.validate, `iteralab validate` and `lock`)."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
from click.testing import CliRunner

from tests.support.paths import SAMPLES
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.workbook import store
from toolkit.workbook.model import Formula

SAMPLE = SAMPLES / "example_campaign.xlsx"
THRESHOLD_ROW = layout.PROTOCOL.names.index("threshold") + 2
CORPUS_ROW = layout.PROTOCOL.names.index("corpus_path") + 2


def _corpus(folder: Path) -> Path:
    path = folder / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    return path


def _findings(runner: CliRunner, path: Path) -> list[dict[str, object]]:
    result = runner.invoke(cli, ["validate", "--json", str(path)])
    assert result.exit_code == 1, result.output
    return list(json.loads(result.stdout)["findings"])


def _type_in_openpyxl(path: Path, sheet: str, cell: str, value: str) -> None:
    """What openpyxl (or a script) writes: a formula with no cached value."""
    book = openpyxl.load_workbook(path)
    book[sheet][cell] = value
    book.save(path)


# ---------------------------------------------------------------- B2: formulas in input cells


def test_a_formula_without_a_cached_value_is_named_as_a_formula(
    runner: CliRunner, filled_workbook: Path
) -> None:
    """It was reported as 'threshold is required: fill it in'."""
    _corpus(filled_workbook.parent)
    _type_in_openpyxl(filled_workbook, "Protocol", f"B{THRESHOLD_ROW}", "=0.5+0.1")
    assert _findings(runner, filled_workbook) == [
        {
            "sheet": "Protocol",
            "row": 7,
            "column": "threshold",
            "check": "formula",
            "message": "threshold holds the formula =0.5+0.1 in Protocol!B7: formulas are not "
            "allowed in an input cell; type the value itself",
        }
    ]


def test_a_formula_with_a_cached_value_is_refused_too(filled_data, tmp_path: Path) -> None:
    """As Excel or LibreOffice save it: the cached 0.6 would pass for a typed value."""
    filled_data.forms["Protocol"]["threshold"] = Formula("=0.5+0.1", 0.6)
    path = tmp_path / "campaign.xlsx"
    store.save(filled_data, path)
    _corpus(tmp_path)
    data = store.read(path)
    assert data.forms["Protocol"]["threshold"] == 0.6
    assert [(f.sheet, f.row, f.column, f.check) for f in validate(data, path)] == [
        ("Protocol", 7, "threshold", "formula")
    ]


def test_a_formula_in_a_variants_cell_names_its_cell_and_lock_refuses(
    runner: CliRunner, filled_workbook: Path
) -> None:
    _corpus(filled_workbook.parent)
    letter = layout.column_letter(layout.VARIANTS, "batch_size")
    _type_in_openpyxl(filled_workbook, "Variants", f"{letter}3", "=2*2")
    before = filled_workbook.read_bytes()
    result = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:2] == [
        "error: cannot lock: Protocol/Variants have 1 finding(s):",
        "  Variants!3 batch_size: batch_size holds the formula =2*2 in Variants!H3: formulas "
        "are not allowed in an input cell; type the value itself",
    ]
    assert filled_workbook.read_bytes() == before


def test_text_that_starts_with_an_equals_sign_stays_text(filled_data, tmp_path: Path) -> None:
    filled_data.tables["Variants"][0]["notes"] = "=== baseline ==="
    path = tmp_path / "campaign.xlsx"
    store.save(filled_data, path)
    _corpus(tmp_path)
    data = store.read(path)
    assert data.tables["Variants"][0]["notes"] == "=== baseline ==="
    assert "Variants" not in data.formulas
    assert validate(data, path) == []


# ---------------------------------------------------------------- B3: corpus_path names no file


def test_a_corpus_path_naming_no_file_is_a_finding(
    runner: CliRunner, filled_workbook: Path
) -> None:
    (filled_workbook.parent / "corpus.jsonl").unlink(missing_ok=True)
    resolved = filled_workbook.parent / "corpus.jsonl"
    assert _findings(runner, filled_workbook) == [
        {
            "sheet": "Protocol",
            "row": CORPUS_ROW,
            "column": "corpus_path",
            "check": "exists",
            "message": f"corpus_path 'corpus.jsonl' resolves to {resolved}, which does not exist: "
            "put the corpus (JSONL or CSV) there, or correct corpus_path (relative to "
            "the workbook's folder)",
        }
    ]
    # Without the workbook's path there is nothing to resolve against.
    assert validate(store.read(filled_workbook)) == []


def test_a_corpus_path_naming_a_folder_is_a_finding(filled_workbook: Path) -> None:
    (filled_workbook.parent / "corpus.jsonl").unlink(missing_ok=True)
    (filled_workbook.parent / "corpus.jsonl").mkdir()
    (finding,) = validate(store.read(filled_workbook), filled_workbook)
    assert finding.message.startswith(
        f"corpus_path 'corpus.jsonl' resolves to {filled_workbook.parent / 'corpus.jsonl'}, "
        "which is a folder, not a corpus file: "
    )


def test_lock_refuses_a_corpus_path_naming_no_file(
    runner: CliRunner, filled_workbook: Path
) -> None:
    (filled_workbook.parent / "corpus.jsonl").unlink(missing_ok=True)
    before = filled_workbook.read_bytes()
    result = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: cannot lock: Protocol/Variants have 1 finding(s):",
        f"  Protocol!{CORPUS_ROW} corpus_path: corpus_path 'corpus.jsonl' resolves to "
        f"{filled_workbook.parent / 'corpus.jsonl'}, which does not exist: put the corpus "
        "(JSONL or CSV) there, or correct corpus_path (relative to the workbook's folder)",
        "  what to do: fill or fix these cells, then run the command again",
    ]
    assert filled_workbook.read_bytes() == before
    _corpus(filled_workbook.parent)
    assert runner.invoke(cli, ["lock", str(filled_workbook)]).exit_code == 0


def test_the_shipped_sample_still_validates_clean() -> None:
    assert (SAMPLE.parent / "corpus.jsonl").is_file()
    assert validate(store.read(SAMPLE), SAMPLE) == []
