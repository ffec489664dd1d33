"""One value typed far away, in a sheet whose declared dimension was left as it was, is named
and every command goes on (it aborted validate, verify and report: calamine sized its dense
grid from the far cell, "memory allocation of 549755813888 bytes failed", exit -6).

Real files: a workbook iteralab renders, one worksheet part edited as a script edits the XML;
the commands run as a user runs them, in a process of their own with an address-space limit
(the abort would otherwise take the test run with it)."""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.builders import ENV, filled
from tests.support.paths import FIXTURES
from toolkit import layout
from toolkit.workbook import extent
from toolkit.workbook.model import WorkbookData
from toolkit.workbook.render import render

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

#: The first column right of the Variants table's last header.
NEXT_COLUMN = layout.letter(len(layout.VARIANTS.names) + 1)

CORPUS = FIXTURES / "layout3_campaign" / "corpus_quick.jsonl"
FAR = '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>far</t></is></c></row>'


def _with_far_cell(path: Path, cell_xml: str = FAR) -> None:
    """Add ``cell_xml`` to the Variants part, its ``<dimension>`` left as rendered."""
    part = f"xl/worksheets/sheet{layout.SHEETS.index(layout.VARIANTS) + 1}.xml"
    with zipfile.ZipFile(path) as archive:
        parts = [(name, archive.read(name)) for name in archive.namelist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts:
            if name == part:
                text = content.decode()
                assert re.search(r"<dimension ref=\"A1:[A-Z]+[0-9]\"/>", text)
                content = text.replace("</sheetData>", cell_xml + "</sheetData>").encode()
            archive.writestr(name, content)


def _limited() -> None:
    limit = 4 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _iteralab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolkit", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=_limited,
    )


def test_a_far_cell_under_a_stale_dimension_is_named_by_validate_and_refused_by_a_save(
    tmp_path: Path,
) -> None:
    path = tmp_path / "campaign.xlsx"
    render(filled(), path)
    shutil.copy(CORPUS, tmp_path / "corpus.jsonl")
    _with_far_cell(path)
    before = path.read_bytes()

    checked = _iteralab("validate", str(path))
    assert checked.returncode == 1, checked.stderr
    assert "Variants!XFD1048576 (a value in a column with no header)" in checked.stdout
    assert "memory allocation" not in checked.stderr

    verified = _iteralab("verify", str(path))
    assert "memory allocation" not in verified.stderr
    assert verified.returncode == 0, verified.stderr  # integrity findings only: none
    assert verified.stdout.startswith("campaign head: ")

    saved = _iteralab("lock", str(path))
    assert saved.returncode == 1, saved.stderr
    assert "holds what iteralab does not keep when it saves: Variants!XFD1048576" in saved.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("cell_xml", "named"),
    [
        (FAR, "XFD1048576"),
        (f'<row r="1"><c r="{NEXT_COLUMN}1"><v>1</v></c></row>', f"{NEXT_COLUMN}1"),
        ('<row r="2"><c r="A2"><v>1</v></c></row>', "A2"),
        (
            '<row r="1"><c r = "Z1"><v>1</v></c></row>',
            "a cell or row placed without a plain reference",
        ),
        (
            "<row r='1'><c r='Z1'><v>1</v></c></row>",
            "a cell or row placed without a plain reference",
        ),
        (
            '<row r="1"><c t="n"><v>1</v></c></row>',
            "a cell or row placed without a plain reference",
        ),
        (
            '<row r="1"><x:c xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
            ' r="A1"><v>1</v></x:c></row>',
            "a cell or row placed without a plain reference",
        ),
    ],
    ids=["far", "one-column-right", "one-row-down", "spaced", "quoted", "no-reference", "prefixed"],
)
def test_a_cell_beyond_the_declared_extent_is_found_by_the_scan(
    tmp_path: Path, cell_xml: str, named: str
) -> None:
    path = tmp_path / "campaign.xlsx"
    render(WorkbookData.empty(), path)
    _with_far_cell(path, cell_xml)
    part = f"xl/worksheets/sheet{layout.SHEETS.index(layout.VARIANTS) + 1}.xml"
    columns = len(layout.VARIANTS.names)
    with path.open("rb") as handle:
        assert extent.cells_beyond(handle, part, 1, columns) == named


def test_a_rendered_sheet_has_no_cell_beyond_its_dimension(tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    render(WorkbookData.empty(), path)
    part = f"xl/worksheets/sheet{layout.SHEETS.index(layout.VARIANTS) + 1}.xml"
    with path.open("rb") as handle:
        assert extent.cells_beyond(handle, part, 1, len(layout.VARIANTS.names)) is None
