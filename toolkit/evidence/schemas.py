"""pandera schemas for every sheet, derived from ``toolkit.layout``.

Each column kind becomes an element-wise check; required columns refuse
blanks; declared unique columns refuse duplicates. ``sheet_findings`` turns
pandera's failure cases into findings with Excel row numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from functools import cache
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaErrors

from toolkit import layout
from toolkit.findings import Finding
from toolkit.money.incurred import INCOMPLETE
from toolkit.money.tariffs import rules
from toolkit.workbook.model import WorkbookData

#: Kinds whose measurements are never 0: 0 s or 0 B would stand for "not measured".


def _is_number(v: Any) -> bool:
    # Decimal: amounts the toolkit computes, before a save turns them into floats.
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) and math.isfinite(v)


def _is_datetime(v: Any) -> bool:
    """The one date-time form every command reads, alike on every Python version (3.11's
    fromisoformat accepts forms 3.10 refuses)."""
    if not isinstance(v, str):
        return False
    try:
        return rules.read_time(v).tzinfo is not None
    except ValueError:
        return False


#: kind -> (predicate, what was expected)
KIND_CHECKS: dict[str, tuple[Any, str]] = {
    layout.INT: (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    layout.NUMBER: (_is_number, "a number"),
    layout.SECONDS: (lambda v: _is_number(v) and v >= 0, "a duration in seconds (>= 0)"),
    layout.BYTES: (lambda v: isinstance(v, int) and v >= 0, "a whole number of bytes (>= 0)"),
    layout.USD: (lambda v: _is_number(v) and v >= 0, "an amount in USD (>= 0)"),
    layout.USD_OR_UNDEFINED: (
        lambda v: v == "undefined" or (_is_number(v) and v >= 0),
        "an amount in USD (>= 0) or 'undefined'",
    ),
    layout.MONEY: (lambda v: _is_number(v) and v >= 0, "an amount (>= 0)"),
    layout.RATIO: (lambda v: _is_number(v) and 0 <= v <= 1, "a ratio between 0 and 1"),
    layout.DATETIME: (
        _is_datetime,
        "an ISO 8601 date-time with its UTC offset, e.g. 2026-12-07T09:00+01:00",
    ),
    layout.TEXT: (lambda v: isinstance(v, str), "text"),
}


#: Texts the toolkit itself writes in a computed cell of a typed kind, by (sheet, column):
#: its own output must validate. A total incurred whose currency has a row without an amount
#: is 'incomplete', never a sum that counts the missing amount as 0.
COMPUTED_TEXTS: dict[tuple[str, str], frozenset[str]] = {
    (layout.SETTLEMENT.name, "amount"): frozenset({INCOMPLETE}),
}


def _or_text(predicate: Any, texts: frozenset[str]) -> Any:
    """``predicate``, true also for one of ``texts``."""
    return lambda v: (isinstance(v, str) and v in texts) or predicate(v)


def _column_schema(col: layout.Column, unique: bool, sheet_name: str) -> pa.Column:
    checks = []
    if col.choices and not col.open_choices:
        choices = col.choices
        checks.append(
            pa.Check(
                lambda v, c=choices: v in c,
                element_wise=True,
                name="choice",
                error="one of: " + ", ".join(choices),
            )
        )
    elif col.kind in KIND_CHECKS:
        predicate, expected = KIND_CHECKS[col.kind]
        texts = COMPUTED_TEXTS.get((sheet_name, col.name))
        if texts:
            predicate = _or_text(predicate, texts)
        checks.append(pa.Check(predicate, element_wise=True, name=col.kind, error=expected))
    return pa.Column(
        None, checks=checks, nullable=not col.required, unique=unique, required=True, coerce=False
    )


@cache
def schema(sheet_name: str) -> pa.DataFrameSchema:
    """The pandera schema of a form or table sheet (a form is a one-row frame)."""
    sheet = layout.SHEET_BY_NAME[sheet_name]
    columns = {
        c.name: _column_schema(c, c.name in sheet.unique, sheet_name) for c in sheet.all_columns
    }
    return pa.DataFrameSchema(columns, name=sheet_name, strict=False)


def frame(data: WorkbookData, sheet_name: str) -> pd.DataFrame:
    """The sheet as an object-dtype DataFrame indexed by Excel row number."""
    sheet = layout.SHEET_BY_NAME[sheet_name]
    if sheet.kind == "form":
        form = data.forms[sheet_name]
        return pd.DataFrame([form], columns=sheet.names, dtype=object, index=[0])
    rows = data.tables[sheet_name]
    index = [data.excel_row(sheet_name, i) for i in range(len(rows))]
    return pd.DataFrame(rows, columns=sheet.names, dtype=object, index=index)


def prepare() -> None:
    """Build every sheet's schema and run pandera's first validation, on the smallest sheet
    with no rows (it registers pandera's backends: a tenth of a second), so that a helper
    process is ready before its data comes
    (:class:`toolkit.evidence.schemas_beside.SchemasBeside`)."""
    for name in layout.SCHEMA_SHEETS:
        schema(name)
    smallest = min(layout.SCHEMA_SHEETS, key=lambda name: len(layout.SHEET_BY_NAME[name].names))
    columns = layout.SHEET_BY_NAME[smallest].names
    schema(smallest).validate(pd.DataFrame(columns=columns, dtype=object))


def findings_by_sheet(data: WorkbookData, sheet_names: Iterable[str]) -> dict[str, list[Finding]]:
    """:func:`sheet_findings` of each sheet named."""
    return {name: sheet_findings(data, name) for name in sheet_names}


def sheet_findings(data: WorkbookData, sheet_name: str) -> list[Finding]:
    """Validate one sheet lazily; every failure case becomes a finding."""
    sheet = layout.SHEET_BY_NAME[sheet_name]
    df = frame(data, sheet_name)
    try:
        schema(sheet_name).validate(df, lazy=True)
    except SchemaErrors as errors:
        return _to_findings(sheet, errors.failure_cases)
    return []


def _to_findings(sheet: layout.Sheet, cases: pd.DataFrame) -> list[Finding]:
    findings = []
    for case in cases.to_dict("records"):
        column = str(case.get("column") or "")
        check = str(case.get("check") or "")
        value = case.get("failure_case")
        index = case.get("index")
        if sheet.kind == "form":
            # A form's field lives in column A; its row is the field's position + 2.
            row = sheet.names.index(column) + 2 if column in sheet.names else None
        else:
            row = int(index) if isinstance(index, (int, float)) and not pd.isna(index) else None
        findings.append(
            Finding(
                sheet.name, row, column, _check_name(check), _message(sheet, column, check, value)
            )
        )
    return findings


def _check_name(check: str) -> str:
    """pandera reports a check by its error text; name it by rule instead."""
    if check.startswith("not_nullable"):
        return "required"
    if check.startswith("field_uniqueness"):
        return "unique"
    if check.startswith("one of:"):
        return "choice"
    for kind, (_, expected) in KIND_CHECKS.items():
        if check == expected:
            return kind
    return check


def _message(sheet: layout.Sheet, column: str, check: str, value: Any) -> str:
    name = _check_name(check)
    if name == "required":
        return f"{column} is required: fill it in"
    if name == "unique":
        return f"{column} {value!r} appears more than once: give each row its own {column}"
    if name == "choice":
        return f"{column} must be {check}; found {value!r}: pick from the dropdown"
    if name == layout.DATETIME:
        return (
            f"{column} must be {check}; found {value!r}: type it as text in that form "
            "(the cell formatted as Text); a date-time typed as an Excel date takes the "
            "UTC offset of Protocol deadline, so state it there once, as text such as "
            "2026-12-11T09:00+01:00"
        )
    return f"{column} must be {check}; found {value!r}"
