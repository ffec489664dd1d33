"""The priced workbook prints as a reviewer expects (issue 33): LibreOffice converts it to PDF
in at most 25 pages, the Overview and the Decision memo on 1 each, the Settlement on at most 2,
each page's footer naming its sheet."""

from __future__ import annotations

import collections
import shutil
from pathlib import Path

import pytest

from tests.support import report_campaign
from tests.support.builders import docs_script
from toolkit import layout

pytestmark = pytest.mark.libreoffice


def test_the_priced_workbook_prints_in_at_most_25_pages(tmp_path: Path) -> None:
    if not (shutil.which("soffice") and shutil.which("pdftotext")):
        pytest.skip("LibreOffice (soffice) or poppler-utils (pdftotext) is not installed")
    path = report_campaign.priced_report(tmp_path)
    printing = docs_script("screenshots")  # LibreOffice prints it as for the docs' pictures
    pages = collections.Counter(printing.footer_sheets(printing.to_pdf(path, tmp_path)))
    assert set(pages) == {sheet.name for sheet in layout.SHEETS}  # every page says its sheet
    assert sum(pages.values()) <= 25
    assert pages["Settlement"] <= 2
    assert pages["Decision"] == 1
    assert pages["Overview"] == 1
