"""The only modules that import openpyxl or xlsxwriter.

``render`` writes a whole workbook from plain data with xlsxwriter (formats,
dropdowns, formulas with their cached values); ``store`` reads it back and saves
it safely. Every writer reads, changes the data, and renders anew: appended
rows get their formats, formulas keep cached values, and nothing is half-written.
"""

from toolkit.workbook.model import Formula, WorkbookData

__all__ = ["Formula", "WorkbookData"]
