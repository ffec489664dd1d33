"""What a person adds to the workbook is never deleted without a word (#14 item 4): a sheet,
a column or a form row the layout does not know makes every save refuse, naming it, before
anything is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from toolkit import layout
from toolkit.cli import cli

HINT = (
    "  what to do: keep such notes in a file beside the workbook, in a variant's "
    "description or in the Decision memo (reasons, remaining_uncertainty); remove them "
    "here, then run the command again\n"
)


def _add_sheet(book: openpyxl.Workbook) -> None:
    book.create_sheet("vendor quote")["A1"] = "B200 quote: 2,071 USD for 7 days"


def _add_column(book: openpyxl.Workbook) -> None:
    ws = book["Variants"]
    column = ws.max_column + 1
    ws.cell(row=1, column=column, value="my note")
    ws.cell(row=2, column=column, value="ask the provider about NVLink")


def _add_form_row(book: openpyxl.Workbook) -> None:
    ws = book["Protocol"]
    ws.cell(row=ws.max_row + 1, column=1, value="reviewer")
    ws.cell(row=ws.max_row, column=2, value="J. Doe")


@pytest.mark.parametrize(
    ("add", "named"),
    [
        (_add_sheet, "sheet 'vendor quote'"),
        # Right after the layout's last column / field (a form's fields start at row 2).
        (
            _add_column,
            f"column 'my note' of Variants ({layout.letter(len(layout.VARIANTS.names) + 1)}1)",
        ),
        (_add_form_row, f"row {len(layout.PROTOCOL.names) + 2} ('reviewer') of Protocol"),
    ],
)
def test_lock_refuses_to_drop_what_a_person_added(
    runner: CliRunner, filled_workbook: Path, add: Callable[[openpyxl.Workbook], None], named: str
) -> None:
    book = openpyxl.load_workbook(filled_workbook)
    add(book)
    book.save(filled_workbook)
    before = filled_workbook.read_bytes()
    result = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {filled_workbook}: holds what iteralab does not keep "
        f"when it saves: {named}; nothing was written\n" + HINT
    )
    assert filled_workbook.read_bytes() == before
