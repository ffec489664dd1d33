"""The runner builds an Attempts row from the layout: it records that layout itself, and
refuses a cell the layout does not declare (a bug of the task kind, never a row)."""

from __future__ import annotations

import pytest

from toolkit import layout
from toolkit.runner.tasks.cells import Cells


def test_a_new_row_records_the_layout_it_is_written_under() -> None:
    assert Cells().row == {"layout": layout.LAYOUT_VERSION}


def test_put_of_a_name_the_layout_does_not_declare_raises() -> None:
    cells = Cells()
    with pytest.raises(AssertionError, match="Attempts column 'tokenize_s' is not one layout"):
        cells.put("tokenize_s", 0.5)
    assert "tokenize_s" not in cells.row


@pytest.mark.parametrize("name", ["layout", "load_s_reason"])
def test_the_cells_the_row_fills_itself_are_refused(name: str) -> None:
    with pytest.raises(AssertionError, match=f"Attempts column '{name}' is not one layout"):
        Cells().put(name, 3)


def test_a_measurement_takes_a_value_or_a_reason() -> None:
    cells = Cells()
    cells.put("load_s", 1.5)
    cells.put("warmup_s", None, "no warm-up")
    assert (cells.row["load_s"], cells.row["load_s_reason"]) == (1.5, None)
    assert (cells.row["warmup_s"], cells.row["warmup_s_reason"]) == (None, "no warm-up")
    with pytest.raises(AssertionError, match="measured_s is empty without a reason"):
        cells.put("measured_s", None)


def test_a_reason_for_a_column_that_is_not_a_measurement_raises() -> None:
    with pytest.raises(AssertionError, match="notes is not a measurement"):
        Cells().put("notes", None, "nothing to say")
