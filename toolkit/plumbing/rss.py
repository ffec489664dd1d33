"""A process's own peak resident memory (stdlib only)."""

from __future__ import annotations

import sys


def peak_rss_bytes() -> int | None:
    """This process's peak resident set in bytes since it started its program; None if unknown.

    On Linux it is ``VmHWM`` of /proc/self/status. Not ``ru_maxrss``: across
    fork and exec that keeps the parent's peak when it was larger, so a worker
    started by a large process would report the parent's memory. Elsewhere
    ``ru_maxrss`` (bytes on macOS, KiB on the other Unixes); None on Windows.
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # "VmHWM:   123456 kB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024
