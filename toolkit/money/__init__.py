"""Money: the flat-rate tariff rules, the schedule's access window, the settlement arithmetic.

Stdlib only; formulas are plain text (:class:`toolkit.workbook.model.Formula`).
"""
