"""Run one attempt in a fresh process: ``python -m toolkit.runner.driver.worker < SPEC.json``.

The campaign starts one worker per attempt (process policy ``fresh``), so
memory peaks and caches belong to that attempt alone: as this module, or as a
fork of the run's fork server, which calls :func:`main` the same way. The worker reads an
:class:`~toolkit.runner.spec.AttemptSpec` as JSON on stdin, prints progress
events as JSON lines on stdout, appends the finished record to the workbook's
journal (fsync'd) and prints it as the last event. Timings stay inside the
worker. Exit code 0, or 130 when Ctrl-C asked the campaign to stop.
"""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

from toolkit.evidence import journal

INTERRUPTED_EXIT = 130


def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main() -> int:
    """Run the attempt described on stdin; return the exit code."""
    # Ctrl-C while torch is still importing: no attempt has begun; the campaign
    # records the interruption itself.
    signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(INTERRUPTED_EXIT))
    from toolkit.runner.attempt import AttemptSpec, InterruptGuard, run_attempt  # torch

    spec = AttemptSpec.from_json(sys.stdin.read())
    with InterruptGuard() as guard:
        record = run_attempt(spec, _emit, guard)
        journal.append(spec.workbook, record)
        _emit({"event": "record", "record": record})
    stop = guard.requested or record["attempt"]["status"] == "interrupted"
    return INTERRUPTED_EXIT if stop else 0


if __name__ == "__main__":
    sys.exit(main())
