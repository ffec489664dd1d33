"""The access window (R19): phases -> union of intervals -> plans covering it (R20).

Phases come from the command line (``--phase NAME=START/END``, ``--start/--end``)
or from the workbook's Schedule sheet. Overlapping phases count once; hours
are real elapsed hours (through UTC, so a DST change is counted as it happened
and said). A flat plan runs without pause, so plans are checked against the
span from the first start to the last end, and gaps between phases are named.
Times and plan coverage use the rules of ``calcul_forfaits``. Stdlib only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.errors import UsageError
from toolkit.money.tariffs import rules, translated
from toolkit.workbook.model import Formula, WorkbookData

PHASES: tuple[str, ...] = layout.SCHEDULE.column("phase").choices
SHEET = layout.SCHEDULE.name


@dataclass(frozen=True)
class Phase:
    """One phase of the schedule, with aware start and end times."""

    name: str
    start: dt.datetime
    end: dt.datetime

    @property
    def seconds(self) -> int:
        """Real elapsed seconds of the phase."""
        return rules.elapsed_seconds(self.start, self.end)


@dataclass(frozen=True)
class Window:
    """The union of the phases' intervals and what surrounds it."""

    phases: tuple[Phase, ...]
    start: dt.datetime
    end: dt.datetime
    union_seconds: int
    gaps: tuple[tuple[dt.datetime, dt.datetime], ...]

    @property
    def hours(self) -> Decimal:
        """The access window: hours in at least one phase, overlaps counted once."""
        return Decimal(self.union_seconds) / 3600

    @property
    def span_hours(self) -> Decimal:
        """First start to last end: what a plan, which never pauses, must cover."""
        return Decimal(rules.elapsed_seconds(self.start, self.end)) / 3600

    @property
    def overlap_hours(self) -> Decimal:
        """Hours the phases share, counted once in :attr:`hours`."""
        return Decimal(sum(p.seconds for p in self.phases) - self.union_seconds) / 3600


def make_phase(name: str, start: str, end: str, zone: dt.tzinfo | None, where: str = "") -> Phase:
    """A phase from ISO 8601 texts (naive ones read in ``zone``, UTC if None)."""
    label = f"{where}phase {name!r}"
    with translated(UsageError):
        first = rules.parse_time(start, zone, f"{label} start")
        last = rules.parse_time(end, zone, f"{label} end")
        rules.check_interval(
            first, last, label, hint="correct its start or end: the end comes after the start"
        )
    return Phase(name, first, last)


def parse_phase(spec: str, zone: dt.tzinfo | None) -> Phase:
    """A phase from ``NAME=START/END``, e.g. ``install=2026-12-07T09:00/2026-12-07T12:00``."""
    name, _, times = spec.partition("=")
    start, _, end = times.partition("/")
    name = name.strip()
    if not (name and start and end):
        raise UsageError(
            f"--phase {spec!r}: expected NAME=START/END",
            hint="e.g. --phase install=2026-12-07T09:00/2026-12-07T12:00",
        )
    if name not in PHASES:
        raise UsageError(
            f"--phase {spec!r}: unknown phase {name!r}", hint="use one of: " + ", ".join(PHASES)
        )
    return make_phase(name, start, end, zone)


def window(phases: Sequence[Phase]) -> Window:
    """The union of the phases' intervals (overlaps counted once) and the gaps between them."""
    if not phases:
        raise UsageError(
            "no phase to compute a window from",
            hint="give --start/--end or --phase NAME=START/END, or fill the Schedule sheet",
        )
    ordered = sorted(
        phases,
        key=lambda p: (p.start.astimezone(dt.timezone.utc), p.end.astimezone(dt.timezone.utc)),
    )
    union = 0
    gaps = []
    cur_start, cur_end = ordered[0].start, ordered[0].end
    for p in ordered[1:]:
        if p.start > cur_end:  # aware datetimes compare in real time
            union += rules.elapsed_seconds(cur_start, cur_end)
            gaps.append((cur_end, p.start))
            cur_start, cur_end = p.start, p.end
        elif p.end > cur_end:
            cur_end = p.end
    union += rules.elapsed_seconds(cur_start, cur_end)
    last = max((p.end for p in phases), key=lambda t: t.astimezone(dt.timezone.utc))
    return Window(tuple(phases), ordered[0].start, last, union, tuple(gaps))


