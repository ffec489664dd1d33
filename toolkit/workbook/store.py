"""Read a workbook into plain data; save it safely (lock, temp file, replace, backup).

A save never leaves a half-written workbook: the new file is rendered next to
the old one, flushed to disk, and swapped in with ``os.replace``; a file lock
serialises writers; the previous version is kept as ``NAME.bak.xlsx``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock
import openpyxl

from toolkit import layout
from toolkit.errors import WorkbookBusyError, WorkbookError
from toolkit.workbook.model import WorkbookData
from toolkit.workbook.render import render

LOCK_TIMEOUT_S = 60


def read(path: str | Path) -> WorkbookData:
    """Read every sheet of the workbook at ``path``.

    Raises WorkbookError naming the file, sheet and column when the file is not
    an xlsx workbook, a sheet or column is missing, or the layout is older.
    """
    path = Path(path)
    if not path.exists():
        raise WorkbookError(f"{path}: no such workbook",
                            hint=f"create one with `iteralab init {path}`")
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise WorkbookError(
            f"{path}: not a readable .xlsx workbook ({type(exc).__name__}: {exc})",
            hint=f"restore the backup {backup_path(path).name} if there is one, or start "
            "from `iteralab init`",
        ) from exc
    try:
        return _read_book(book, path)
    finally:
        book.close()


def _read_book(book: Any, path: Path) -> WorkbookData:
    missing = [s.name for s in layout.SHEETS if s.name not in book.sheetnames]
    if missing:
        raise WorkbookError(
            f"{path}: missing sheet(s) {', '.join(missing)}",
            hint="this is not an iteralab workbook, or sheets were renamed or deleted; "
            "restore them or start from `iteralab init`",
        )
    version = _layout_version(book["Guide"])
    if version != layout.LAYOUT_VERSION:
        raise WorkbookError(
            f"{path}: workbook layout version {version}, this iteralab reads version "
            f"{layout.LAYOUT_VERSION}",
            hint="create a new workbook with `iteralab init` and copy your Protocol, Variants, "
            "Tariffs and Schedule rows into it",
        )
    data = WorkbookData.empty()
    for sheet in layout.SHEETS:
        if sheet.kind == "form":
            data.forms[sheet.name] = _read_form(book[sheet.name], sheet, path)
        elif sheet.kind == "table":
            rows, numbers = _read_table(book[sheet.name], sheet, path)
            data.tables[sheet.name] = rows
            data.row_numbers[sheet.name] = numbers
    return data


def _layout_version(guide: Any) -> int | None:
    for (value,) in guide.iter_rows(min_row=2, max_row=2, max_col=1, values_only=True):
        if isinstance(value, str) and value.startswith("layout_version:"):
            with contextlib.suppress(ValueError):
                return int(value.split(":", 1)[1])
    return None


def _normalise(value: Any) -> Any:
    """Cell value as the data model holds it: blanks are None, dates ISO text."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="minutes")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _read_form(ws: Any, sheet: layout.Sheet, path: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for row in ws.iter_rows(min_row=2, max_col=2, values_only=True):
        if row and isinstance(row[0], str) and row[0].strip():
            values[row[0].strip()] = _normalise(row[1] if len(row) > 1 else None)
    missing = [c.name for c in sheet.all_columns if c.name not in values]
    if missing:
        raise WorkbookError(
            f"{path}: sheet {sheet.name} lacks field(s) {', '.join(missing)} in column A",
            hint="restore the field rows (their names in column A) or start from "
            "`iteralab init`",
        )
    return {c.name: values[c.name] for c in sheet.all_columns}


def _read_table(ws: Any, sheet: layout.Sheet, path: Path) -> tuple[list[dict[str, Any]],
                                                                    list[int]]:
    rows_iter = ws.iter_rows(values_only=True)
    header = [str(h).strip() if h is not None else "" for h in next(rows_iter, ())]
    positions = {name: i for i, name in enumerate(header) if name}
    missing = [name for name in sheet.names if name not in positions]
    if missing:
        raise WorkbookError(
            f"{path}: sheet {sheet.name} lacks column(s) {', '.join(missing)} in row 1",
            hint="restore the header row (names exactly as in `iteralab init`'s template)",
        )
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    for excel_row, values in enumerate(rows_iter, start=2):
        record = {
            name: _normalise(values[positions[name]]) if positions[name] < len(values) else None
            for name in sheet.names
        }
        if any(v is not None for v in record.values()):
            rows.append(record)
            numbers.append(excel_row)
    return rows, numbers


def backup_path(path: Path) -> Path:
    """Where the previous version of ``path`` is kept."""
    return path.with_name(path.stem + ".bak.xlsx")


def office_lock_files(path: Path) -> list[Path]:
    """Lock files Excel (``~$name``) or LibreOffice (``.~lock.name#``) leave while editing."""
    candidates = [path.with_name("~$" + path.name), path.with_name(f".~lock.{path.name}#")]
    return [p for p in candidates if p.exists()]


def save(data: WorkbookData, path: str | Path) -> None:
    """Render ``data`` to ``path`` atomically, keeping the previous version as backup.

    The caller holds :func:`writer_lock` when the data was read from ``path``.
    """
    path = Path(path)
    tmp: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp.xlsx",
                                        dir=path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        render(data, tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        if path.exists():
            shutil.copy2(path, backup_path(path))
        os.replace(tmp, path)
    except OSError as exc:
        raise WorkbookError(
            f"{path}: could not save ({exc.strerror or exc}); the workbook is unchanged",
            hint="free disk space or fix the folder's permissions, then run the command again",
        ) from exc
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def writer_lock(path: str | Path) -> Iterator[None]:
    """Hold the workbook's writer lock; refuse while Excel or LibreOffice has it open."""
    path = Path(path)
    busy = office_lock_files(path)
    if busy:
        raise WorkbookBusyError(
            f"{path}: open in Excel or LibreOffice (found {busy[0].name})",
            hint="save and close it there, then run the command again",
        )
    lock = filelock.FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)
    try:
        with lock:
            yield
    except filelock.Timeout as exc:
        raise WorkbookBusyError(
            f"{path}: another iteralab command has been writing it for {LOCK_TIMEOUT_S} s",
            hint="wait for it to finish; remove the .lock file only if no iteralab runs",
        ) from exc


@contextlib.contextmanager
def editing(path: str | Path) -> Iterator[WorkbookData]:
    """Read the workbook under the writer lock, let the caller change it, save it.

    Nothing is saved when the block raises: the workbook stays as it was.
    """
    with writer_lock(path):
        data = read(path)
        yield data
        save(data, path)
