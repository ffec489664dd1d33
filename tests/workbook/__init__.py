"""toolkit.workbook and the layout: template, reading, saving, formulas, protection."""
