"""The charts a reported workbook carries: durations under Summary, costs beside Settlement.

Their series point at the Summary and Settlement cells, so they follow the
formulas. They depend only on how many rows those sheets hold, so the store
rebuilds them when it reads a workbook that has them and a save that does not
recompute the report keeps them.
"""

from __future__ import annotations

from toolkit import layout
from toolkit.workbook.model import Chart

RUN_COLOUR = "#7F7F7F"
MEDIAN_COLOUR = "#C00000"
BAR_COLOUR = "#1F4E78"


def _range(sheet: layout.Sheet, column: str, first: int, last: int) -> str:
    letter = layout.column_letter(sheet, column)
    return f"='{sheet.name}'!${letter}${first}:${letter}${last}"


def workbook_charts(n_variants: int, n_configurations: int) -> list[Chart]:
    """The durations chart under the Summary rows, the cost chart beside the Settlement."""
    charts = []
    if n_variants:
        last = n_variants + 1
        categories = _range(layout.SUMMARY, "variant_id", 2, last)
        series = [
            {"name": f"run {k}", "categories": categories,
             "values": _range(layout.SUMMARY, f"run_{k}_s", 2, last),
             "line": {"none": True},
             "marker": {"type": "circle", "size": 6,
                        "fill": {"color": RUN_COLOUR}, "border": {"color": RUN_COLOUR}}}
            for k in range(1, layout.RUN_COLUMNS + 1)
        ]
        series.append({"name": "median", "categories": categories,
                       "values": _range(layout.SUMMARY, "median_s", 2, last),
                       "line": {"none": True},
                       "marker": {"type": "dash", "size": 14,
                                  "fill": {"color": MEDIAN_COLOUR},
                                  "border": {"color": MEDIAN_COLOUR}}})
        charts.append(Chart(layout.SUMMARY.name, f"B{last + 3}", "line",
                            "Measured time per variant: every successful run, median marked",
                            tuple(series), "variant", "measured_s (s)"))
    if n_configurations:
        last = n_configurations + 1
        # Right of the table: the incurred rows follow the configurations below it.
        beside = layout.letter(len(layout.SETTLEMENT.names) + 2)
        charts.append(Chart(
            layout.SETTLEMENT.name, f"{beside}2", "column",
            "Cost per accepted corpus (USD; no bar: undefined or no price)",
            ({"name": "cost per accepted corpus",
              "categories": _range(layout.SETTLEMENT, "item", 2, last),
              "values": _range(layout.SETTLEMENT, "cost_per_accepted_usd", 2, last),
              "fill": {"color": BAR_COLOUR}},),
            "configuration", "USD"))
    return charts
