"""Whether a journal record is one the runner wrote, as far as the campaign folder can tell.

:func:`toolkit.evidence.journal.read` keeps only records that each follow their own start
line. Here each kept record is held against what else the folder says about it: its start
line names a run that ``NAME.runs.jsonl`` logged (and, once that run ended, among the
attempts it started); the start's spec is the record's (repetition, seed, protocol, order
position) and the locked Variants row's settings, and its Manifest row agrees with that row;
no other attempt (a journal record before it, or a workbook row) fills the same completed
slot or names the same predictions file. A record failing one is never ingested, and
validate names it (a row an older ingestion let in included). A journal without any start
line (written before runs journaled them) is held only to its Manifest rows.

What this cannot prove: every file here is written by whoever holds the folder. A forger
who also writes a matching run line, a fresh predictions file and a consistent spec makes a
record these checks accept. Only a campaign head kept outside the folder
(`iteralab verify --head`) shows which rows were added after it was taken.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.evidence import journal, run_log
from toolkit.evidence.protocol import BOOKKEEPING, locks
from toolkit.evidence.work_columns import WORK_COLUMNS
from toolkit.workbook.model import WorkbookData

#: The spec keys an attempt's record repeats; a record saying otherwise is not its start's
#: (its variant: :func:`toolkit.evidence.journal.read`).
RECORD_KEYS = ("repetition", "seed", "protocol_sha256", "order_position")
#: Variant settings that define the work measured (the series rules' work columns): a start
#: planned under other values ran other work than the locked row declares. The cluster label
#: is left out: it says where a variant runs, a bookkeeping edit may move it after the lock
#: without an amendment (:data:`toolkit.evidence.protocol.BOOKKEEPING`), and the next run's
#: start lines then carry the new one.
SETTINGS = tuple(c for c in WORK_COLUMNS if c not in BOOKKEEPING["Variants"])
#: Manifest columns copied from the variant as it ran (an engine may record its own compile,
#: quantization or attention kernels, so those are not compared).
MANIFEST_SETTINGS = ("variant_id", "precision", "padding", "max_length")
WHAT_TO_DO = (
    "`iteralab run` writes each start line and record itself, so this pair was written by "
    "hand: remove both lines from the journal (and, when the row was ingested, restore the "
    "workbook from a copy of the campaign folder)"
)


#: The attempt cells these checks read: a journal streamed past keeps only these.
ATTEMPT_KEYS = (
    "attempt_id",
    "variant_id",
    "status",
    "predictions_path",
    *RECORD_KEYS,
)


def slim(entry: dict[str, Any]) -> dict[str, Any]:
    """What :func:`refusals` reads of a journal record: its attempt's few cells, its
    manifest's settings (a 50,000-record journal is not held whole for this)."""
    attempt = entry["attempt"]
    manifest = entry.get("manifest")
    return {
        "attempt": {k: attempt.get(k) for k in ATTEMPT_KEYS if k in attempt},
        "manifest": (
            {k: manifest.get(k) for k in ("manifest_id", *MANIFEST_SETTINGS) if k in manifest}
            if isinstance(manifest, dict)
            else manifest
        ),
    }


def slim_start(start: dict[str, Any]) -> dict[str, Any]:
    """What these checks read of a start line: its attempt, run and the spec's keys."""
    spec = start.get("spec")
    if isinstance(spec, dict) and spec:
        variant = spec.get("variant")
        spec = {k: spec[k] for k in RECORD_KEYS if k in spec} | (
            {"variant": {k: variant[k] for k in (*SETTINGS, "variant_id") if k in variant}}
            if isinstance(variant, dict)
            else {}
        )
    return {"attempt_id": start.get("attempt_id"), "run": start.get("run"), "spec": spec}


def refusals(
    data: WorkbookData,
    workbook: str | Path,
    records: Iterable[dict[str, Any]],
    starts: dict[str, dict[str, Any]] | None = None,
) -> dict[str, str]:
    """For each record (journal order) the folder does not bear out: its attempt id and
    why, in one sentence naming the journal and what to do.

    ``starts``: the journal's start lines by attempt id, each as :func:`slim_start` makes
    it, when the caller's pass over the journal kept them (read here when None)."""
    name = journal.journal_path(workbook).name
    if starts is None:
        starts = journal.starts(workbook, kept=slim_start)
    runs = run_log.read(workbook)
    records = list(records)
    journaled = {str(r["attempt"].get("attempt_id")) for r in records}
    earlier = _Earlier(Path(workbook).parent)
    for row in data.tables["Attempts"]:
        if str(row.get("attempt_id")) not in journaled:  # a row no journal line stands for
            earlier.add(row)
    runs_named = _named_runs_from(starts)
    log_name = run_log.path(workbook).name
    locked = _locked_variants(data)
    found: dict[str, str] = {}
    for entry in records:
        attempt = entry["attempt"]
        attempt_id = str(attempt.get("attempt_id"))
        start = starts.get(attempt_id, {})
        problem = (
            _spec_problem(start, attempt, locked)
            or _manifest_problem(entry, attempt, locked)
            or (earlier.repeats(attempt) if starts else None)
            or _run_problem(start, runs, attempt_id, attempt_id in runs_named, log_name)
        )
        if problem is not None:
            found[attempt_id] = f"{name}: attempt {attempt_id!r} {problem}: {WHAT_TO_DO}"
            continue
        earlier.add(attempt)
    return found


def _named_runs_from(starts: dict[str, dict[str, Any]]) -> set[str]:
    """The attempts whose start line comes at or after the first one naming its run: from
    there on the runner names every run (a journal written before runs were logged has
    none)."""
    ids = list(starts)
    for position, start in enumerate(starts.values()):
        if start.get("run") is not None:
            return set(ids[position:])
    return set()


