"""The quick demo declares 2 repetitions, too few for any pair to separate, on a 100-item
subset whose subgroups are too small for the tolerance: known properties of a smoke run.
`validate` says them in one note, never as warnings that read like faults; the demo says the
repetitions once, under its first line; the full demo (5 repetitions) is not warned about its
repetitions, and any other protocol with too few is still warned."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.commands import demo
from toolkit.report.protocol_warnings import protocol_notes, protocol_warnings, quick_demo_note
from toolkit.report.validation import validate_workbook
from toolkit.workbook import store

NOTE = (
    "the quick demo runs 2 repetitions, too few for any pair to separate (4 or more can) and "
    "leaves 6 subgroup(s) of its subset too small for the tolerance (one changed prediction "
    "fails one): a smoke run, not the comparison; `iteralab demo` without --quick runs the "
    "whole sample"
)


def test_the_quick_demo_workbook_is_noted_not_warned(tmp_path: Path) -> None:
    checked = validate_workbook(demo.prepare(tmp_path, quick=True))
    assert (checked.notes, checked.warnings) == ([NOTE], [])


def test_the_demo_says_its_repetitions_in_the_same_words() -> None:
    assert quick_demo_note(demo.QUICK_REPETITIONS) == (
        "the quick demo runs 2 repetitions, too few for any pair to separate (4 or more "
        "can): a smoke run, not the comparison; `iteralab demo` without --quick runs the "
        "whole sample"
    )


def test_validate_prints_the_note_once_and_no_repetitions_warning(tmp_path: Path) -> None:
    book = demo.prepare(tmp_path, quick=True)
    result = CliRunner().invoke(cli, ["validate", str(book)])
    assert result.stderr.count(f"note: {NOTE}") == 1
    assert "warning: repetitions" not in result.stderr
    result = CliRunner().invoke(cli, ["validate", str(book), "--json"])
    assert NOTE in result.stdout


def test_the_full_demo_is_not_warned_about_its_repetitions(tmp_path: Path) -> None:
    book = demo.prepare(tmp_path)
    assert store.read(book).forms["Protocol"]["repetitions"] == 5
    checked = validate_workbook(book)
    assert checked.notes == []
    # The whole sample's one warning is its own: a 76-item subgroup under a 0.01 tolerance.
    assert [w.split(":")[0] for w in checked.warnings] == [
        "subgroup label=persuasion holds 76 item(s)"
    ]


def test_another_protocol_with_two_repetitions_is_still_warned(tmp_path: Path) -> None:
    book = demo.prepare(tmp_path, quick=True)
    data = store.read(book)
    data.tables["Audit"].append({"action": "amend", "reason": "two runs are enough for us"})
    assert protocol_notes(data, book) == []
    assert protocol_warnings(data, book)[0].startswith(
        "repetitions 2 can never separate two variants: 2 runs against 2 fall wholly apart"
    )
    assert len(protocol_warnings(data, book)) == 7  # and the 6 subgroups
