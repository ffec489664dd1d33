"""`iteralab report`: refresh the computed sheets from the raw attempts, write the outputs.

:func:`refresh` is the in-memory part: from a WorkbookData it computes the
Summary, Memory, Settlement and Schedule's computed columns, the Decision draft
and the charts, and puts them into the data (input sheets and the memo fields a
person typed are left as they are). :func:`build` reads the workbook under its
lock, refuses an unlocked or edited protocol, refreshes, saves atomically, and
writes the reviewer's folder beside the workbook. The report validates the
workbook as read (what ``iteralab validate`` checks, bar the sheets it is about
to recompute) and states the findings in report.md: a reviewer sees them beside
the numbers they touch. One hashing of the predictions files serves both the
validation and the archive list (:mod:`toolkit.report.checks`).
"""

from __future__ import annotations

import contextlib
import csv
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from toolkit import layout, memory, schedule
from toolkit.errors import ToolkitError
from toolkit.findings import Finding
from toolkit.report import charts, costs, decision, quality, summary
from toolkit.report.costs import Costing
from toolkit.report.decision import Decision
from toolkit.report.summary import VariantStats
from toolkit.tariffs import Catalog, catalog_from_workbook, column_letter, rules
from toolkit.workbook.model import WorkbookData

REPORT_MD = "report.md"
#: Sheets that refresh() recomputes whole: what they held before is not checked.
RECOMPUTED_SHEETS = (layout.MEMORY.name, layout.SUMMARY.name, layout.SETTLEMENT.name)
ATTEMPTS_CSV = "attempts.csv"
MANIFEST_CSV = "manifest.csv"


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


@dataclass
class Outputs:
    """Files written beside the workbook."""

    folder: Path
    files: list[Path]
    png_skipped: str | None


def default_folder(workbook: Path) -> Path:
    """``<workbook stem>_report/`` beside the workbook."""
    return workbook.with_name(workbook.stem + "_report")


def _window(data: WorkbookData) -> tuple[schedule.Window | None, str | None]:
    rows = data.tables[layout.SCHEDULE.name]
    if not rows:
        return None, "the Schedule sheet has no phase: fill it to choose a plan (R19)"
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


def _memory_rows(data: WorkbookData, base_dir: Path) -> list[dict[str, Any]]:
    estimates = {str(v.get("variant_id")): memory.variant_estimate(v, base_dir)
                 for v in data.tables["Variants"]}
    observed = memory.peak_observations(data.tables["Attempts"])
    return memory.memory_rows(estimates, observed)


def refresh(data: WorkbookData, base_dir: Path) -> Refreshed:
    """Recompute every computed sheet of ``data`` in place and return what was found.

    Protocol, Variants, Attempts, Manifest, Tariffs and Audit are not changed;
    Schedule keeps its typed phases (only its computed columns are refreshed);
    Decision keeps every memo field a person edited.
    """
    protocol = data.forms["Protocol"]
    all_stats = summary.variant_stats(data)
    quality.apply_gate(all_stats, protocol)
    data.tables["Summary"] = summary.summary_rows(all_stats, data)
    data.row_numbers["Summary"] = list(range(2, 2 + len(all_stats)))

    data.tables["Memory"] = _memory_rows(data, base_dir)
    data.row_numbers["Memory"] = list(range(2, 2 + len(data.tables["Memory"])))

    data.tables["Schedule"] = schedule.schedule_cells(data.tables["Schedule"])
    win, window_problem = _window(data)
    catalog, catalog_problem = _catalog(data)
    found = costs.costings(all_stats, data.tables["Variants"], data.tables["Attempts"],
                           data.tables["Manifest"], catalog, catalog_problem, win,
                           window_problem)
    medians = [f"{layout.SUMMARY.name}!${column_letter(layout.SUMMARY, 'median_s')}${r}"
               for r in range(2, 2 + len(all_stats))]
    others = [r for r in data.tables["Settlement"] if r.get("kind") == "other cost"]
    span = costs.schedule_span_cell() if win is not None else None
    data.tables["Settlement"] = costs.settlement_rows(found, catalog, medians, span, win, others)
    data.row_numbers["Settlement"] = list(range(2, 2 + len(data.tables["Settlement"])))

    window_text = None
    if win is not None:
        window_text = (f"campaign window {rules.stamp(win.start)} to {rules.stamp(win.end)} "
                       f"({rules.hours_text(win.span_hours)})"
                       + _deadline_note(win, protocol.get("deadline")))
    d = decision.decide(all_stats, data.tables["Variants"], found, protocol, catalog,
                        window_text)
    decision.update_memo(data.forms["Decision"], d)
    data.charts = charts.workbook_charts(len(all_stats), len(found))
    notes = []
    if catalog_problem and any(c.gpu_slug for c in found):
        notes.append(f"no prices: {catalog_problem}")
    if window_problem and any(c.gpu_slug for c in found):
        notes.append(f"no plan: {window_problem}")
    return Refreshed(all_stats, found, d, catalog, win, window_problem, notes=notes)


def _deadline_note(win: schedule.Window, deadline: Any) -> str:
    try:
        due = rules.parse_time(str(deadline), None, "deadline")
    except rules.TariffError:
        return ""
    late = rules.elapsed_seconds(due, win.end)
    if late > 0:
        return (f", ending {rules.hours_text(Decimal(late) / 3600)} after the deadline: "
                "revise the schedule")
    return ", ending by the deadline (covering a plan says nothing about finishing on time)"


def build(workbook: Path, folder: Path | None = None, pngs: bool = True
          ) -> tuple[Refreshed, Outputs]:
    """Validate and refresh ``workbook`` under its lock and write the reviewer's folder.

    Raises ProtocolError when the protocol is not locked or was edited since;
    other findings do not stop the report, they are stated in it.
    """
    from toolkit import protocol
    from toolkit.report import reviewer
    from toolkit.report.checks import ChecksBeside
    from toolkit.workbook import store

    checked = [s.name for s in layout.SHEETS
               if s.kind != "text" and s.name not in RECOMPUTED_SHEETS]
    with contextlib.ExitStack() as stack:
        with store.editing(workbook, derive=False) as data:
            sha = protocol.require_lock(data, workbook)
            # Started on the data as read, before the refresh changes it.
            checks = stack.enter_context(ChecksBeside(data, workbook, checked))
            result = refresh(data, workbook.parent)
            result.protocol_sha256 = sha
        folder = folder or default_folder(workbook)
        folder.mkdir(parents=True, exist_ok=True)
        files = [_csv(folder / ATTEMPTS_CSV, layout.ATTEMPTS, data.tables["Attempts"]),
                 _csv(folder / MANIFEST_CSV, layout.MANIFEST, data.tables["Manifest"])]
        skipped = "PNG charts skipped: --no-png"
        if pngs:
            pictures = charts.write_pngs(folder, result.stats, result.costs)
            files += list(pictures.paths)
            skipped = pictures.skipped
        outputs = Outputs(folder, files, skipped)
        found = checks.result()
    result.findings = found.findings
    md = folder / REPORT_MD
    md.write_text(reviewer.markdown(workbook, data, result, outputs, found.predictions),
                  encoding="utf-8")
    outputs.files.insert(0, md)
    return result, outputs


def _csv(path: Path, sheet: layout.Sheet, rows: list[dict[str, Any]]) -> Path:
    names = sheet.names
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        writer.writerows([["" if (v := row.get(n)) is None else v for n in names]
                          for row in rows])
    return path