def _run_problem(
    start: dict[str, Any], runs: run_log.Runs, attempt_id: str, named: bool, log_name: str
) -> str | None:
    if not start:
        return None  # a journal without start lines: journal.read keeps its records
    if start.get("run") is None:
        if not named:
            return None
        return (
            f"has a start line naming no run, though the runner names each run in {log_name} "
            "(as the start lines before it do)"
        )
    return runs.problem(start.get("run"), attempt_id, log_name)


def _spec_problem(
    start: dict[str, Any], attempt: dict[str, Any], locked: dict[tuple[str, str], dict[str, Any]]
) -> str | None:
    spec = start.get("spec")
    if not isinstance(spec, dict) or not spec:
        return None  # a merge's start for a copy without start lines: no spec to hold to
    variant: dict[str, Any] = spec["variant"] if isinstance(spec.get("variant"), dict) else {}
    for key in RECORD_KEYS:
        if spec.get(key) is not None and not _same(spec[key], attempt.get(key)):
            return f"says {key} {attempt.get(key)!r}, its start line planned {spec[key]!r}"
    row = locked.get((str(attempt.get("protocol_sha256")), str(attempt.get("variant_id"))))
    if row is None:
        return None
    for key in SETTINGS:
        if key in row and key in variant and not _same(row[key], variant[key]):
            return (
                f"ran variant {attempt.get('variant_id')!r} with {key} {_shown(variant[key])} "
                f"by its start line's spec, but the locked Variants row says {_shown(row[key])}"
            )
    return None


def _manifest_problem(
    entry: dict[str, Any], attempt: dict[str, Any], locked: dict[tuple[str, str], dict[str, Any]]
) -> str | None:
    manifest = entry.get("manifest")
    row = locked.get((str(attempt.get("protocol_sha256")), str(attempt.get("variant_id"))))
    if not isinstance(manifest, dict) or row is None:
        return None
    for key in MANIFEST_SETTINGS:
        if key in row and key in manifest and not _same(row[key], manifest[key]):
            return (
                f"comes with Manifest row {manifest.get('manifest_id')!r} saying {key} "
                f"{manifest[key]!r}, but the locked Variants row of "
                f"{attempt.get('variant_id')!r} says {row[key]!r}"
            )
    return None


def _locked_variants(data: WorkbookData) -> dict[tuple[str, str], dict[str, Any]]:
    """Each lock's Variants rows as it hashed them, by (its hash, variant_id). A setting
    the lock's layout had but its snapshot leaves out was blank (a snapshot keeps no blank
    of a column newer than the first layout): it is held to blank, not skipped."""
    found = {}
    for lock in locks(data):
        blank: dict[str, Any] = (
            {}
            if lock.layout is None
            else {
                c: None
                for c in SETTINGS
                if c in layout.VARIANTS.names
                and not layout.added_after(lock.layout, layout.VARIANTS, c)
            }
        )
        for row in lock.snapshot.get("Variants") or []:
            if isinstance(row, dict):
                found[(lock.sha256, str(row.get("variant_id")))] = blank | row
    return found


def _shown(value: Any) -> str:
    """A cell in a message: ``'bf16'``, ``8``, or ``blank``."""
    return "blank" if value in (None, "") else repr(value)


def _same(a: Any, b: Any) -> bool:
    """Equal as cells: blank and None alike, 8 and 8.0 alike."""
    if a in (None, "") or b in (None, ""):
        return a in (None, "") and b in (None, "")
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a).strip() == str(b).strip()


class _Earlier:
    """The attempts seen so far: their completed slots and their predictions files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.slots: dict[tuple[Any, ...], str] = {}
        self.files: dict[Any, str] = {}

    def add(self, attempt: dict[str, Any]) -> None:
        attempt_id = str(attempt.get("attempt_id"))
        if _fills_slot(attempt):
            self.slots.setdefault(_slot(attempt), attempt_id)
        for key in self._file_keys(attempt.get("predictions_path")):
            self.files.setdefault(key, attempt_id)

    def repeats(self, attempt: dict[str, Any]) -> str | None:
        """How ``attempt`` repeats one seen before (None when it does not)."""
        for key in self._file_keys(attempt.get("predictions_path")):
            if key in self.files:
                return (
                    f"names the predictions file {attempt.get('predictions_path')} of attempt "
                    f"{self.files[key]!r} (one file per attempt)"
                )
        if _fills_slot(attempt) and _slot(attempt) in self.slots:
            return (
                f"fills the slot (variant {attempt.get('variant_id')!r}, repetition "
                f"{attempt.get('repetition')}, seed {attempt.get('seed')}) that completed "
                f"attempt {self.slots[_slot(attempt)]!r} already holds (each slot runs once)"
            )
        return None

    def _file_keys(self, value: Any) -> list[Any]:
        """The path as written, normalised (``a/./b``, ``a/../a/b``), and the file itself
        (device and inode: a hard or symbolic link to another attempt's file)."""
        if not isinstance(value, str) or not value.strip():
            return []
        text = value.strip().replace("\\", "/")
        keys: list[Any] = [posixpath.normpath(text)]
        try:
            found = os.stat(self.folder / text)
        except (OSError, ValueError):
            return keys
        return [*keys, (found.st_dev, found.st_ino)]


def _fills_slot(attempt: dict[str, Any]) -> bool:
    """A completed attempt of a planned slot (a row without its repetition names none)."""
    return attempt.get("status") == "completed" and attempt.get("repetition") is not None


def _slot(attempt: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        _key(attempt.get(k)) for k in ("protocol_sha256", "variant_id", "repetition", "seed")
    )


def _key(value: Any) -> Any:
    return (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    )
