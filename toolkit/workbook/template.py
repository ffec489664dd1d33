"""Build ``workbook_template.xlsx`` from ``toolkit.layout`` (never hand-edited).

Run ``python -m toolkit.workbook.template [PATH]`` after changing the layout;
a test fails when the committed template differs from a fresh build.
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolkit.plumbing.atomic import publish
from toolkit.plumbing.shipped import CHECKOUT, TEMPLATE
from toolkit.workbook.model import WorkbookData
from toolkit.workbook.render import render

#: The committed template, at the checkout's top level (plumbing.shipped names it).
DEFAULT_PATH = CHECKOUT / TEMPLATE


def build_template(path: str | Path = DEFAULT_PATH) -> Path:
    """Write the empty campaign workbook to ``path`` (whole) and return it."""
    return publish(path, lambda temp: render(WorkbookData.empty(), temp))


if __name__ == "__main__":
    print(build_template(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_PATH))
