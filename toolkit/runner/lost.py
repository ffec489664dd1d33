"""Interrupted rows for attempts killed with their run: one rule for `run --resume`,
`ingest` and `report`.

A run killed outright (SIGKILL, power loss) leaves its attempt's start line in the
journal and no record. Whoever next finds the run gone (:mod:`toolkit.evidence.unfinished`)
journals an ``interrupted`` record for it, every measurement empty with its reason, so
the attempt is a row the moment anyone looks; its slot runs again on ``--resume``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from toolkit.errors import WorkbookError
from toolkit.evidence import journal, unfinished
from toolkit.runner.spec import AttemptSpec
from toolkit.workbook import store


def journal_interrupted(workbook: Path, starts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Journal an interrupted record for each start (their run is gone) that the workbook
    does not hold already, whatever its journal line became (a torn line); return them."""
    if starts:
        held = {str(a.get("attempt_id")) for a in store.read(workbook).tables["Attempts"]}
        starts = [s for s in starts if str(s.get("attempt_id")) not in held]
    if not starts:
        return []
    from toolkit.runner.attempt import fallback_record  # torch, only when one was lost

    records = []
    for entry in starts:
        spec = _spec(workbook, entry)
        note = (
            f"interrupted: the run (pid {entry.get('pid')}) ended while this attempt ran "
            "and left no record (killed, or the machine stopped); items completed not "
            "known (0 here is a lower bound); its slot runs again on --resume"
        )
        record = fallback_record(spec, "interrupted", 0, note, None, str(entry.get("started_at")))
        journal.append(workbook, record)
        records.append(record)
    return records


def _spec(workbook: Path, entry: dict[str, Any]) -> AttemptSpec:
    """The attempt spec of a start line; WorkbookError naming the keys the runner never
    writes or the ones it lacks (an edited line), instead of a traceback."""
    spec = entry["spec"]
    known = {f.name for f in dataclasses.fields(AttemptSpec)}
    required = {
        f.name
        for f in dataclasses.fields(AttemptSpec)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    extra, missing = sorted(set(spec) - known), sorted(required - set(spec))
    if extra or missing:
        what = "; ".join(
            part
            for part in (
                f"unknown key(s) {', '.join(map(repr, extra))}" if extra else "",
                f"missing key(s) {', '.join(map(repr, missing))}" if missing else "",
            )
            if part
        )
        raise WorkbookError(
            f"{journal.journal_path(workbook)}: the start line of attempt "
            f"{entry.get('attempt_id')!r} holds a spec the runner never writes ({what}); "
            "nothing was written",
            hint="the journal is written by `iteralab run`; do not edit it: restore it "
            "from a copy of the campaign folder or remove that line",
        )
    return AttemptSpec(**spec)


def record_lost_attempts(workbook: Path) -> list[dict[str, Any]]:
    """For `ingest` and `report`: journal an interrupted record for each attempt whose run
    is gone (the campaign lock free, or its holder here dead), holding the lock meanwhile;
    nothing while a run holds it. Returns the records written."""
    with unfinished.gone_run_starts(Path(workbook)) as starts:
        return journal_interrupted(Path(workbook), starts)


def lost_line(lost: list[dict[str, Any]]) -> str:
    """What :func:`record_lost_attempts` recorded, in one line."""
    return f"recorded {len(lost)} attempt(s) killed with their run as interrupted: " + ", ".join(
        str(r["attempt"]["attempt_id"]) for r in lost
    )
