"""Whether a path iteralab is about to read is a plain file.

Opening a named pipe (FIFO) for reading waits for a writer that may never come: a workbook
or a journal replaced by one hung ``validate``. A device or a socket is no campaign file
either. The readers ask first and refuse such a path by name. Stdlib only.
"""

from __future__ import annotations

import stat
from pathlib import Path


def not_plain(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a plain file (links followed): ``a named
    pipe (FIFO)``, ``a folder``, ``a device``, ``a socket``; None for a plain file, or for
    nothing there (the reader says that in its own words)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def plain_bytes(path: Path, at_most: int) -> bytes | None:
    """The bytes of ``path`` when it is a plain file of at most ``at_most`` bytes; None when
    there is nothing there, it cannot be read, it is no plain file (a named pipe would make
    the read wait), or it is larger."""
    try:
        found = path.stat()
        if not stat.S_ISREG(found.st_mode) or found.st_size > at_most:
            return None
        return path.read_bytes()
    except OSError:
        return None
