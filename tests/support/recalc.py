"""Recalculate a workbook with LibreOffice or Gnumeric headless: the independent calculators.

``recalculate(xlsx, out_dir)`` converts the file with ``soffice`` under a
private profile that forces every formula to be recalculated on load (a file
written by xlsxwriter declares itself as Excel's, and LibreOffice would keep
its cached values otherwise). Read the result with openpyxl ``data_only=True``
to see LibreOffice's values. ``needs_soffice`` skips a test when LibreOffice is
not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

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
