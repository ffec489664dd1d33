"""Recalculate a workbook with LibreOffice or Gnumeric headless: the independent calculators.

``recalculate(xlsx, out_dir)`` converts the file with ``soffice`` under a
private profile that forces every formula to be recalculated on load (a file
written by xlsxwriter declares itself as Excel's, and LibreOffice would keep
its cached values otherwise). Read the result with openpyxl ``data_only=True``
to see LibreOffice's values. ``needs_soffice`` skips a test when LibreOffice is
not installed.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
SSCONVERT = shutil.which("ssconvert")
TIMEOUT_S = 120

#: CI sets this: there the formula checks must run, never be skipped.
REQUIRED = os.environ.get("ITERALAB_REQUIRE_LIBREOFFICE") == "1"

needs_soffice = pytest.mark.skipif(
    SOFFICE is None and not REQUIRED, reason="LibreOffice (soffice) is not installed"
)

_ITEM = (
    '<item oor:path="/org.openoffice.Office.Calc/Formula/Load">'
    '<prop oor:name="{}" oor:op="fuse"><value>0</value></prop></item>'
)
#: 0 = "always recalculate" on load, for OOXML (xlsx) and ODF files.
_PROFILE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
    'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    + _ITEM.format("OOXMLRecalcMode")
    + "\n"
    + _ITEM.format("ODFRecalcMode")
    + "\n"
    "</oor:items>\n"
)


def _require(program: str | None, name: str, package: str) -> None:
    """Skip the test without the engine; under CI (``REQUIRED``) fail instead."""
    if program is None:
        if REQUIRED:
            pytest.fail(
                f"{name} is required (ITERALAB_REQUIRE_LIBREOFFICE=1) but not "
                f"installed: apt-get install {package}"
            )
        pytest.skip(f"{name} is not installed")


def recalculate(xlsx_path: str | Path, out_dir: str | Path) -> Path:
    """Convert ``xlsx_path`` with LibreOffice, recalculating every formula; return the copy.

    The copy has the same file name, in ``out_dir`` (which must differ from the
    source folder). Raises RuntimeError with LibreOffice's output when the
    conversion fails, and skips the test when LibreOffice is not installed.
    """
    _require(SOFFICE, "LibreOffice (soffice)", "libreoffice-calc-nogui")
    assert SOFFICE is not None
    source, out = Path(xlsx_path).resolve(), Path(out_dir).resolve()
    if source.parent == out:
        raise ValueError(f"out_dir {out} must differ from the source folder")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lo-profile-") as profile:
        user = Path(profile) / "user"
        user.mkdir()
        (user / "registrymodifications.xcu").write_text(_PROFILE, encoding="utf-8")
        done = subprocess.run(
            [
                SOFFICE,
                f"-env:UserInstallation={Path(profile).as_uri()}",
                "--headless",
                "--norestore",
                "--calc",
                "--convert-to",
                "xlsx",
                "--outdir",
                str(out),
                str(source),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    result = out / source.name
    if done.returncode != 0 or not result.exists():
        raise RuntimeError(
            f"LibreOffice could not convert {source} (exit {done.returncode}):\n"
            f"{done.stdout}\n{done.stderr}"
        )
    return result


def recalculate_gnumeric(xlsx_path: str | Path, out_dir: str | Path) -> Path:
    """Recalculate ``xlsx_path`` with Gnumeric (``ssconvert --recalc``); return the copy.

    Gnumeric is stricter than LibreOffice where Excel is (a bare boolean array
    in SUMPRODUCT counts 0), so a formula both engines agree on is portable.
    Read the copy with openpyxl ``read_only=True, data_only=True`` (its comment
    parts trip openpyxl's full reader). Skips, or fails under CI, without it.
    """
    _require(SSCONVERT, "Gnumeric (ssconvert)", "gnumeric")
    assert SSCONVERT is not None
    source, out = Path(xlsx_path).resolve(), Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    result = out / f"gnumeric-{source.name}"
    done = subprocess.run(
        [SSCONVERT, "--recalc", str(source), str(result)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not result.exists():
        raise RuntimeError(
            f"Gnumeric could not convert {source} (exit {done.returncode}):\n"
            f"{done.stdout}\n{done.stderr}"
        )
    return result


#: The two calculators, by name: each recalculates a copy and returns its path.
ENGINES: dict[str, Callable[[Path, Path], Path]] = {
    "libreoffice": recalculate,
    "gnumeric": recalculate_gnumeric,
}


def formula_cells(path: Path) -> dict[tuple[str, str], tuple[str, Any]]:
    """Each formula cell of ``path``: (sheet, cell) -> (its formula, the value cached with it)."""
    written = openpyxl.load_workbook(path)
    cached = openpyxl.load_workbook(path, data_only=True)
    out = {}
    for ws in written.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                text = getattr(cell.value, "text", cell.value)
                if isinstance(text, str) and text.startswith("="):
                    out[(ws.title, cell.coordinate)] = (
                        text,
                        cached[ws.title][cell.coordinate].value,
                    )
    return out


def _values(path: Path) -> dict[tuple[str, str], Any]:
    with warnings.catch_warnings():  # Gnumeric writes no default style: harmless here
        warnings.filterwarnings("ignore", "Workbook contains no default style")
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    out = {}
    for ws in book.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if hasattr(cell, "coordinate"):
                    out[(ws.title, cell.coordinate)] = cell.value
    book.close()
    return out


def _same(a: Any, b: Any) -> bool:
    if a in (None, "") and b in (None, ""):
        return True
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def differences(
    path: Path, engine: str, folder: Path, formulas: dict[tuple[str, str], tuple[str, Any]]
) -> list[str]:
    """Each formula cell ``engine`` recalculates to another value than the generator's."""
    recalculated = _values(ENGINES[engine](path, folder))
    return [
        f"{sheet}!{cell}: {text} -> {engine} {recalculated.get((sheet, cell))!r}, "
        f"generator {cached!r}"
        for (sheet, cell), (text, cached) in sorted(formulas.items())
        if not _same(recalculated.get((sheet, cell)), cached)
    ]


def sheet_rows(path: Path, sheet: str) -> list[dict[str, Any]]:
    """The rows of ``sheet`` under its header, as dicts of the cached values (blank rows left out)."""
    ws = openpyxl.load_workbook(path, data_only=True)[sheet]
    values = list(ws.iter_rows(values_only=True))
    return [
        dict(zip(values[0], row, strict=True))
        for row in values[1:]
        if any(v is not None for v in row)
    ]
