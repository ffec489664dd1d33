"""validate judges an empty measured cell by the layout its row was recorded under (the
newest measured column the row fills or explains), not by the column's age: a row of a
newer layout that leaves one of that layout's columns empty without a reason is a finding;
a row recorded before the column existed is not."""

from __future__ import annotations

import dataclasses

import pytest
from builders import attempt, locked_with

from toolkit import layout
from toolkit.evidence.validate import row_layout, validate

#: The layout-3 measured columns a classification row explains (the generation ones too).
LAYOUT_3 = [c.name for c in layout.ATTEMPTS.columns if c.measurement and c.since == 3]


def _missing(data: object) -> list[str]:
    return [f.column for f in validate(data) if f.check == "missing-reason"]  # type: ignore[arg-type]


def test_a_row_recorded_before_layout_3_leaves_its_columns_empty() -> None:
    row = attempt()
    assert row_layout(row) == 1
    assert _missing(locked_with(row)) == []


def test_a_layout_3_row_that_leaves_one_of_its_columns_unexplained_is_a_finding() -> None:
    explained = {
        f"{name}_reason": "not measured in this row" for name in LAYOUT_3 if name != "utilisation"
    }
    row = attempt(**explained)
    assert row_layout(row) == 3
    assert _missing(locked_with(row)) == ["utilisation"]


def test_a_throwaway_column_of_a_newer_fixture_layout_left_unexplained_is_a_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Layout N+1 adds two measured columns; a row that explains one and forgets the other."""
    added = tuple(
        layout.Column(
            name,
            layout.SECONDS,
            "Throwaway.",
            measurement=True,
            computed=True,
            since=layout.LAYOUT_VERSION + 1,
        )
        for name in ("tokenize_s", "detokenize_s")
    )
    sheet = dataclasses.replace(layout.ATTEMPTS, columns=(*layout.ATTEMPTS.columns, *added))
    monkeypatch.setattr(layout, "ATTEMPTS", sheet)
    monkeypatch.setitem(layout.SHEET_BY_NAME, "Attempts", sheet)
    row = attempt(detokenize_s=0.5)
    assert row_layout(row) == layout.LAYOUT_VERSION + 1
    assert "tokenize_s" in _missing(locked_with(row))
    assert "tokenize_s" not in _missing(locked_with(attempt()))
