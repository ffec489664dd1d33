"""The files the toolkit ships, found the same way in a checkout and in an installed wheel.

In a checkout they sit at the repository's top level (``workbook_template.xlsx``,
``tariffs/``, ``samples/``), where the seed wants them; a wheel carries the same
files inside the package as ``toolkit/shipped/`` (pyproject's package-dir
mapping), found with :mod:`importlib.resources`. Every other module asks here.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from toolkit.errors import ToolkitError

CHECKOUT = Path(__file__).resolve().parents[2]

TEMPLATE = "workbook_template.xlsx"
TARIFF_RULES = "tariffs/calcul_forfaits.py"
TARIFF_CATALOG = "tariffs/tarifs-forfaits.csv"
GPU_CATALOG = "tariffs/gpus.csv"
SAMPLES = "samples"


def shipped(relative: str) -> Path:
    """The shipped file or folder ``relative`` (POSIX path from the repository's top level).

    Raises ToolkitError naming both places looked in when neither holds it.
    """
    in_checkout = CHECKOUT / relative
    if (CHECKOUT / "pyproject.toml").is_file() and in_checkout.exists():
        return in_checkout
    installed = Path(str(importlib.resources.files("toolkit"))) / "shipped" / relative
    if installed.exists():
        return installed
    raise ToolkitError(
        f"shipped file {relative} not found (looked in {in_checkout} and {installed})",
        hint="reinstall iteragpu-lab (the wheel carries it), or run from a complete checkout",
    )
