"""Render the documentation's pictures of the Summary, Settlement and Decision sheets.

Regenerated, never hand-made: ``make screenshots`` (or ``python docs/screenshots.py``) runs the
quick demo in a temporary folder (its report included), has LibreOffice print the workbook to
PDF headless, one page per sheet, and cuts each sheet's page into ``docs/img/SHEET.png`` with
poppler's ``pdftoppm``. ``--workbook PATH`` renders an existing, reported workbook instead.
Needs LibreOffice (``soffice``) and poppler-utils (``pdftoppm``): ``make system-packages``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from toolkit import layout

OUT = Path(__file__).resolve().parent / "img"
SHEETS = ("Summary", "Settlement", "Decision")
#: A sheet's page is as wide as its used range; the picture keeps its left part.
DPI = 80
MAX_WIDTH_PX = 1400
MAX_HEIGHT_PX = 700
TIMEOUT_S = 600


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        sys.exit(
            f"error: {name} is not installed: run `make system-packages` "
            "(LibreOffice and poppler-utils)"
        )
    return found


def demo_workbook(folder: Path) -> Path:
    """Run ``iteralab demo --quick`` in ``folder``; return its reported workbook."""
    iteralab = Path(sys.executable).with_name("iteralab")
    subprocess.run(
        [str(iteralab), "demo", "--quick", str(folder)], check=True, timeout=TIMEOUT_S * 3
    )
    return folder / "example_campaign.xlsx"


def to_pdf(workbook: Path, folder: Path) -> Path:
    """The workbook printed by LibreOffice: every sheet on one page of its own."""
    options = json.dumps({"SinglePageSheets": {"type": "boolean", "value": "true"}})
    profile = folder / "profile"
    subprocess.run(
        [
            _tool("soffice"),
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--calc",
            "--convert-to",
            f"pdf:calc_pdf_Export:{options}",
            "--outdir",
            str(folder),
            str(workbook),
        ],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    return folder / (workbook.stem + ".pdf")


def to_png(pdf: Path, page: int, target: Path) -> None:
    """Page ``page`` (1-based) of ``pdf`` as ``target``, its top-left part at most."""
    stem = target.with_suffix("")
    subprocess.run(
        [
            _tool("pdftoppm"),
            "-png",
            "-r",
            str(DPI),
            "-f",
            str(page),
            "-l",
            str(page),
            "-x",
            "0",
            "-y",
            "0",
            "-W",
            str(MAX_WIDTH_PX),
            "-H",
            str(MAX_HEIGHT_PX),
            "-singlefile",
            str(pdf),
            str(stem),
        ],
        check=True,
        timeout=TIMEOUT_S,
    )


def main(argv: list[str] | None = None) -> int:
    """Write docs/img/summary.png, settlement.png and decision.png; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workbook", type=Path, help="a reported workbook (default: run the quick demo)"
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="where the PNGs go (default: docs/img)"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="iteralab-screens-") as temp:
        folder = Path(temp)
        workbook = args.workbook.resolve() if args.workbook else demo_workbook(folder / "demo")
        pdf = to_pdf(workbook, folder)
        order = [sheet.name for sheet in layout.SHEETS]  # one page per sheet, in sheet order
        for name in SHEETS:
            target = args.out / f"{name.lower()}.png"
            to_png(pdf, order.index(name) + 1, target)
            print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
