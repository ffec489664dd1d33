"""Write-ahead journal of finished attempts, and its ingestion into the workbook.

Each finished attempt (its Attempts row, its Manifest row, its predictions
file's SHA-256) is first appended as one JSON line to ``NAME.journal.jsonl``
beside ``NAME.xlsx`` and flushed to disk (under a millisecond), then ingested
into the workbook. Ingestion is idempotent by ``attempt_id`` (and
``manifest_id``) and batched: one save for many records. So a crash, a busy
workbook (open in Excel) or a killed campaign never loses a row:
``iteralab ingest WORKBOOK`` replays what the workbook lacks. A line torn by
a crash is never glued to the next record: the next append keeps its bytes in
``NAME.journal.torn-N`` and starts on a fresh line (:func:`append`, :func:`notes`).

This module is the file alone; adding its records to a workbook is
:mod:`toolkit.evidence.ingest` (rows sealed into the hash chain as they enter)
and :func:`toolkit.editing.ingest` (the locked read-change-save). Stdlib only.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from toolkit.errors import WorkbookError
from toolkit.plumbing import beside
from toolkit.plumbing.atomic import write_bytes
from toolkit.plumbing.plain import not_plain

FORMAT = "iteralab-attempt/1"
#: An attempt about to run (its spec), appended before it starts; read() returns only records.
START_FORMAT = "iteralab-attempt-start/1"
#: ``NAME.journal.torn-N``: a torn last line set aside before the next append.
TORN_INFIX = beside.TORN_INFIX
#: Bytes read at a time when looking back for the journal's last newline.
TAIL_CHUNK = 64 * 1024


def journal_path(workbook: str | Path) -> Path:
    """``NAME.journal.jsonl`` beside ``NAME.xlsx``."""
    return beside.journal(workbook)


def record(attempt: dict[str, Any], manifest: dict[str, Any] | None) -> dict[str, Any]:
    """A journal record for one finished attempt."""
    return {
        "format": FORMAT,
        "attempt": attempt,
        "manifest": manifest,
        "predictions_sha256": attempt.get("predictions_sha256"),
    }


def torn_path(workbook: str | Path, number: int) -> Path:
    """``NAME.journal.torn-N`` beside ``NAME.xlsx``: where a torn last line is kept."""
    return beside.torn(workbook, number)


def torn_files(workbook: str | Path) -> list[Path]:
    """The torn lines kept beside the journal, in the order they were set aside."""
    workbook = Path(workbook)
    prefix = workbook.stem + TORN_INFIX
    if not workbook.parent.is_dir():
        return []
    found = []
    for path in workbook.parent.iterdir():
        number = path.name[len(prefix) :] if path.name.startswith(prefix) else ""
        if number.isascii() and number.isdigit():
            found.append((int(number), path))
    return [p for _, p in sorted(found)]


def append(workbook: str | Path, entry: dict[str, Any]) -> Path | None:
    """Append one record as a JSON line and fsync it before returning.

    The record always starts on a fresh line. When an interrupted write left
    the journal ending without a newline, that torn tail is first copied to
    ``NAME.journal.torn-N`` (fsynced) and ended with a newline, so that it
    stays a line of its own that :func:`read` skips and notes; a tail that is
    a whole record missing only its newline is simply ended. Returns the torn
    file the tail was kept in, or None. Only appends ever touch the journal,
    so a finished attempt's line is never rewritten.
    """
    line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"
    path = journal_path(workbook)
    try:
        return _append(workbook, path, line)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            hint = (
                f"free disk space in {path.parent}, then run the command again: every record "
                "the journal holds is kept (a line the full disk cut short is set aside)"
            )
        else:
            hint = (
                "the journal must be a plain file you may write (not a link to a device); "
                "fix the permission, then `iteralab ingest` or run again"
            )
        raise WorkbookError(
            f"{path}: cannot append to the journal ({exc.strerror or exc})", hint=hint
        ) from exc


def _append(workbook: str | Path, path: Path, line: str) -> Path | None:
    if not path.is_file() and path.exists():
        raise OSError(0, "not a plain file")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    kept = None
    try:
        data = line.encode("utf-8")
        tail = _unterminated_tail(fd)
        if tail is not None:
            if tail.strip() and _record(tail) is None:
                kept = _keep_torn(workbook, tail)
            data = b"\n" + data
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return kept


def _unterminated_tail(fd: int) -> bytes | None:
    """The bytes after the journal's last newline, or None when it ends with one (or is
    empty)."""
    end = os.fstat(fd).st_size
    if end == 0:
        return None
    chunks: list[bytes] = []
    position = end
    while position > 0:
        start = max(0, position - TAIL_CHUNK)
        os.lseek(fd, start, os.SEEK_SET)
        chunk = os.read(fd, position - start)
        if position == end and chunk.endswith(b"\n"):
            return None
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            chunks.append(chunk[cut + 1 :])
            break
        chunks.append(chunk)
        position = start
    return b"".join(reversed(chunks))


def _keep_torn(workbook: str | Path, tail: bytes) -> Path:
    """Copy a torn tail to the next ``NAME.journal.torn-N`` (one already holding exactly
    these bytes is reused: a crash between keeping and ending it loses nothing)."""
    existing = torn_files(workbook)
    for kept in existing:
        if kept.read_bytes() == tail:
            return kept
    number = len(existing) + 1
    while True:
        try:
            return write_bytes(torn_path(workbook, number), tail, overwrite=False)
        except FileExistsError:
            number += 1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _record(line: bytes) -> dict[str, Any] | None:
    """The journal record a line holds, or None when it is not one."""
    try:
        entry = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return entry if isinstance(entry, dict) and entry.get("format") == FORMAT else None


def read(workbook: str | Path) -> list[dict[str, Any]]:
    """The journal's records in order; an empty list when there is no journal.

    A last line cut short by a crash (no newline, not JSON) is ignored: its
    attempt never finished writing. So is a line that :func:`append` ended
    after such a crash and kept in ``NAME.journal.torn-N`` (same bytes).
    Any other unreadable line is an error. :func:`notes` says what was skipped.
    In a journal holding start lines (every run writes one before each attempt),
    a record without its own start, or a second record for one start, is left
    out: the runner never writes one (an appended forgery); :func:`unstarted`
    names each.
    """
    return list(Reading(workbook, keep_starts=False))


def unstarted(workbook: str | Path) -> list[str]:
    """One sentence per record :func:`read` leaves out: no start line of its attempt before
    it, a second record for one start, or a record of another variant than its start planned.
    (What the rest of the folder says about a kept record: :mod:`toolkit.evidence.provenance`.)"""
    return [message for _, message in _finished(Reading(workbook, keep_starts=False)).refused]


def notes(workbook: str | Path) -> list[str]:
    """One sentence per torn line :func:`read` skipped, naming where its bytes are kept."""
    return _finished(Reading(workbook, keep_starts=False)).skipped


def start(attempt_id: str, spec: dict[str, Any], started_at: str, run: str) -> dict[str, Any]:
    """The line appended before an attempt runs: a kill (SIGKILL, power loss) that leaves no
    record still leaves this, and the next run writes the attempt's interrupted row. ``run``
    names the run in ``NAME.runs.jsonl`` (:mod:`toolkit.evidence.run_log`)."""
    return {
        "format": START_FORMAT,
        "attempt_id": attempt_id,
        "spec": spec,
        "started_at": started_at,
        "pid": os.getpid(),
        "run": run,
    }


def merged_start(
    record: dict[str, Any], source: str | Path, start_line: dict[str, Any] | None, run: str
) -> dict[str, Any]:
    """The start line a record joining from another copy's journal (``source``) is appended
    after: that copy's own (its spec), or (a copy whose journal has none) one naming the merge.
    Either names ``run``, the merge's own run in ``NAME.runs.jsonl`` (the other copy's runs
    are in its log, not here); ``source_run`` keeps the run the other copy named."""
    attempt = record["attempt"]
    base = start_line or {
        "format": START_FORMAT,
        "attempt_id": attempt.get("attempt_id"),
        "spec": {},
        "started_at": attempt.get("started_at"),
    }
    line = {k: v for k, v in base.items() if k != "run"}
    line.update(merged_from=str(source), run=run)
    if start_line is not None and start_line.get("run") is not None:
        line["source_run"] = start_line["run"]
    return line


def starts(
    workbook: str | Path, kept: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """The journal's start lines by attempt id (the last, where one id has several); each
    as ``kept`` makes it, when given (the fields a caller reads, not the whole spec)."""
    return by_attempt(_finished(Reading(workbook, keep_starts=kept or True)).starts)


def by_attempt(start_lines: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Start lines (a :class:`Reading`'s, read to its end) by attempt id, the last where one
    id has several."""
    return {str(s.get("attempt_id")): s for s in start_lines}


