"""Workbook text reaches report.md as text (toolkit.report.markdown.inline): a Protocol
scenario holding a Markdown image loaded a remote image when report.md was rendered; an
exclusion reason holding a line break opened a section of its own."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from toolkit import layout
from toolkit.cli import cli
from toolkit.report.markdown import inline, table
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # reports a campaign: not in `make test-fast`

IMAGE = "![x](http://evil.example/x.png)"
HEADING = "power cut\n## Integrity\nall good"


def test_markdown_markup_in_workbook_text_is_escaped() -> None:
    assert inline(IMAGE) == "!\\[x\\](http://evil.example/x.png)"
    assert inline(HEADING) == "power cut / ## Integrity / all good"
    assert inline("`code` *bold* _em_ ~~gone~~ a|b \\ measured_s <b>") == (
        "\\`code\\` \\*bold\\* \\_em\\_ \\~\\~gone\\~\\~ a\\|b \\\\ measured_s &lt;b&gt;"
    )
    assert table(("a",), [(IMAGE,)])[2] == "| !\\[x\\](http://evil.example/x.png) |"


def test_a_scenario_and_an_exclusion_reason_reach_report_md_as_text(
    runner: CliRunner, reported: Path
) -> None:
    book = openpyxl.load_workbook(reported)
    row = layout.PROTOCOL.names.index("scenario") + 2
    book["Protocol"][f"B{row}"] = IMAGE
    book.save(reported)
    attempt = str(store.read(reported).tables["Attempts"][0]["attempt_id"])
    result = runner.invoke(cli, ["exclude", str(reported), attempt, "--reason", HEADING])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["report", str(reported), "--no-png"])
    assert result.exit_code == 0, result.output

    text = (reported.parent / f"{reported.stem}_report" / "report.md").read_text()
    assert IMAGE not in text
    assert "| scenario | !\\[x\\](http://evil.example/x.png) |" in text.splitlines()
    assert [line for line in text.splitlines() if line.startswith("## Integrity")] == [
        "## Integrity"
    ]
    assert "power cut / ## Integrity / all good" in text