def window_lines(win: Window) -> list[str]:
    """The phases, the window, gaps, a DST note and the plans covering it, as text lines."""
    h = rules.hours_text
    lines = []
    if len(win.phases) > 1 or win.phases[0].name in PHASES:
        lines = rules.table(
            [("phase", "start", "end", "hours")]
            + [
                (p.name, rules.stamp(p.start), rules.stamp(p.end), h(Decimal(p.seconds) / 3600))
                for p in win.phases
            ]
        )
    how = ""
    if len(win.phases) > 1:
        overlap = f"; overlaps of {h(win.overlap_hours)} counted once" if win.overlap_hours else ""
        how = f" (union of the phases{overlap})"
    span = f"{rules.stamp(win.start)} to {rules.stamp(win.end)}"
    if not win.gaps:
        lines.append(f"access window: {span} = {h(win.hours)}{how}")
    else:
        lines.append(f"access window: {h(win.hours)}{how}")
        for start, end in win.gaps:
            lines.append(
                f"gap: {rules.stamp(start)} to {rules.stamp(end)} "
                f"({h(Decimal(rules.elapsed_seconds(start, end)) / 3600)}) is in no "
                "phase; if the instance stays held, add it as a 'waiting' phase"
            )
        lines.append(f"a plan runs without pause: it must cover {span} = {h(win.span_hours)}")
    note = rules.offset_change_note(win.start, win.end)
    if note:
        lines.append(f"note: {note}")
    return lines + rules.coverage_lines(win.span_hours)


def phases_from_sheet(
    rows: Sequence[dict[str, Any]], row_numbers: Sequence[int] = (), zone: dt.tzinfo | None = None
) -> list[Phase]:
    """The Schedule sheet's phases; UsageError naming the row and column of a bad cell."""
    phases = []
    for i, row in enumerate(rows):
        excel = row_numbers[i] if i < len(row_numbers) else i + 2
        for column in ("phase", "start", "end"):
            if row.get(column) in (None, ""):
                raise UsageError(
                    f"sheet {SHEET}, row {excel}, column {column}: empty",
                    hint="fill it in, or delete the row",
                )
        phases.append(
            make_phase(
                str(row["phase"]),
                str(row["start"]),
                str(row["end"]),
                zone,
                where=f"sheet {SHEET}, row {excel}: ",
            )
        )
    return phases


def asked_phases(
    *,
    data: WorkbookData | None,
    workbook: object,
    start: str | None,
    end: str | None,
    specs: Sequence[str],
    zone: dt.tzinfo | None,
) -> tuple[list[Phase], list[str]]:
    """The phases `iteralab schedule` was given: the Schedule sheet of ``data`` (read from
    ``workbook``; None: no workbook), a ``start``-``end`` window and ``NAME=START/END``
    specs; with the times as they were typed (what the time-zone line judges)."""
    texts: list[str] = []
    found: list[Phase] = []
    if data is not None:
        rows = data.tables[SHEET]
        if not rows:
            raise UsageError(
                f"{workbook}: the {SHEET} sheet has no phase",
                hint="type one row per phase (phase, start, end)",
            )
        found += phases_from_sheet(rows, data.row_numbers.get(SHEET, []), zone)
        texts += [str(r.get(c)) for r in rows for c in ("start", "end")]
    if start or end:
        if not (start and end):
            raise UsageError("--start and --end go together", hint="give both")
        found.append(make_phase("window", start, end, zone))
        texts += [start, end]
    for spec in specs:
        found.append(parse_phase(spec, zone))
        texts += spec.partition("=")[2].split("/", 1)
    return found, texts


# --------------------------------------------------------------------------- sheet cells


def _letters() -> dict[str, str]:
    return {name: layout.column_letter(layout.SCHEDULE, name) for name in layout.SCHEDULE.names}


def covering_formula(span_cell: str) -> str:
    """A formula naming the plans that cover ``span_cell`` hours, as :func:`covering_text`."""
    text = (
        '"none: longer than the 30-day plan (720 h); revise the schedule or price the '
        'extra period explicitly"'
    )
    for days in reversed(rules.PLAN_DAYS):
        label = rules.covering_text(Decimal(days * 24))
        text = f'IF({span_cell}<={days * 24},"{label}",{text})'
    return text