def unfinished(workbook: str | Path) -> list[dict[str, Any]]:
    """The starts of attempts that have no record: their process died without one (or its
    line was torn: the caller leaves out the attempts its workbook holds). A merge's start
    is left out: running the merge again appends its record. A journal without any start
    line has none, found without parsing it (a damaged line there is :func:`read`'s error)."""
    path = journal_path(workbook)
    if path.is_file() and not _may_hold_starts(path):
        return []  # no start line, so none without its record: no record need be parsed
    reading = Reading(workbook)
    done = {str(r["attempt"].get("attempt_id")) for r in reading}
    # A start whose record was refused (a copied pair) is no attempt a run left unfinished.
    done |= {attempt_id for attempt_id, _ in reading.refused}
    return [
        s for s in reading.starts if str(s.get("attempt_id")) not in done and "merged_from" not in s
    ]


def _finished(reading: Reading) -> Reading:
    """``reading`` read to its end, each record let go as it is read."""
    for _ in reading:
        pass
    return reading


class Reading:
    """One pass over the journal beside ``workbook``, its records given one at a time.

    Iterating yields the records :func:`read` returns, in order, as each line is read:
    a caller that checks each one and lets it go holds one record at a time (a
    50,000-attempt journal parsed whole takes gigabytes). Once the iteration is done,
    :attr:`skipped` holds what :func:`notes` says, :attr:`refused` each record left out
    (attempt id, the sentence :func:`unstarted` gives) and :attr:`starts` the start lines
    (kept only when ``keep_starts``; as ``keep_starts`` makes them when it is a function,
    so that a caller needing a few of their fields holds no more). A line that is no record
    raises WorkbookError mid-way, as :func:`read` does: a caller discards what it made of
    the earlier ones.
    """

    def __init__(
        self,
        workbook: str | Path,
        keep_starts: bool | Callable[[dict[str, Any]], dict[str, Any]] = True,
    ) -> None:
        self._workbook = workbook
        self._path = journal_path(workbook)
        self._keep_starts = keep_starts
        self.skipped: list[str] = []
        self.refused: list[tuple[str, str]] = []
        self.starts: list[dict[str, Any]] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        path = self._path
        if not path.exists():
            return
        kind = not_plain(path)
        if kind is not None:  # opening a named pipe would wait for a writer, perhaps forever
            raise WorkbookError(
                f"{path}: {kind}, not the journal file; not read",
                hint="the journal is a plain file `iteralab run` writes beside the workbook: "
                "restore it from a copy of the campaign folder, or remove what stands in its "
                "place",
            )
        # Without any start line (a journal written before runs journaled them) every
        # record is kept; with one, a record needs its own start before it. The bytes say
        # cheaply whether a start line can be there at all; when one can, records wait
        # until the first start line (at once, in a journal the runner wrote) decides.
        may_start = _may_hold_starts(path)
        slots = _Slots()
        waiting: list[tuple[int, dict[str, Any]]] = []
        started = False
        for number, kind_, entry in self._entries(path):
            if kind_ == "start":
                if not started:
                    started = True
                    self.refused += [_no_start(path, n, e) for n, e in waiting]
                    waiting = []
                slots.open(entry)
                if self._keep_starts:
                    line = {k: v for k, v in entry.items() if k != "_line"}
                    keep = self._keep_starts
                    self.starts.append(keep(line) if callable(keep) else line)
            elif started:
                why = slots.refusal(path, number, entry)
                if why is None:
                    yield entry
                else:
                    self.refused.append(why)
            elif may_start:
                waiting.append((number, entry))
            else:
                yield entry
        for _, entry in waiting:  # the start format named in a text, never a start line
            yield entry

    def _entries(self, path: Path) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """Every record and start line as (line number, "record" or "start", entry)."""
        kept: dict[bytes, Path] | None = None
        with path.open("rb") as stream:
            for number, line in enumerate(stream, start=1):
                last = not line.endswith(b"\n")  # only the file's last line lacks one
                raw = line[:-1] if not last else line
                if not raw.strip():
                    continue
                found, error = self._entry(path, number, raw, last)
                if found is not None:
                    yield number, *found
                    continue
                if error is None:  # a torn tail: nothing follows it
                    return
                if kept is None:
                    kept = {p.read_bytes(): p for p in reversed(torn_files(self._workbook))}
                if last or raw not in kept:
                    raise error
                # A torn tail that a later append ended with a newline after keeping its bytes.
                self.skipped.append(
                    f"{path.name}: line {number} ({len(raw):,} bytes) was cut short by an "
                    "interrupted write and is skipped: no finished attempt is lost; its "
                    f"bytes are kept in {kept[raw].name}"
                )

    def _entry(
        self, path: Path, number: int, raw: bytes, last: bool
    ) -> tuple[tuple[str, dict[str, Any]] | None, WorkbookError | None]:
        """A line's (kind, entry); or None with the error it is (None: a torn last line)."""
        try:
            entry = json.loads(
                raw.decode("utf-8", errors="replace"),
                parse_constant=_no_constant,
                object_pairs_hook=_unique_keys,
            )
        except (RecursionError, _NotANumber, _RepeatedKey) as exc:
            raise WorkbookError(
                f"{path}: line {number} is not a journal record ({_unreadable(exc)})",
                hint="the journal is written by `iteralab run`; restore it "
                "from a copy or remove that line",
            ) from None
        except json.JSONDecodeError as exc:
            if last:  # the torn tail of an interrupted write
                self.skipped.append(
                    f"{path.name}: line {number} ({len(raw):,} bytes, no newline) "
                    "was cut short by an interrupted write: no finished attempt "
                    "is lost; the next append keeps it in "
                    f"{Path(self._workbook).stem}{TORN_INFIX}N"
                )
                return None, None
            return None, WorkbookError(
                f"{path}: line {number} is not a journal record ({exc.msg})",
                hint="the journal is written by `iteralab run`; restore it "
                "from a copy or remove the damaged line",
            )
        shape = _shape_problem(entry)
        if shape is None and entry.get("format") == FORMAT:
            return ("record", entry), None
        if shape is None and entry.get("format") == START_FORMAT:
            return ("start", dict(entry, _line=number)), None
        return None, WorkbookError(
            f"{path}: line {number} is not an {FORMAT} record" + (f" ({shape})" if shape else ""),
            hint="the journal is written by `iteralab run`; do not "
            "edit it: restore it from a copy or remove that line",
        )


