"""Computed cells a person typed over: a constant where the report writes a formula.

Summary, Settlement and Schedule hold formulas whose cached values the Python generator
computed, and the two must agree. A number typed in place of one of them reads like
evidence and is not: a finance reader would see a 1 USD budget or a 1 s median that no
attempt measured. Stale values (attempts ingested since the last report) keep their
formulas and are no finding here; ``iteralab report`` writes every formula again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.findings import Finding
from toolkit.report.refresh import refresh
from toolkit.workbook.model import Formula, WorkbookData

#: How a derived row is matched with its recomputed self; None: by position (Schedule's rows
#: are the phases a person typed, in their order).
ROW_KEYS: dict[str, tuple[str, ...] | None] = {
    layout.SUMMARY.name: ("variant_id",),
    layout.SETTLEMENT.name: ("item", "kind"),
    layout.SCHEDULE.name: None,
}


def typed_over_findings(data: WorkbookData, base_dir: Path) -> list[Finding]:
    """One finding per derived cell holding a typed value where the report writes a formula."""
    derived = [s for s in layout.FORMULA_SHEETS if data.tables.get(s)]
    if not derived:
        return []  # never reported: nothing computed to type over
    fresh = data.copy()
    refresh(fresh, base_dir, stamp=False)  # only its formulas are read
    found = []
    for sheet in derived:
        kept = data.formulas.get(sheet, {})
        matched = _recomputed_rows(sheet, data.tables[sheet], fresh.tables[sheet])
        for i, (row, new) in enumerate(zip(data.tables[sheet], matched, strict=True)):
            for column, value in (new or {}).items():
                typed = row.get(column)
                if (
                    isinstance(value, Formula)
                    and (i, column) not in kept
                    and typed not in (None, "")
                ):
                    found.append(_finding(data, sheet, i, column, typed))
    return found


def _recomputed_rows(
    sheet: str, rows: list[dict[str, Any]], fresh: list[dict[str, Any]]
) -> list[dict[str, Any] | None]:
    keys = ROW_KEYS[sheet]
    if keys is None:
        return [fresh[i] if i < len(fresh) else None for i in range(len(rows))]
    by_key = {tuple(r.get(k) for k in keys): r for r in fresh}
    return [by_key.get(tuple(r.get(k) for k in keys)) for r in rows]


def _finding(data: WorkbookData, sheet: str, index: int, column: str, typed: Any) -> Finding:
    excel = data.excel_row(sheet, index)
    cell = f"{sheet}!{layout.column_letter(layout.SHEET_BY_NAME[sheet], column)}{excel}"
    return Finding(
        sheet,
        excel,
        column,
        "formula",
        (
            f"{cell} holds the typed value {typed!r} where `iteralab report` writes a formula: "
            "a figure typed over the computation is not evidence; run `iteralab report` to write "
            "the formula again, and correct the evidence sheets (Attempts, Rentals, Tariffs, "
            "Verification) instead"
        ),
    )
