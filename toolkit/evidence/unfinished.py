"""Attempts that started and left no record, and whether the run that started them is alive.

`iteralab run` journals a start line before each attempt and holds the campaign lock
(``NAME.campaign.lock``, its holder in ``NAME.campaign.json``) from preparation to its
last ingestion. A start without a record is an attempt still running while a run holds
the lock; once the lock is free (the operating system releases it when its process
dies), or its holder on this machine is dead, it is an attempt killed with its run: it
must become an ``interrupted`` row (seed 000: every attempted run is recorded), which
:func:`toolkit.runner.lost.record_lost_attempts` writes for ``ingest``, ``report`` and
``run --resume`` alike. ``validate`` names each one here (:func:`findings`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.evidence import journal
from toolkit.findings import Finding
from toolkit.plumbing import beside
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData


def lock_path(workbook: Path) -> Path:
    """``NAME.campaign.lock`` beside ``NAME.xlsx``."""
    return beside.campaign_lock(workbook)


def holder_path(workbook: Path) -> Path:
    """``NAME.campaign.json``: who holds (or last held) the campaign lock."""
    return beside.campaign_holder(workbook)


def holder(workbook: Path) -> dict[str, Any]:
    """The campaign lock's recorded holder ({} when none is recorded or it is unreadable)."""
    with contextlib.suppress(OSError, ValueError):
        found = json.loads(holder_path(workbook).read_text(encoding="utf-8"))
        if isinstance(found, dict):
            return found
    return {}


def who(found: dict[str, Any]) -> str:
    """The holder as a person reads it: pid, host, start time."""
    if not found:
        return "another iteralab run (no holder recorded)"
    return f"pid {found.get('pid')} on {found.get('host')}, started {found.get('started_at')}"


def _dead_here(found: dict[str, Any]) -> bool:
    """The recorded holder ran on this machine and its process no longer exists."""
    if found.get("host") != socket.gethostname() or not isinstance(found.get("pid"), int):
        return False
    try:
        os.kill(found["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's process)
    return False


@contextlib.contextmanager
def gone_run_starts(workbook: Path) -> Iterator[list[dict[str, Any]]]:
    """The journal's starts without a record whose run is gone, the campaign lock held
    meanwhile (so no run starts while the caller records them); [] while a run holds it,
    or when the lock cannot be taken here (a read-only folder)."""
    workbook = Path(workbook)
    starts = journal.unfinished(workbook)
    if not starts:
        yield []
        return
    import filelock  # only where starts are left: validate of a whole campaign needs none

    lock = filelock.FileLock(str(lock_path(workbook)), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        yield starts if _dead_here(holder(workbook)) else []
        return
    except OSError:
        yield []
        return
    try:
        yield starts
    finally:
        lock.release()


def run_alive(workbook: Path) -> bool | None:
    """Whether a run holds the campaign lock of ``workbook`` now (None: cannot tell here)."""
    path = lock_path(workbook)
    if not path.exists():
        return False
    import filelock

    lock = filelock.FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        return not _dead_here(holder(workbook))
    except OSError:
        return None
    lock.release()
    return False


def findings(workbook: Path, data: WorkbookData | None = None) -> list[Finding]:
    """One finding per attempt that started and has no record: running now (its row comes
    when it ends), or killed with its run (`iteralab ingest` records it as interrupted).
    An attempt the workbook (``data``, else read here) holds is not lost, whatever its
    journal line became: a deleted or torn record is the journal check's finding."""
    workbook = Path(workbook)
    try:
        starts = journal.unfinished(workbook)
        if starts:
            data = store.read(workbook) if data is None else data
            held = {str(a.get("attempt_id")) for a in data.tables["Attempts"]}
            starts = [s for s in starts if str(s.get("attempt_id")) not in held]
    except (ToolkitError, OSError):
        return []  # an unreadable journal (or workbook) is another check's finding
    if not starts:
        return []
    alive = run_alive(workbook)
    found = []
    for start in starts:
        spec = start.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        variant = (spec.get("variant") or {}).get("variant_id")
        what = (
            f"attempt {start.get('attempt_id')!r} (variant {variant!r}, repetition "
            f"{spec.get('repetition')}) started {start.get('started_at')}"
        )
        if alive:
            message = (
                f"{what} and has no row yet: it is running now ({who(holder(workbook))}); "
                f"its row comes when it ends: validate again after the run"
            )
        elif alive is None:
            message = (
                f"{what} and has no row; whether its run is alive cannot be told here "
                f"(the campaign lock {lock_path(workbook).name} cannot be taken): "
                f"once that run is over, `iteralab ingest {workbook.name}` records it"
            )
        else:
            message = (
                f"{what} and left no record: its run (pid {start.get('pid')}) is gone; "
                f"`iteralab ingest {workbook.name}` records it as interrupted (every "
                "attempted run is a row)"
            )
        found.append(Finding("Attempts", None, "attempt_id", "unfinished", message))
    return found
