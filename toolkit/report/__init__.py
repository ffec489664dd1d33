"""The report: Summary, Settlement, Decision draft and charts from the raw attempts (R14-R23).

``build`` (in :mod:`toolkit.report.build`) refreshes a workbook and writes the
reviewer's folder; ``refresh`` does the in-memory part for callers that already
hold a WorkbookData. Stdlib plus the workbook store; matplotlib only for PNGs.
"""

from toolkit.report.build import build, default_folder, refresh

__all__ = ["build", "default_folder", "refresh"]
