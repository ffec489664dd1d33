"""Render docs/images/overview.png: the Overview page of a reported workbook, as printed.

Regenerated, never hand-made: ``python docs/overview_png.py`` runs the quick demo in a
temporary folder (its report included), has LibreOffice print the workbook to PDF headless
with the workbook's own print setup, finds the Overview's page by its footer and turns it into
a PNG with poppler's ``pdftoppm``. ``--workbook PATH`` renders an existing, reported workbook
instead. Needs LibreOffice (``soffice``) and poppler-utils (``pdftoppm``, ``pdftotext``):
``make system-packages``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "images" / "overview.png"
DPI = 90
TIMEOUT_S = 600


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        sys.exit(
            f"error: {name} is not installed: run `make system-packages` "
            "(LibreOffice and poppler-utils)"
        )
    return found


def overview_page(pdf: Path) -> int:
    """The 1-based page of ``pdf`` whose footer names the Overview sheet."""
    text = subprocess.run(
        [_tool("pdftotext"), "-layout", str(pdf), "-"],
        check=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    ).stdout
    for number, page in enumerate(text.split("\f"), start=1):
        lines = [line for line in page.splitlines() if line.strip()]
        if lines and lines[-1].split()[0] == "Overview":
            return number
    sys.exit(f"error: no page of {pdf} is the Overview sheet's")


def main(argv: list[str] | None = None) -> int:
    """Write docs/images/overview.png; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workbook", type=Path, help="a reported workbook (default: run the quick demo)"
    )
    parser.add_argument("--out", type=Path, default=OUT, help="the PNG to write")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="iteralab-overview-") as temp:
        folder = Path(temp)
        workbook = args.workbook
        if workbook is None:
            iteralab = Path(sys.executable).with_name("iteralab")
            subprocess.run(
                [str(iteralab), "demo", "--quick", "--quiet", str(folder / "demo")],
                check=True,
                timeout=TIMEOUT_S * 3,
            )
            workbook = folder / "demo" / "example_campaign.xlsx"
        profile = folder / "profile"
        subprocess.run(
            [
                _tool("soffice"),
                f"-env:UserInstallation={profile.as_uri()}",
                "--headless",
                "--norestore",
                "--calc",
                "--convert-to",
                "pdf",
                "--outdir",
                str(folder),
                str(workbook.resolve()),
            ],
            check=True,
            capture_output=True,
            timeout=TIMEOUT_S,
        )
        pdf = folder / (workbook.stem + ".pdf")
        page = overview_page(pdf)
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
                "-singlefile",
                str(pdf),
                str(args.out.with_suffix("")),
            ],
            check=True,
            timeout=TIMEOUT_S,
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
