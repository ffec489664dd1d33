"""Render the documentation's pictures of the workbook's sheets into docs/img/SHEET.png.

Regenerated, never hand-made: ``make screenshots`` (or ``python docs/screenshots.py``) runs the
quick demo in a temporary folder (its report included), has LibreOffice print the workbook to
PDF headless and cuts each sheet's page into ``docs/img/SHEET.png`` with poppler's
``pdftoppm``. The Overview is pictured as printed: the page the workbook's own print setup
gives it, found by its footer. Any other sheet is printed on one page of its own, as wide as
its used range, and its picture keeps the top-left part. ``--sheets`` picks the sheets
(default: Overview, Summary, Settlement and Decision); ``--workbook PATH`` renders an existing,
reported workbook instead. Needs LibreOffice (``soffice``) and poppler-utils (``pdftoppm``,
``pdftotext``): ``make system-packages``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from toolkit import layout

OUT = Path(__file__).resolve().parent / "img"
SHEETS = ("Overview", "Summary", "Settlement", "Decision")
#: Sheets pictured as printed, whole: their page under the workbook's own print setup.
AS_PRINTED = frozenset({"Overview"})
PRINTED_DPI = 90
#: Any other sheet's page is as wide as its used range: the picture keeps its top-left part.
ONE_PAGE_DPI = 80
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


def to_pdf(workbook: Path, folder: Path, *, one_page_per_sheet: bool = False) -> Path:
    """The workbook printed by LibreOffice into ``folder``: with its own print setup, or
    every sheet on one page of its own (``one_page_per_sheet``)."""
    target = "pdf"
    if one_page_per_sheet:
        options = json.dumps({"SinglePageSheets": {"type": "boolean", "value": "true"}})
        target = f"pdf:calc_pdf_Export:{options}"
    folder.mkdir(parents=True, exist_ok=True)
    profile = folder / "profile"
    subprocess.run(
        [
            _tool("soffice"),
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--calc",
            "--convert-to",
            target,
            "--outdir",
            str(folder),
            str(workbook.resolve()),
        ],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    return folder / (workbook.stem + ".pdf")


def footer_sheets(pdf: Path) -> list[str]:
    """The sheet each page of a printed ``pdf`` belongs to, in page order: the first word of
    its footer (the workbook's print setup writes the sheet's name there)."""
    text = subprocess.run(
        [_tool("pdftotext"), "-layout", str(pdf), "-"],
        check=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    ).stdout
    sheets = []
    for page in text.split("\f"):
        lines = [line for line in page.splitlines() if line.strip()]
        if lines:
            sheets.append(lines[-1].split()[0])
    return sheets


def to_png(pdf: Path, page: int, target: Path, *, whole: bool) -> None:
    """Page ``page`` (1-based) of ``pdf`` as ``target``: the whole page, or its top-left part
    at most."""
    dpi, crop = PRINTED_DPI, []
    if not whole:
        dpi = ONE_PAGE_DPI
        crop = ["-x", "0", "-y", "0", "-W", str(MAX_WIDTH_PX), "-H", str(MAX_HEIGHT_PX)]
    subprocess.run(
        [
            _tool("pdftoppm"),
            "-png",
            "-r",
            str(dpi),
            "-f",
            str(page),
            "-l",
            str(page),
            *crop,
            "-singlefile",
            str(pdf),
            str(target.with_suffix("")),
        ],
        check=True,
        timeout=TIMEOUT_S,
    )


def _sheet_names(text: str) -> tuple[str, ...]:
    """``--sheets``: comma-separated names of the workbook's sheets."""
    known = [sheet.name for sheet in layout.SHEETS]
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in known]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no sheet: e.g. Overview,Summary")
    if unknown:
        raise argparse.ArgumentTypeError(
            f"the workbook has no sheet {', '.join(map(repr, unknown))}: "
            f"choose among {', '.join(known)}"
        )
    return names


def pages(workbook: Path, folder: Path, sheets: Sequence[str]) -> dict[str, tuple[Path, int]]:
    """Each sheet's printed PDF (written under ``folder``) and its 1-based page there."""
    found: dict[str, tuple[Path, int]] = {}
    printed = [name for name in sheets if name in AS_PRINTED]
    if printed:
        pdf = to_pdf(workbook, folder / "printed")
        footers = footer_sheets(pdf)
        for name in printed:
            if name not in footers:
                sys.exit(f"error: no page of {pdf} is the {name} sheet's")
            found[name] = (pdf, footers.index(name) + 1)
    others = [name for name in sheets if name not in AS_PRINTED]
    if others:
        pdf = to_pdf(workbook, folder / "one-page", one_page_per_sheet=True)
        order = [sheet.name for sheet in layout.SHEETS]  # one page per sheet, in sheet order
        found.update({name: (pdf, order.index(name) + 1) for name in others})
    return found


def main(argv: list[str] | None = None) -> int:
    """Write docs/img/SHEET.png for each chosen sheet; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workbook", type=Path, help="a reported workbook (default: run the quick demo)"
    )
    parser.add_argument(
        "--sheets",
        type=_sheet_names,
        default=SHEETS,
        help=f"comma-separated sheets to picture (default: {','.join(SHEETS)})",
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="where the PNGs go (default: docs/img)"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="iteralab-screens-") as temp:
        folder = Path(temp)
        workbook = args.workbook.resolve() if args.workbook else demo_workbook(folder / "demo")
        found = pages(workbook, folder, args.sheets)
        for name in dict.fromkeys(args.sheets):
            pdf, page = found[name]
            target = args.out / f"{name.lower()}.png"
            to_png(pdf, page, target, whole=name in AS_PRINTED)
            print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