def _may_hold_starts(path: Path) -> bool:
    """Whether the journal's bytes may hold a start line: they name its format, or hold a
    JSON escape that could spell it otherwise (read in chunks, never whole)."""
    start = START_FORMAT.encode()
    escapes = (b"\\u", b"\\/")
    longest = len(start)
    carry = b""
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            text = carry + chunk
            # One backslash is found ten times faster than a two-byte escape: most chunks
            # hold none, and need no search for either escape.
            if start in text or (b"\\" in text and any(e in text for e in escapes)):
                return True
            carry = text[-longest:]
    return False


def _no_start(path: Path, number: int, entry: dict[str, Any]) -> tuple[str, str]:
    attempt = entry.get("attempt")
    attempt_id = str(attempt.get("attempt_id")) if isinstance(attempt, dict) else "?"
    return (
        attempt_id,
        f"{path.name}: line {number}: attempt {attempt_id!r} has no start "
        "line before it (or a record already used it): `iteralab run` "
        "writes a start before every attempt and one record after it, so "
        "this record was added by hand and is not ingested",
    )


class _Slots:
    """The start lines still open, for :meth:`refusal`: each record needs its own start,
    of the variant it planned (a repeated slot or predictions file:
    :mod:`toolkit.evidence.provenance`)."""

    def __init__(self) -> None:
        self._open: dict[str, dict[str, Any]] = {}

    def open(self, start: dict[str, Any]) -> None:
        self._open[str(start.get("attempt_id"))] = start

    def refusal(self, path: Path, number: int, entry: dict[str, Any]) -> tuple[str, str] | None:
        """Why the record on line ``number`` is left out (attempt id, sentence); None when
        it is kept."""
        attempt = entry.get("attempt")
        attempt_id = str(attempt.get("attempt_id")) if isinstance(attempt, dict) else "?"
        start_entry = self._open.pop(attempt_id, None)
        if start_entry is None:
            return _no_start(path, number, entry)
        spec = start_entry.get("spec")
        planned = spec.get("variant") if isinstance(spec, dict) else None
        planned_id = planned.get("variant_id") if isinstance(planned, dict) else None
        ran = attempt.get("variant_id") if isinstance(attempt, dict) else None
        if planned_id is not None and ran != planned_id:
            return (
                attempt_id,
                f"{path.name}: line {number}: attempt {attempt_id!r} says variant "
                f"{ran!r}, its start line {start_entry['_line']} planned "
                f"{planned_id!r}: not what the runner wrote; not ingested",
            )
        return None


