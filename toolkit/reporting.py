"""`iteralab report`: validate and refresh a workbook under its lock, write the reviewer's folder.

:func:`build` reads the workbook under its lock, refuses an unlocked or edited
protocol, recomputes the derived sheets (:func:`toolkit.report.refresh.refresh`),
saves atomically (once, and only when that changed the workbook; after creating
the reviewer's folder, so that one it cannot create saves nothing), then, the lock
released, writes the reviewer's folder beside the workbook from what it saved. The
report validates the workbook as read (what ``iteralab validate`` checks, bar
the sheets it is about to recompute) and states the findings in report.md: a
reviewer sees them beside the numbers they touch. One hashing of the
predictions files serves both the validation and the archive list
(:mod:`toolkit.report.checks`).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.editing import change
from toolkit.errors import ToolkitError
from toolkit.evidence import money_rules, protocol
from toolkit.evidence.integrity import Integrity
from toolkit.evidence.predictions import early_digests
from toolkit.evidence.schemas_beside import SchemasBeside
from toolkit.findings import Finding
from toolkit.plumbing import beside
from toolkit.plumbing.atomic import write_text
from toolkit.plumbing.clock import now_text
from toolkit.plumbing.plain import not_plain
from toolkit.report import charts, reviewer
from toolkit.report.checks import ChecksBeside
from toolkit.report.refresh import RECOMPUTED_SHEETS, Refreshed, refresh, still_standing
from toolkit.report.reviewer import Outputs
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

REPORT_MD = "report.md"
ATTEMPTS_CSV = "attempts.csv"
MANIFEST_CSV = "manifest.csv"
#: Characters compared at a time between a file of the folder and what it would hold.
COMPARED_BLOCK = 1 << 20


def untrusted_rows(findings: Sequence[Finding], data: WorkbookData) -> dict[str, int]:
    """Per variant, how many of its Attempts rows carry an integrity finding."""
    rows = {f.row for f in findings if f.sheet == layout.ATTEMPTS.name and f.row is not None}
    counts: dict[str, int] = {}
    for i, row in enumerate(data.tables[layout.ATTEMPTS.name]):
        if data.excel_row(layout.ATTEMPTS.name, i) in rows:
            vid = str(row.get("variant_id"))
            counts[vid] = counts.get(vid, 0) + 1
    return counts


def default_folder(workbook: Path) -> Path:
    """``<workbook stem>_report/`` beside the workbook."""
    return beside.report_folder(workbook)


def build(
    workbook: Path,
    folder: Path | None = None,
    pngs: bool = True,
    schemas: SchemasBeside | None = None,
) -> tuple[Refreshed, Outputs]:
    """Validate and refresh ``workbook`` under its lock and write the reviewer's folder.

    The workbook is saved once, and only when the refresh changed what it holds
    (:func:`toolkit.workbook.store.unchanged`): a second report of the same
    evidence rewrites nothing. Raises ProtocolError when the protocol is not
    locked or was edited since; other findings do not stop the report, they
    are stated in it. ``schemas``: a helper preparing pandera already (the command starts
    it before its own imports); one starts here if not.
    """
    checked = [name for name in layout.SCHEMA_SHEETS if name not in RECOMPUTED_SHEETS]
    folder = folder or default_folder(workbook)
    with contextlib.ExitStack() as stack:
        digests = stack.enter_context(early_digests(workbook))  # hashing from the start
        if schemas is None:  # pandera's imports beside the read
            schemas = stack.enter_context(SchemasBeside())
        with change(workbook, refresh_derived=False) as edit:  # refreshed here, checks first
            data = edit.data
            sha = protocol.require_lock(data, workbook)
            _make_folder(folder)  # before the save: a folder it cannot write saves nothing
            as_read = data.copy()
            # Of the data as read: the refresh changes ``data``.
            checks = stack.enter_context(ChecksBeside(as_read, workbook, checked, digests, schemas))
            result = refresh(data, workbook.parent)
            found = checks.result()  # before the save: it decides what the save holds
            untrusted = untrusted_rows(found.findings, data)
            if untrusted:
                # Rare: evidence with integrity findings. The numbers stay; the verdicts and
                # the memo draft are computed again from the workbook as read, so that none
                # rests on those rows.
                data = edit.data = as_read.copy()
                result = refresh(data, workbook.parent, untrusted)
            result.protocol_sha256 = sha
            found.findings = still_standing(found.findings, data)  # what it logged is cleared
            edit.save = saved = not store.unchanged(as_read, data)
    # The report rewrites the memo and its stamp: a memo stale as read is what it fixes.
    result.findings = [f for f in found.findings if f.check != money_rules.STALE_MEMO]
    # The reviewer's files come from what was saved, once the workbook's lock is released:
    # a campaign's ingestion waits only for the workbook, not for the pictures.
    outputs = _write_folder(workbook, folder, data, result, found, pngs=pngs, saved=saved)
    return result, outputs


def _write_folder(
    workbook: Path,
    folder: Path,
    data: WorkbookData,
    result: Refreshed,
    found: Integrity,
    *,
    pngs: bool,
    saved: bool,
) -> Outputs:
    """Write the reviewer's folder: report.md, the CSV archive and the PNG charts.

    Each file is written whole, but the folder is a set: report.md says first that it is
    being rewritten, and is written last, so that a report stopped half-way never leaves
    new CSV or PNG files beside an old report.md that seems to describe them. A file that
    already holds what it would be written with is left as it is (a report of unchanged
    evidence writes nothing, and draws nothing: :func:`toolkit.report.charts.pending`).
    """
    md = folder / REPORT_MD
    tables = {
        folder / ATTEMPTS_CSV: _csv_text(layout.ATTEMPTS, data.tables["Attempts"]),
        folder / MANIFEST_CSV: _csv_text(layout.MANIFEST, data.tables["Manifest"]),
    }
    stale = [path for path, text in tables.items() if not _holds(path, text)]
    if stale or (pngs and charts.pending(folder, result.stats, result.costs)):
        write_text(md, _in_progress(workbook))
    for path in stale:
        write_text(path, tables[path], newline="")
    files = list(tables)
    skipped: str | None = "PNG charts skipped: --no-png"
    if pngs:
        pictures = charts.write_pngs(folder, result.stats, result.costs)
        files += list(pictures.paths)
        skipped = pictures.skipped
    outputs = Outputs(folder, files, skipped, workbook_saved=saved)
    text = reviewer.markdown(workbook, data, result, outputs, found.predictions)
    if not _holds(md, text):
        write_text(md, text)
    outputs.files.insert(0, md)
    return outputs


def _holds(path: Path, text: str) -> bool:
    """Whether the file at ``path`` holds exactly ``text`` (UTF-8, newlines as given).

    Compared block by block (an attempts.csv of 50,000 attempts is about 100 MB: never
    held twice); a named pipe there is not read (the read would wait for a writer)."""
    if not_plain(path) is not None:
        return False
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            for at in range(0, len(text), COMPARED_BLOCK):
                if handle.read(COMPARED_BLOCK) != text[at : at + COMPARED_BLOCK]:
                    return False
            return handle.read(1) == ""
    except (OSError, UnicodeDecodeError):
        return False


#: The first line of a report.md that stands for a report being written (or stopped).
IN_PROGRESS = "# Report in progress: the files of this folder are not a set"


def _in_progress(workbook: Path) -> str:
    return (
        f"{IN_PROGRESS}\n\n"
        f"`iteralab report` began rewriting this folder at {now_text()} (process {os.getpid()}) "
        f"from `{workbook.name}`. Until this page is replaced by the report, the CSV and PNG "
        "files beside it may come from this report or the one before. If this page stays, "
        f"the report was stopped: run `iteralab report {workbook}` again.\n"
    )


def unfinished(folder: Path) -> str | None:
    """What ``folder``'s report.md says when a report was stopped while it rewrote the
    folder (its CSV and PNG files are then no set), in words; None otherwise."""
    md = folder / REPORT_MD
    if not_plain(md) is not None:  # a named pipe would make the read wait: the report replaces it
        return None
    try:
        with md.open(encoding="utf-8", errors="replace") as handle:
            first = handle.readline().rstrip("\n")
    except OSError:
        return None
    if first != IN_PROGRESS:
        return None
    return (
        f"{md}: a report was stopped while it rewrote {folder.name}/, so its CSV and PNG "
        "files are not a set"
    )


def _make_folder(folder: Path) -> None:
    """Create the reviewer's folder, or raise ToolkitError saying why it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.EEXIST):
            hint = "a part of that path is a file, not a folder: give --out another folder"
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            hint = "give --out a folder you may write in, or make its parent writable for you"
        else:
            hint = "give --out a folder you may create and write in"
        why = f"cannot create the report folder ({exc.strerror or exc})"
        raise _folder_error(folder, why, hint) from exc
    if not os.access(folder, os.W_OK | os.X_OK):  # mkdir accepts a folder it may not write
        raise _folder_error(
            folder,
            "the report folder is not writable for you",
            f"make {folder} writable for you, or give --out another folder",
        )


def _folder_error(folder: Path, why: str, hint: str) -> ToolkitError:
    return ToolkitError(
        f"{folder}: {why}; the workbook is unchanged", hint=f"{hint}, then run the command again"
    )


#: A text cell starting with one of these is a formula (or its start) to a spreadsheet that
#: opens the CSV: exported with a leading apostrophe, as spreadsheet-safe exports do.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as the CSV exports hold it: blank for None, text that a spreadsheet would
    run as a formula neutralised with a leading ``'``; numbers stay numbers."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _csv_text(sheet: layout.Sheet, rows: list[dict[str, Any]]) -> str:
    """The sheet's rows as CSV text (header first, ``\r\n`` line ends, :func:`csv_cell`)."""
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(sheet.names)
    writer.writerows([[csv_cell(row.get(n)) for n in sheet.names] for row in rows])
    return text.getvalue()
