"""The report's parts: statistics, Summary, quality gate, costs, Decision draft, charts,
the reviewer's markdown, and :func:`toolkit.report.refresh.refresh` that recomputes the
derived sheets in memory. Stdlib plus the workbook model; matplotlib only for PNGs.
Writing a reported workbook and its folder is :mod:`toolkit.reporting`.
"""
