"""The parts of openpyxl that iteralab reads with, imported without numpy where none has
loaded numpy yet.

openpyxl imports numpy when it is installed, only to accept numpy numbers as the values of
cells it writes; iteralab writes with xlsxwriter and reads with openpyxl. A command that
needs numpy nowhere else (``iteralab validate``) is spared its import: a fifteenth of a CPU
second, and its memory, in a command that takes under a second at 1,000 attempts
(benchmarks/README.md). numpy imports as usual afterwards, for whoever needs it (the
report's charts); openpyxl then only refuses numpy numbers as cell values, which iteralab
never gives it. Every toolkit module takes openpyxl from here
(tests/project/test_architecture.py holds the others to it).

A thread that first imports numpy during that one import of openpyxl would be refused it:
the command line runs no such thread, and a program that embeds iteralab has numpy loaded
already in practice (pandas, torch), where nothing is hidden.
"""

from __future__ import annotations

import sys

if "openpyxl" not in sys.modules and "numpy" not in sys.modules:
    sys.modules["numpy"] = None  # type: ignore[assignment]  # an import of it stops at once
    try:
        import openpyxl  # noqa: F401 - imported here so that the lines below find it loaded
    except ImportError:
        pass  # something openpyxl loads needs numpy after all: imported again below, with it
    finally:
        del sys.modules["numpy"]

from openpyxl import load_workbook  # noqa: E402 - after the import above, by design
from openpyxl.formula.translate import Translator  # noqa: E402
from openpyxl.reader.excel import ExcelReader  # noqa: E402
from openpyxl.worksheet.formula import ArrayFormula  # noqa: E402

__all__ = ["ArrayFormula", "ExcelReader", "Translator", "load_workbook"]
