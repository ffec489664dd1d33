"""``NAME.runs.jsonl``: each campaign run, as it begins and as it ends.

A run writes a start line (its run id) before its first attempt, and at its end one line
naming every attempt it started, then its time breakdown (:mod:`toolkit.runner.driver.breakdown`).
Each journal start line names its run. So a journal pair copied in by hand names a run this
log does not know, or a run that ended without starting that attempt: the ingestion refuses
it (:mod:`toolkit.evidence.provenance`). A run killed outright leaves its start line and no
end: its attempts are checked by their start lines alone. Stdlib only.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.plumbing import beside
from toolkit.plumbing.atomic import write_text
from toolkit.plumbing.clock import now_text
from toolkit.plumbing.plain import not_plain

START_FORMAT = "iteralab-run-start/1"
END_FORMAT = "iteralab-run-end/1"


def new_run_id() -> str:
    """A fresh id naming one `iteralab run` (or one merge) in the log and in its start lines."""
    return secrets.token_hex(8)


def path(workbook: str | Path) -> Path:
    """``NAME.runs.jsonl`` beside ``NAME.xlsx``."""
    return beside.run_times(workbook)


def append(workbook: str | Path, *documents: dict[str, Any]) -> None:
    """Append one line per document to the log (rewritten whole, as every file the toolkit
    writes: a few hundred bytes a run)."""
    target = path(workbook)
    try:
        before = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    if before and not before.endswith("\n"):
        before += "\n"
    lines = "".join(json.dumps(d, sort_keys=True) + "\n" for d in documents)
    write_text(target, before + lines)


def started(workbook: str | Path, run_id: str, **details: Any) -> None:
    """Log that run ``run_id`` begins (before its first start line is journaled)."""
    append(workbook, {"format": START_FORMAT, "run": run_id, "started_at": now_text(), **details})


def ended(
    workbook: str | Path,
    run_id: str,
    attempt_ids: Iterable[str],
    breakdown: dict[str, Any] | None = None,
) -> None:
    """Log that run ``run_id`` ended having started ``attempt_ids``, then its time breakdown
    when it has one (``report.md`` shows the last; :mod:`toolkit.report.run_time`)."""
    end = {"format": END_FORMAT, "run": run_id, "attempt_ids": list(attempt_ids)}
    end["ended_at"] = now_text()
    append(workbook, end, *([breakdown] if breakdown else []))


@dataclass
class Runs:
    """What the log says: the runs that began, and the attempts of each run that ended."""

    begun: set[str] = field(default_factory=set)
    ended: dict[str, set[str]] = field(default_factory=dict)

    def problem(self, run_id: Any, attempt_id: str, log_name: str) -> str | None:
        """Why a start line naming ``run_id`` for ``attempt_id`` is not one of a logged run's
        (None when it is)."""
        if not isinstance(run_id, str) or run_id not in self.begun:
            return f"names run {run_id!r}, which {log_name} does not list"
        if run_id in self.ended and attempt_id not in self.ended[run_id]:
            return (
                f"names run {run_id!r}, which ended having started {len(self.ended[run_id])} "
                "other attempt(s) and not this one"
            )
        return None


def read(workbook: str | Path) -> Runs:
    """The runs logged beside ``workbook``; empty when there is no log (or it is no plain
    file). An unreadable line is skipped: it names no run, so no start line can lean on it."""
    target = path(workbook)
    runs = Runs()
    if not_plain(target) is not None:
        return runs
    try:
        lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return runs
    for line in lines:
        try:
            document = json.loads(line)
        except ValueError:
            continue
        run_id = document.get("run") if isinstance(document, dict) else None
        if not isinstance(run_id, str):
            continue
        if document.get("format") == START_FORMAT:
            runs.begun.add(run_id)
        elif document.get("format") == END_FORMAT and isinstance(document.get("attempt_ids"), list):
            runs.ended[run_id] = {str(a) for a in document["attempt_ids"]}
    return runs


def lines_of(workbook: str | Path, run_ids: set[str]) -> list[str]:
    """The log's lines naming one of ``run_ids`` (a merge carries them to the other copy)."""
    target = path(workbook)
    if not_plain(target) is not None or not target.is_file():
        return []
    kept = []
    for line in target.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and document.get("run") in run_ids:
            kept.append(line)
    return kept