def _unreadable(exc: Exception) -> str:
    """Why a line that parses as JSON in Python is no journal record."""
    if isinstance(exc, RecursionError):
        return "nested too deep to read"
    if isinstance(exc, _NotANumber):
        return f"it holds {exc}, which no measurement is"
    return (
        f"it gives the key {exc} twice: the runner writes each key once, and a reader "
        "would keep one of the two values silently"
    )


class _NotANumber(Exception):
    """A JSON line holding NaN or Infinity: Python reads them, no cell holds them."""


def _no_constant(name: str) -> Any:
    raise _NotANumber(name)


class _RepeatedKey(Exception):
    """A JSON object giving one key twice: Python keeps the last value, silently."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)  # every object of every line: no Python loop unless a key repeats
    if len(found) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(repr(key))
            seen.add(key)
    return found


def _shape_problem(entry: Any) -> str | None:
    """Why a parsed line cannot be a journal record or start line (None when it can): the
    readers index these keys."""
    if not isinstance(entry, dict):
        return "not a JSON object"
    if entry.get("format") == FORMAT:
        if not isinstance(entry.get("attempt"), dict):
            return "its 'attempt' is not an object"
        if entry.get("manifest") is not None and not isinstance(entry.get("manifest"), dict):
            return "its 'manifest' is not an object"
        if not isinstance(entry["attempt"].get("attempt_id"), str):
            return "its attempt has no attempt_id"
    elif entry.get("format") == START_FORMAT:
        if not isinstance(entry.get("attempt_id"), str) or not isinstance(entry.get("spec"), dict):
            return "a start line without its attempt_id and spec"
    return None
