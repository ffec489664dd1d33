"""The moment, as the workbook records it: local time with its UTC offset, to the second."""

from __future__ import annotations

import datetime as dt


def now_text() -> str:
    """Now, e.g. ``2026-12-02T15:30:00+01:00`` (stdlib only: the runner imports it too)."""
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds")
