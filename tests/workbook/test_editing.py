"""Only `report` and `run` refresh the derived sheets; lock, amend, exclude and ingest leave
them exactly as they were: formulas, cached values and charts (toolkit.editing)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from click.testing import CliRunner

from toolkit import editing, layout
from toolkit.cli import cli
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

DERIVED = ("Summary", "Memory", "Settlement", "Schedule", "Decision")


def _cells(path: Path) -> dict[str, dict[str, tuple[Any, Any]]]:
    """Per derived sheet, every non-empty cell as (what is written, its cached value)."""
    formulas = openpyxl.load_workbook(path)
    values = openpyxl.load_workbook(path, data_only=True)
    out = {}
    for name in DERIVED:
        cells = {}
        for row in formulas[name].iter_rows():
            for cell in row:
                written = cell.value
                if written is None:
                    continue
                text = getattr(written, "text", written)  # an array formula's text
                cells[cell.coordinate] = (text, values[name][cell.coordinate].value)
        out[name] = cells
    return out


def _charts(path: Path) -> list[str]:
    """The chart parts, their cached numbers written alike (xlsxwriter caches 9.0 or 9)."""
    with zipfile.ZipFile(path) as z:
        return [
            re.sub(r"<c:v>(-?\d+)\.0</c:v>", r"<c:v>\1</c:v>", z.read(n).decode())
            for n in sorted(z.namelist())
            if n.startswith("xl/charts/")
        ]


def test_lock_leaves_the_derived_sheets_and_the_memo_as_they_were(
    runner: CliRunner, filled_workbook: Path
) -> None:
    before = _cells(filled_workbook)
    result = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert result.exit_code == 0, result.output
    after = _cells(filled_workbook)
    assert after == before
    assert store.read(filled_workbook).forms["Decision"]["draft"] is None


def test_exclude_keeps_formulas_values_and_charts_of_a_reported_workbook(
    runner: CliRunner, reported: Path
) -> None:
    before, charts = _cells(reported), _charts(reported)
    assert any(str(text).startswith("=") for text, _ in before["Summary"].values())
    result = runner.invoke(
        cli,
        [
            "exclude",
            str(reported),
            "b4-fp32-r1",
            "--reason",
            "provider maintenance reboot, ticket 4412",
        ],
    )
    assert result.exit_code == 0, result.output
    assert _cells(reported) == before
    assert _charts(reported) == charts and len(charts) == 2


def test_amend_keeps_the_derived_sheets_until_the_next_report(
    runner: CliRunner, reported: Path
) -> None:
    before = _cells(reported)
    # amend, like lock, refuses a corpus_path the runner could not read
    reported.with_name("corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    with editing.change(reported, refresh_derived=False) as edit:
        edit.data.forms["Protocol"]["tolerance"] = 0.02
    result = runner.invoke(cli, ["amend", str(reported), "--reason", "agreed with QA"])
    assert result.exit_code == 0, result.output
    assert _cells(reported) == before
    # The report then recomputes them: the amended attempts leave the statistics.
    assert runner.invoke(cli, ["report", str(reported), "--no-png"]).exit_code == 0
    successes = layout.column_letter(layout.SUMMARY, "successes")
    assert _cells(reported)["Summary"][f"{successes}2"][1] == 0


def test_a_change_that_raises_or_declines_writes_nothing(reported: Path) -> None:
    data = reported.read_bytes()
    with pytest.raises(RuntimeError), editing.change(reported, refresh_derived=True) as edit:
        edit.data.forms["Decision"]["reasons"] = "typed"
        raise RuntimeError("stop")
    with editing.change(reported, refresh_derived=True) as edit:
        edit.data.forms["Decision"]["reasons"] = "typed"
        edit.save = False
    assert reported.read_bytes() == data


def test_ingest_of_nothing_new_writes_nothing(reported: Path) -> None:
    data = reported.read_bytes()
    result = editing.ingest(reported, [], refresh_derived=True)
    assert (result.attempts_added, result.manifests_added) == (0, 0)
    assert reported.read_bytes() == data
