"""validate judges an empty measured cell by the layout its row was written under.

Since layout 8 a row records that layout in its ``layout`` cell (the runner's row fills it),
and validate expects a value or a reason in every measured column of it. A row recorded
before has no such cell: it is judged by the newest measured column it fills or explains,
and validate says once that it did so.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempt, locked_with
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence import measured_cells
from toolkit.evidence.validate import validate
from toolkit.findings import Finding
from toolkit.runner.tasks.cells import Cells
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

#: The layout-3 measured columns a classification row explains (the generation ones too).
LAYOUT_3 = [c.name for c in layout.ATTEMPTS.columns if c.measurement and c.since == 3]


def _missing(data: WorkbookData) -> list[str]:
    return [f.column for f in validate(data) if f.check == "missing-reason"]


def _newer_layout(monkeypatch: pytest.MonkeyPatch, *names: str) -> int:
    """A copy of the layout, one version newer, whose Attempts sheet adds the measured
    columns ``names`` (the real layout is left as it is). Returns the new version."""
    newer = layout.LAYOUT_VERSION + 1
    added = tuple(
        layout.Column(
            name, layout.SECONDS, "Throwaway.", measurement=True, computed=True, since=newer
        )
        for name in names
    )
    sheet = dataclasses.replace(layout.ATTEMPTS, columns=(*layout.ATTEMPTS.columns, *added))
    monkeypatch.setattr(layout, "ATTEMPTS", sheet)
    monkeypatch.setitem(layout.SHEET_BY_NAME, "Attempts", sheet)
    monkeypatch.setattr(layout, "LAYOUT_VERSION", newer)
    return newer


def _runner_row(leave_out: str) -> dict[str, object]:
    """An Attempts row as the runner builds it, every measured column explained but one."""
    cells = Cells()
    for name, value in attempt().items():
        if not name.endswith("_reason") and value is not None:
            cells.put(name, value)
    for column in layout.ATTEMPTS.columns:
        if column.measurement and column.name != leave_out and column.name not in cells.row:
            cells.put(column.name, None, "not measured in this row")
    return cells.row


def test_a_row_recorded_before_layout_3_leaves_its_columns_empty() -> None:
    row = attempt()
    assert measured_cells.inferred_layout(row) == 1
    assert _missing(locked_with(row)) == []


def test_a_layout_3_row_that_leaves_one_of_its_columns_unexplained_is_a_finding() -> None:
    explained = {
        f"{name}_reason": "not measured in this row" for name in LAYOUT_3 if name != "utilisation"
    }
    row = attempt(**explained)
    assert measured_cells.inferred_layout(row) == 3
    assert _missing(locked_with(row)) == ["utilisation"]


def test_a_row_that_forgets_the_one_column_its_layout_added_is_a_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A newer layout adds one measured column that no task kind fills; the runner's row
    explains every other measured column. Judged by its cells alone it would pass, as a row
    of the layout before; it records its layout, and validate names row, column and layout."""
    newer = _newer_layout(monkeypatch, "tokenize_s")
    row = _runner_row(leave_out="tokenize_s")
    assert row["layout"] == newer
    assert measured_cells.inferred_layout(row) < newer  # what the cells alone would say
    found = [f for f in validate(locked_with(row)) if f.check == "missing-reason"]
    assert found == [
        Finding(
            "Attempts",
            2,
            "tokenize_s",
            "missing-reason",
            f"tokenize_s is empty without a reason (this row was written under layout "
            f"{newer}, which has the column): a missing measurement says why in "
            "tokenize_s_reason",
        )
    ]


def test_a_row_written_under_the_layout_before_a_column_need_not_explain_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    current = layout.LAYOUT_VERSION
    _newer_layout(monkeypatch, "tokenize_s")
    row = dict(_runner_row(leave_out="tokenize_s"), layout=current)
    assert _missing(locked_with(row)) == []


def test_a_row_without_its_layout_still_reads_by_the_newest_column_it_explains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Layout N+1 adds two measured columns; a row that explains one and forgets the other."""
    newer = _newer_layout(monkeypatch, "tokenize_s", "detokenize_s")
    row = attempt(detokenize_s=0.5)
    assert measured_cells.inferred_layout(row) == newer
    assert "tokenize_s" in _missing(locked_with(row))
    assert "tokenize_s" not in _missing(locked_with(attempt()))


def test_a_layout_cell_newer_than_this_iteralab_is_a_finding() -> None:
    newer = layout.LAYOUT_VERSION + 1
    found = [f for f in validate(locked_with(attempt(layout=newer))) if f.check == "layout"]
    assert [(f.row, f.column) for f in found] == [(2, "layout")]
    assert found[0].message.startswith(
        f"layout {newer} is newer than this iteralab's ({layout.LAYOUT_VERSION}): upgrade"
    )


def test_a_layout_cell_older_than_the_column_is_a_finding() -> None:
    found = [f for f in validate(locked_with(attempt(layout=3))) if f.check == "layout"]
    assert [(f.row, f.column) for f in found] == [(2, "layout")]
    first = measured_cells.first_recording_layout()
    assert f"older than the first layout whose rows record it ({first})" in found[0].message


def test_rows_without_a_layout_are_named_once_in_one_note() -> None:
    current = {"layout": layout.LAYOUT_VERSION}
    assert measured_cells.inferred_note(locked_with(attempt("a1", **current))) is None
    data = locked_with(attempt("a1"), attempt("a2", **current), attempt("a3"))
    assert measured_cells.inferred_note(data) == (
        "Attempts 2 rows (Excel rows 2 to 4) record no layout (written before layout "
        f"{measured_cells.first_recording_layout()}): each is judged by the newest measured "
        "column it fills or explains, which cannot tell when a row forgot the only column its "
        "layout added"
    )


def test_validate_prints_the_note_once_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    store.save(locked_with(attempt("a1"), attempt("a2")), path)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert notes == [f"note: {measured_cells.inferred_note(store.read(path))}"]
    assert notes[0].startswith("note: Attempts 2 rows (Excel rows 2 to 3) record no layout")
    assert "note:" not in result.stdout


def test_validate_json_carries_the_note_in_its_document(tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    store.save(locked_with(attempt("a1")), path)
    result = CliRunner().invoke(cli, ["validate", "--json", str(path)])
    document = json.loads(result.output)
    assert document["notes"] == [measured_cells.inferred_note(store.read(path))]
    assert document["notes"][0].startswith("Attempts row 2 records no layout")
