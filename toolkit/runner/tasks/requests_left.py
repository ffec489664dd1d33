"""What a serving attempt that ended without its record left on disk: its requests file.

A run or worker killed outright (SIGKILL, power loss) writes no record; the next run writes
an interrupted row for it (:func:`toolkit.runner.attempt.fallback_record`). A serving
attempt's requests file was written and synced line by line as each request ended, so it
holds every request finished before the end: the row points at it (path and SHA-256) and
says what it holds, rather than leaving that evidence orphaned in the folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from toolkit.plumbing.digests import file_sha256
from toolkit.runner.spec import AttemptSpec


def requests_left(spec: AttemptSpec, held: Callable[[Path], str]) -> tuple[str, str, str] | None:
    """The attempt's requests file: its path in the campaign folder, its SHA-256 and what it
    holds in words (``held`` counts a file of whole lines); None when the attempt left none
    (or an empty one)."""
    path = spec.predictions_file
    if not path.is_file() or path.stat().st_size == 0:
        return None
    relative = path.relative_to(spec.base).as_posix()
    with path.open("rb") as handle:  # only its last byte: the file may be large
        handle.seek(-1, os.SEEK_END)
        whole_lines = handle.read(1) == b"\n"
    if whole_lines:
        what = held(path)
    else:
        what = "its last line was cut as the attempt ended, so its requests are not counted"
    return relative, file_sha256(path), f"requests file {relative} kept: {what}"
