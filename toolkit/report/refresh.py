"""Recompute the derived sheets of a workbook's data from its raw attempts (in memory).

From a WorkbookData, :func:`refresh` computes the Summary, Memory, Settlement
and Schedule's computed columns, the Decision draft and the charts, and puts
them into the data (input sheets and the memo fields a person typed are left
as they are). Saving is the caller's: :mod:`toolkit.editing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.errors import ToolkitError
from toolkit.evidence import bookkeeping, money_log, money_rules
from toolkit.evidence.audit_chain import campaign_head
from toolkit.evidence.protocol import current_lock
from toolkit.findings import Finding
from toolkit.money import schedule
from toolkit.money.tariffs import Catalog, catalog_from_workbook, rules, with_iso_date
from toolkit.plumbing.clock import now_text
from toolkit.report import costs, decision, memory_sheet, quality, summary
from toolkit.report.costs import Costing
from toolkit.report.decision import Decision
from toolkit.report.summary import VariantStats
from toolkit.workbook.charts import workbook_charts
from toolkit.workbook.model import WorkbookData

#: Sheets that refresh() recomputes whole: what they held before is not checked.
RECOMPUTED_SHEETS = (layout.MEMORY.name, layout.SUMMARY.name, layout.SETTLEMENT.name)


@dataclass
class Refreshed:
    """What one refresh computed, for the CLI and the reviewer's report."""

    stats: list[VariantStats]
    costs: list[Costing]
    decision: Decision
    catalog: Catalog | None
    window: schedule.Window | None
    window_problem: str | None
    protocol_sha256: str = ""
    notes: list[str] = field(default_factory=list)
    #: What validation found in the workbook as read, before the refresh.
    findings: list[Finding] = field(default_factory=list)
    #: The Settlement's incurred part: rentals, other costs, totals, ledger-only lines.
    incurred: list[dict[str, Any]] = field(default_factory=list)


def _window(data: WorkbookData) -> tuple[schedule.Window | None, str | None]:
    rows = data.tables[layout.SCHEDULE.name]
    if not rows:
        return None, "the Schedule sheet has no phase: fill it to choose a plan"
    try:
        phases = schedule.phases_from_sheet(rows, data.row_numbers.get(layout.SCHEDULE.name, []))
        return schedule.window(phases), None
    except ToolkitError as exc:
        return None, exc.message


def _catalog(data: WorkbookData) -> tuple[Catalog | None, str | None]:
    if not data.tables[layout.TARIFFS.name]:
        return None, "the Tariffs sheet is empty"
    try:
        return catalog_from_workbook(data), None
    except ToolkitError as exc:
        return None, exc.message


def refresh(
    data: WorkbookData,
    base_dir: Path,
    untrusted: Mapping[str, int] | None = None,
    *,
    stamp: bool = True,
) -> Refreshed:
    """Recompute every computed sheet of ``data`` in place and return what was found.

    Protocol, Variants, Attempts, Manifest, Tariffs and Audit are not changed;
    Schedule keeps its typed phases (only its computed columns are refreshed);
    Decision keeps every memo field a person edited. ``untrusted`` counts, per
    variant, the attempt rows with integrity findings: their numbers stay (the
    formulas see the same rows) but no verdict or choice rests on them. ``stamp=False``
    leaves the memo's report_run as it was (a refresh of a copy that is never saved need
    not hash every input sheet again: 0.15 s at 10,000 attempts).
    """
    data.formulas.clear()  # every sheet that holds formulas is recomputed below
    # A catalog date Excel turned into a date is written back as the ISO day it stands for,
    # so that the Settlement's lookups compare text with text.
    data.tables["Tariffs"] = [with_iso_date(r) for r in data.tables["Tariffs"]]
    lock = current_lock(data)
    logged = money_log.log_money_edits(data, lock.sha256 if lock else "")
    kept = bookkeeping.log(data, lock.sha256) if lock else None
    protocol = data.forms["Protocol"]
    all_stats = summary.variant_stats(data)
    for st in all_stats:
        st.untrusted = (untrusted or {}).get(st.variant_id, 0)
    quality.apply_gate(all_stats, protocol)
    data.tables["Summary"] = summary.summary_rows(all_stats, data)
    data.row_numbers["Summary"] = list(range(2, 2 + len(all_stats)))

    data.tables["Memory"] = memory_sheet.memory_rows_of(data, base_dir)
    data.row_numbers["Memory"] = list(range(2, 2 + len(data.tables["Memory"])))

    data.tables["Schedule"] = schedule.schedule_cells(data.tables["Schedule"])
    win, window_problem = _window(data)
    catalog, catalog_problem = _catalog(data)
    found = costs.costings(all_stats, data, catalog, catalog_problem, win, window_problem)
    data.tables["Settlement"] = costs.settlement_rows(found, data, catalog, win)
    data.row_numbers["Settlement"] = list(range(2, 2 + len(data.tables["Settlement"])))

    window_text = None
    if win is not None:
        window_text = (
            f"campaign window {rules.stamp(win.start)} to {rules.stamp(win.end)} "
            f"({rules.hours_text(win.span_hours)})" + _deadline_note(win, protocol.get("deadline"))
        )
    incurred = [r for r in data.tables["Settlement"] if r.get("part") == "incurred"]
    d = decision.decide(
        all_stats,
        data.tables["Variants"],
        found,
        protocol=protocol,
        catalog=catalog,
        window_text=window_text,
        money_text=costs.incurred_summary(incurred),
    )
    decision.update_memo(data.forms["Decision"], d)
    data.forms["Decision"]["draft"] += (  # the Audit rows are all logged by now
        f"\ncampaign head: {campaign_head(data)} (keep it outside the folder; "
        "`iteralab verify WORKBOOK --head HASH`)"
    )
    # Which run the memo reflects: validate names a memo older than the numbers it quotes.
    if stamp:
        data.forms["Decision"]["report_run"] = money_rules.memo_stamp(data, now_text())
    data.charts = workbook_charts(data)
    notes = [f"logged in Audit (prices): {logged}"] if logged else []
    if kept:
        notes.append(f"logged in Audit: {kept}")
    if catalog_problem and any(c.gpu_slug for c in found):
        notes.append(f"no prices: {catalog_problem}")
    if window_problem and any(c.gpu_slug for c in found):
        notes.append(f"no plan: {window_problem}")
    return Refreshed(
        all_stats, found, d, catalog, win, window_problem, notes=notes, incurred=incurred
    )


#: Validation checks whose findings a refresh clears by logging the edit in Audit.
LOGGED_BY_REFRESH = ("edited-after-attempts", "bookkeeping-edit")


def still_standing(findings: list[Finding], data: WorkbookData) -> list[Finding]:
    """``findings`` (the workbook as read) less the edits :func:`refresh` has just logged in
    Audit: one report states what is still wrong after it, never what it cleared."""
    now = set(money_log.money_edit_findings(data) + bookkeeping.findings(data))
    return [f for f in findings if f.check not in LOGGED_BY_REFRESH or f in now]


def _deadline_note(win: schedule.Window, deadline: Any) -> str:
    try:
        due = rules.parse_time(str(deadline), None, "deadline")
    except rules.TariffError:
        return ""
    late = rules.elapsed_seconds(due, win.end)
    if late > 0:
        return (
            f", ending {rules.hours_text(Decimal(late) / 3600)} after the deadline: "
            "revise the schedule"
        )
    return ", ending by the deadline (covering a plan says nothing about finishing on time)"
