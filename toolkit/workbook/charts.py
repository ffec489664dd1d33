"""The charts a reported workbook carries: durations under Summary, costs beside Settlement.

Their series point at the Summary and Settlement cells, so they follow the
formulas. They depend only on how many rows those sheets hold, so the store
rebuilds them when it reads a workbook that has them and a save that does not
recompute the report keeps them.
"""

from __future__ import annotations

from toolkit import layout
from toolkit.workbook.model import Chart, WorkbookData

RUN_COLOUR = "#7F7F7F"
MEDIAN_COLOUR = "#C00000"
BAR_COLOUR = "#1F4E78"


def _range(sheet: layout.Sheet, column: str, first: int, last: int) -> str:
    letter = layout.column_letter(sheet, column)
    return f"='{sheet.name}'!${letter}${first}:${letter}${last}"


EXAMPLE = layout.EXAMPLE


def plans_note(data: WorkbookData) -> str:
    """The provider, plan and catalog date the Settlement's configurations are priced from,
    e.g. ``IteraGPU, 7-day plans, catalog of 2026-09-24``; EXAMPLE first when one rests on an
    example figure."""
    configurations = [
        r
        for r in data.tables.get(layout.SETTLEMENT.name, [])
        if r.get("kind") == "configuration" and r.get("catalog_date")
    ]
    sellers = set()
    for r in configurations:
        for t in data.tables.get(layout.TARIFFS.name, []):
            if (t.get("gpu_slug"), t.get("plan_days"), t.get("catalog_date")) == (
                r.get("gpu_slug"),
                r.get("plan_days"),
                r.get("catalog_date"),
            ):
                sellers.add(str(t.get("provider") or "shipped catalog"))
    days = sorted({int(r["plan_days"]) for r in configurations if r.get("plan_days")})
    dates = sorted({str(r["catalog_date"]) for r in configurations})
    parts = [
        ", ".join(sorted(sellers)),
        f"{'/'.join(map(str, days))}-day plans" if days else "",
        f"catalog of {', '.join(dates)}" if dates else "",
    ]
    note = "; ".join(p for p in parts if p)
    if any(EXAMPLE in str(r.get("grounds") or "") for r in configurations):
        note = f"{EXAMPLE} figures: {note}" if note else f"{EXAMPLE} figures"
    return note


def workbook_charts(data: WorkbookData) -> list[Chart]:
    """The durations chart under the Summary rows, the cost chart beside the Settlement."""
    n_variants = len(data.tables.get(layout.SUMMARY.name, []))
    n_configurations = sum(
        1 for r in data.tables.get(layout.SETTLEMENT.name, []) if r.get("kind") == "configuration"
    )
    note = plans_note(data)
    charts = []
    if n_variants:
        last = n_variants + 1
        categories = _range(layout.SUMMARY, "variant_id", 2, last)
        # Columns, not points: a run that does not exist is an empty-text cell, which a
        # spreadsheet plots as 0; a 0-high column draws nothing, a point would sit at 0 s.
        series = [
            {
                "name": f"run {k}",
                "categories": categories,
                "values": _range(layout.SUMMARY, f"run_{k}_s", 2, last),
                "fill": {"color": RUN_COLOUR},
                "border": {"none": True},
            }
            for k in range(1, layout.RUN_COLUMNS + 1)
        ]
        series.append(
            {
                "name": "median",
                "categories": categories,
                "values": _range(layout.SUMMARY, "median_s", 2, last),
                "fill": {"color": MEDIAN_COLOUR},
                "border": {"none": True},
            }
        )
        charts.append(
            Chart(
                sheet=layout.SUMMARY.name,
                anchor=f"B{last + 3}",
                kind="column",
                title="Measured time per variant: each successful run, then the median "
                "(no column: no such run)",
                series=tuple(series),
                x_title="variant",
                y_title="measured_s (s)",
            )
        )
    if n_configurations:
        last = n_configurations + 1
        # Right of the table: the incurred rows follow the configurations below it.
        beside = layout.letter(len(layout.SETTLEMENT.names) + 2)
        charts.append(
            Chart(
                sheet=layout.SETTLEMENT.name,
                anchor=f"{beside}2",
                kind="column",
                title="Projected cost per expected corpus, a FORECAST (USD"
                + (f"; {note}" if note else "")
                + "; no bar: no price or outside the "
                "equal-quality comparison)",
                series=(
                    {
                        "name": "projected cost per expected corpus (forecast)",
                        "categories": _range(layout.SETTLEMENT, "item", 2, last),
                        "values": _range(
                            layout.SETTLEMENT, "projected_cost_per_expected_usd", 2, last
                        ),
                        "fill": {"color": BAR_COLOUR},
                    },
                ),
                x_title="configuration",
                y_title="USD",
            )
        )
    return charts
