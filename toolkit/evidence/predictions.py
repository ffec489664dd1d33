"""Each Attempts row's predictions file checked against the SHA-256 the attempt recorded.

The chain vouches for the recorded hash (:mod:`toolkit.evidence.chain`); this
module checks the file on disk against it, hashing through a
:class:`toolkit.plumbing.digests.Digests` pool so that one hashing serves
validation and the report's archive list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.evidence.chain import SHEET, cell_value
from toolkit.findings import Finding
from toolkit.plumbing import beside
from toolkit.plumbing.digests import Digests
from toolkit.workbook.model import WorkbookData


@dataclass(frozen=True)
class PredictionsCheck:
    """One Attempts row's predictions file against its recorded SHA-256.

    ``state``: "no file recorded", "hash without path", "outside", "missing", "no hash
    recorded", "unreadable", "matches" or "differs".
    """

    index: int
    relative: Any
    path: Path | None
    recorded: str | None
    state: str
    actual: str | OSError | None = None


def _resolve(relative: Any, folder: Path) -> Path:
    path = Path(str(relative))
    return path if path.is_absolute() else folder / path


class _Folder:
    """Whether recorded paths (links followed) lie outside the campaign folder: a recorded
    path is never followed there (``../../../../etc/hostname`` would be hashed and reported).

    The folder, and the folder holding each file, are resolved once each rather than once
    per file (the files of 10,000 attempts share one folder); a file that is itself a link
    is resolved whole.
    """

    def __init__(self, folder: Path) -> None:
        self._folder = _resolved(folder)
        self._parents: dict[Path, Path | None] = {}

    def outside(self, path: Path) -> bool:
        """Whether ``path`` (links followed) lies outside the folder (True when the folder
        cannot be resolved: nothing is followed then)."""
        if self._folder is None:
            return True
        if path.parent not in self._parents:
            self._parents[path.parent] = _resolved(path.parent)
        parent = self._parents[path.parent]
        plain = path.name not in ("", "..") and not _is_link(path)
        real = parent / path.name if plain and parent is not None else _resolved(path)
        return real is None or not real.is_relative_to(self._folder)


def _is_link(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:  # as resolve() takes a name it cannot look at: as it is written
        return False


def _resolved(path: Path) -> Path | None:
    """``path`` with its links followed; None when that fails (a loop, no permission)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def predictions_folder(workbook: Path) -> Path:
    """``<stem>_predictions/`` beside the workbook: where the runner writes each attempt's
    predictions file (``merge`` copies another machine's there too)."""
    return beside.predictions_folder(workbook)


def early_digests(workbook: Path) -> Digests:
    """Hashing of the files in the workbook's predictions folder, started now.

    Listed before the workbook is read, so that on a large campaign the hashing
    (seconds) runs beside the read and the checks instead of after them. A row
    whose file lies elsewhere is hashed when asked for; each file is read now,
    never taken from a cache.
    """
    try:
        paths = list(predictions_folder(workbook).glob("*.jsonl"))
    except OSError:
        paths = []  # no folder: the checks name each missing file
    return Digests(paths)


def predictions_files(data: WorkbookData, folder: Path) -> list[Path]:
    """The predictions files that rows record with a hash: what the checks will hash."""
    within = _Folder(folder)
    return [
        path
        for row in data.tables[SHEET]
        if (relative := cell_value(row.get("predictions_path"))) is not None
        and cell_value(row.get("predictions_sha256")) is not None
        and not within.outside(path := _resolve(relative, folder))
    ]


def predictions_checks(
    data: WorkbookData, folder: Path, digests: Digests
) -> list[PredictionsCheck]:
    """Each Attempts row's predictions file checked now against its recorded SHA-256."""
    checks = []
    within = _Folder(folder)
    for i, row in enumerate(data.tables[SHEET]):
        relative = cell_value(row.get("predictions_path"))
        recorded = cell_value(row.get("predictions_sha256"))
        recorded = None if recorded is None else str(recorded)
        if relative is None:
            state = "no file recorded" if recorded is None else "hash without path"
            checks.append(PredictionsCheck(i, None, None, recorded, state))
            continue
        path = _resolve(relative, folder)
        if within.outside(path):
            checks.append(PredictionsCheck(i, relative, path, recorded, "outside"))
        elif not path.is_file():
            checks.append(PredictionsCheck(i, relative, path, recorded, "missing"))
        elif recorded is None:
            checks.append(PredictionsCheck(i, relative, path, recorded, "no hash recorded"))
        else:
            actual = digests.get(path)
            state = (
                "unreadable"
                if isinstance(actual, OSError)
                else "matches"
                if actual == recorded.strip().lower()
                else "differs"
            )
            checks.append(PredictionsCheck(i, relative, path, recorded, state, actual))
    return checks


#: What to do about each predictions check that failed: (column, message).
_PREDICTIONS_FINDINGS = {
    "hash without path": (
        "predictions_path",
        "{name} has a predictions_sha256 but no "
        "predictions_path: restore the path the attempt recorded",
    ),
    "missing": (
        "predictions_path",
        "{name}: predictions file {relative} is missing (looked for "
        "{path}): restore it from the campaign archive; without it the verdict cannot "
        "be checked",
    ),
    "no hash recorded": (
        "predictions_sha256",
        "{name}: no predictions_sha256 for {relative}: "
        "the file cannot be checked; restore the recorded hash",
    ),
    "outside": (
        "predictions_path",
        "{name}: predictions_path {relative} leads outside the campaign folder (to "
        "{path}): iteralab does not read it; the runner writes each predictions file in "
        "the folder beside the workbook: restore the path the attempt recorded",
    ),
    "unreadable": (
        "predictions_path",
        "{name}: cannot read {relative} ({error}): make it readable",
    ),
    "differs": (
        "predictions_sha256",
        "{name}: {relative} no longer matches its SHA-256 "
        "(recorded {recorded:.12}..., now {actual:.12}...): the predictions were edited "
        "or replaced after the attempt; restore the original file",
    ),
}


def predictions_findings(data: WorkbookData, checks: Sequence[PredictionsCheck]) -> list[Finding]:
    found: list[Finding] = []
    for check in checks:
        if check.state not in _PREDICTIONS_FINDINGS:
            continue  # matches, or no file recorded
        column, message = _PREDICTIONS_FINDINGS[check.state]
        error = check.actual if isinstance(check.actual, OSError) else None
        text = message.format(
            name=f"attempt {data.tables[SHEET][check.index].get('attempt_id')!r}",
            relative=check.relative,
            path=check.path,
            recorded=str(check.recorded),
            actual=str(check.actual),
            error=getattr(error, "strerror", None) or error,
        )
        found.append(
            Finding(SHEET, data.excel_row(SHEET, check.index), column, "predictions", text)
        )
    return found


def folder_findings(data: WorkbookData, folder: Path) -> list[Finding]:
    """The predictions files of every row, resolved from ``folder``, hashed and checked now."""
    with Digests(predictions_files(data, folder)) as digests:
        return predictions_findings(data, predictions_checks(data, folder, digests))
