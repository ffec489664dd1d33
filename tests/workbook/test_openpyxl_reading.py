"""openpyxl is imported without numpy where nothing has loaded numpy yet
(toolkit/workbook/openpyxl_reading.py): the workbook still reads, numpy still imports
afterwards, and a process that loaded numpy first keeps openpyxl as it always is. That no
other toolkit module imports openpyxl is tests/project/test_architecture.py's rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT, SAMPLES


def _run(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; the JSON it prints last."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_a_workbook_reads_without_numpy_and_numpy_imports_afterwards() -> None:
    found = _run(
        "import json, sys\n"
        "from toolkit.workbook import store\n"
        f"data = store.read({str(SAMPLES / 'example_campaign.xlsx')!r})\n"
        "loaded = 'numpy' in sys.modules\n"
        "import numpy\n"
        "print(json.dumps({'loaded': loaded, 'variants': len(data.tables['Variants']),\n"
        "    'numpy_works': float(numpy.float64(2.5) * 2)}))\n"
    )
    assert found == {"loaded": False, "variants": found["variants"], "numpy_works": 5.0}
    assert isinstance(found["variants"], int) and found["variants"] > 0


def test_numpy_loaded_first_keeps_openpyxl_as_it_is() -> None:
    found = _run(
        "import json, numpy\n"
        "from toolkit.workbook import cells\n"
        "from openpyxl.compat import numbers\n"
        "print(json.dumps({'numpy_cells': numbers.NUMPY}))\n"
    )
    assert found == {"numpy_cells": True}


def test_the_validate_command_never_loads_numpy(tmp_path: Path) -> None:
    """`python -X importtime` lists the refused import too: the process's modules say it."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps({'numpy': 'numpy' in sys.modules})))\n"
        "from toolkit.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "validate", str(SAMPLES / "example_campaign.xlsx")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )
    assert "valid" in done.stdout, done.stdout + done.stderr  # validation ran to its verdict
    assert json.loads(done.stdout.splitlines()[-1]) == {"numpy": False}