def covering_text(span_hours: Decimal) -> str:
    """The value :func:`covering_formula` computes for ``span_hours``."""
    if span_hours > rules.PLAN_DAYS[-1] * 24:
        return (
            "none: longer than the 30-day plan (720 h); revise the schedule or price the "
            "extra period explicitly"
        )
    return rules.covering_text(span_hours)


def schedule_cells(
    rows: Sequence[dict[str, Any]], zone: dt.tzinfo | None = None, first_row: int = 2
) -> list[dict[str, Any]]:
    """The Schedule rows with their computed columns filled (formulas with cached values).

    ``from_h``/``to_h`` are values (time zones cannot be read by a formula);
    ``hours``, ``counted_hours`` and, on the first row, ``window_hours``,
    ``span_hours`` and ``covering_plans`` are formulas computing the same
    numbers as :func:`window`. A row whose times cannot be read gets empty
    computed cells and the first row says the window was not computed. Rows
    are assumed to be written from Excel row ``first_row`` on, in this order.
    """
    col = _letters()
    out = [dict(row) for row in rows]
    for row in out:
        for c in layout.SCHEDULE.all_columns:
            if c.computed:
                row[c.name] = None
    if not out:
        return out
    phases: list[Phase | None] = []
    problem = None
    for i, row in enumerate(rows):
        try:
            phases.append(
                make_phase(
                    str(row.get("phase")),
                    str(row.get("start") or ""),
                    str(row.get("end") or ""),
                    zone,
                )
            )
        except UsageError as exc:
            phases.append(None)
            problem = problem or f"row {first_row + i}: {exc.message}"
    found = [p for p in phases if p is not None]
    if not found:
        out[0]["covering_plans"] = f"not computed: {problem}"
        return out
    origin = min((p.start for p in found), key=lambda t: t.astimezone(dt.timezone.utc))
    last = first_row + len(out) - 1

    def rng(name: str) -> str:
        return f"${col[name]}${first_row}:${col[name]}${last}"

    def hours_from_origin(t: dt.datetime) -> Decimal:
        return Decimal(rules.elapsed_seconds(origin, t)) / 3600

    counted: list[Decimal] = []
    for i, (row, phase) in enumerate(zip(out, phases, strict=True)):
        if phase is None:
            continue
        r = first_row + i
        start_h, end_h = hours_from_origin(phase.start), hours_from_origin(phase.end)
        earlier = [
            hours_from_origin(q.end)
            for q in phases[:i]
            if q is not None and hours_from_origin(q.start) == start_h
        ]
        earlier += [hours_from_origin(q.end) for q in found if hours_from_origin(q.start) < start_h]
        new = max(Decimal(0), end_h - max([start_h, *earlier]))
        counted.append(new)
        f, t = f"{col['from_h']}{r}", f"{col['to_h']}{r}"
        row["from_h"], row["to_h"] = start_h, end_h
        row["hours"] = Formula(f"{t}-{f}", end_h - start_h)
        # The latest end among the phases before this one: LARGE(...,1) over an array inside
        # SUMPRODUCT, which evaluates it as an array in Excel, LibreOffice and Gnumeric
        # alike with no array entry (hours from the origin: never below the 0 of the others).
        row["counted_hours"] = Formula(
            f"MAX(0,{t}-MAX({f},"
            f"SUMPRODUCT(LARGE(({rng('from_h')}<{f})*{rng('to_h')},1)),"
            f"SUMPRODUCT(LARGE(({rng('from_h')}={f})*(ROW({rng('from_h')})<ROW({f}))"
            f"*{rng('to_h')},1))))",
            new,
        )
    win = window(found)
    first = out[0]
    if problem:
        first["covering_plans"] = f"not computed: {problem}"
        return out
    span = f"{col['span_hours']}{first_row}"
    first["window_hours"] = Formula(f"SUM({rng('counted_hours')})", sum(counted, Decimal(0)))
    first["span_hours"] = Formula(f"MAX({rng('to_h')})-MIN({rng('from_h')})", win.span_hours)
    first["covering_plans"] = Formula(covering_formula(span), covering_text(win.span_hours))
    return out
