"""The priced workbook prints as a reviewer expects (issue 33): LibreOffice converts it to PDF
in at most 25 pages, the Overview and the Decision memo on 1 each, the Settlement on at most 2,
each page's footer naming its sheet."""

from __future__ import annotations

import collections
import shutil
import subprocess
from pathlib import Path

import pytest
import report_campaign

from toolkit import layout
from toolkit.reporting import build
from toolkit.workbook import store

pytestmark = pytest.mark.libreoffice


def _pages_per_sheet(pdf: Path) -> collections.Counter[str]:
    """Pages by the sheet name their footer starts with."""
    text = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    counted: collections.Counter[str] = collections.Counter()
    for page in text.split("\f"):
        lines = [line for line in page.splitlines() if line.strip()]
        if lines:
            counted[lines[-1].split()[0]] += 1
    return counted


def test_the_priced_workbook_prints_in_at_most_25_pages(tmp_path: Path) -> None:
    if not (shutil.which("soffice") and shutil.which("pdftotext")):
        pytest.skip("LibreOffice (soffice) or poppler-utils (pdftotext) is not installed")
    path = tmp_path / "priced.xlsx"
    store.save(report_campaign.priced(), path)
    build(path, pngs=False)
    profile = tmp_path / "profile"
    subprocess.run(
        [
            "soffice",
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--calc",
            "--convert-to",
            "pdf",
            "--outdir",
            str(tmp_path),
            str(path),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    pages = _pages_per_sheet(tmp_path / "priced.pdf")
    assert set(pages) == {sheet.name for sheet in layout.SHEETS}  # every page says its sheet
    assert sum(pages.values()) <= 25
    assert pages["Settlement"] <= 2
    assert pages["Decision"] == 1
    assert pages["Overview"] == 1
