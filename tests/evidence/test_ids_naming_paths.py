"""Ids and folders a hostile campaign aims outside the campaign (#39, High 4 and 6): variant
ids that would name a path (validate, lock, amend, merge) and a demo folder holding the
user's own corpus, calibration data or head (toolkit.evidence.identifiers,
toolkit.commands.demo)."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence.identifiers import id_problem
from toolkit.evidence.merge import MergePlan, _consider
from toolkit.evidence.validate import validate
from toolkit.workbook import store

LETTER = layout.column_letter(layout.VARIANTS, "variant_id")


def _set_variant_id(path: Path, row: int, value: str) -> None:
    book = openpyxl.load_workbook(path)
    book["Variants"][f"{LETTER}{row}"] = value
    book.save(path)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("x/../../../PWNED", "holds a path separator ('/' or '\\')"),
        ("b8/evil", "holds a path separator ('/' or '\\')"),
        ("b8\\evil", "holds a path separator ('/' or '\\')"),
        ("b8..evil", "holds '..'"),
        ("b8\tevil", "holds the control character U+0009"),
        ("b8\x85evil", "holds the control character U+0085"),
    ],
)
def test_an_id_that_could_name_a_path_is_refused(value: str, why: str) -> None:
    assert id_problem(value) == why


def test_ordinary_ids_pass() -> None:
    assert [id_problem(v) for v in ("b8-fp32", "b8.fp32_sorted", "a001-b1-fp32-r1-3afc")] == [
        None,
        None,
        None,
    ]


def test_validate_names_the_variant_id_and_lock_refuses_it(
    runner: CliRunner, filled_workbook: Path
) -> None:
    _set_variant_id(filled_workbook, 2, "b8/evil")
    (finding,) = [
        f for f in validate(store.read(filled_workbook), filled_workbook) if f.check == "id"
    ]
    assert (finding.sheet, finding.row, finding.column) == ("Variants", 2, "variant_id")
    assert finding.message == (
        "variant_id 'b8/evil' holds a path separator ('/' or '\\'): ids name the predictions "
        "files, so they may not; use letters, digits, '-', '_' and single dots (e.g. b8-fp32)"
    )
    before = filled_workbook.read_bytes()
    result = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert result.exit_code == 1
    assert "Variants!2 variant_id: variant_id 'b8/evil' holds a path separator" in result.stderr
    assert filled_workbook.read_bytes() == before


def test_amend_refuses_an_id_escaping_the_folder(runner: CliRunner, filled_workbook: Path) -> None:
    assert runner.invoke(cli, ["lock", str(filled_workbook)]).exit_code == 0
    _set_variant_id(filled_workbook, 2, "x/../../../PWNED")
    before = filled_workbook.read_bytes()
    result = runner.invoke(cli, ["amend", str(filled_workbook), "--reason", "rename"])
    assert result.exit_code == 1
    assert "variant_id 'x/../../../PWNED' holds a path separator" in result.stderr
    assert filled_workbook.read_bytes() == before


def test_merge_refuses_a_record_whose_ids_name_a_path(tmp_path: Path) -> None:
    plan = MergePlan(tmp_path / "other.journal.jsonl", tmp_path, "0" * 64)
    record = {
        "attempt": {"attempt_id": "a1-x/../../PWNED", "variant_id": "b1", "protocol_sha256": "s"}
    }
    _consider(plan, record, {"s"}, {}, set(), tmp_path)
    assert plan.records == []
    assert plan.problems == [
        "'a1-x/../../PWNED': attempt_id 'a1-x/../../PWNED' holds a path separator ('/' or "
        "'\\'): ids name files; the runner never records one"
    ]


@pytest.mark.parametrize("own", ["corpus.jsonl", "calibration.jsonl", "head/config.json"])
def test_demo_refuses_a_folder_holding_the_users_own_files(
    runner: CliRunner, tmp_path: Path, own: str
) -> None:
    mine = tmp_path / own
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text(json.dumps({"mine": True}) + "\n", encoding="utf-8")
    result = runner.invoke(cli, ["demo", "--quick", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path} holds {own}, which the demo would overwrite with its example "
        "files; nothing was written",
        "  what to do: give the demo a folder of its own: `iteralab demo --quick NEW_DIR`",
    ]
    assert mine.read_text(encoding="utf-8") == '{"mine": true}\n'
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == sorted(
        {own, *(str(p) for p in Path(own).parents if str(p) != ".")}
    )


def test_two_variant_ids_that_print_alike_are_named(
    runner: CliRunner, filled_workbook: Path
) -> None:
    """'café' typed once as one letter é (NFC), once as e and a combining accent (NFD): a
    reader sees one id, the toolkit two; validate names the second and lock refuses it."""
    rows = len(store.read(filled_workbook).tables["Variants"])
    _set_variant_id(filled_workbook, 2, "caf\u00e9")
    _set_variant_id(filled_workbook, rows + 1, "cafe\u0301")
    found = [f for f in validate(store.read(filled_workbook)) if f.check == "printed-alike"]
    assert [(f.sheet, f.row, f.column) for f in found] == [("Variants", rows + 1, "variant_id")]
    assert found[0].message == (
        "variant_id 'cafe\u0301' prints as 'caf\u00e9' of row 2 but holds other characters "
        "('cafe\\u0301' against 'caf\\xe9': one letter typed as a letter and a combining "
        "accent): a reader sees one id where the toolkit sees two; retype one of them"
    )
    assert runner.invoke(cli, ["lock", str(filled_workbook)]).exit_code == 1
