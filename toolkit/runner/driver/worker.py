"""Run one attempt in a fresh process: ``python -m toolkit.runner.driver.worker < SPEC.json``.

The campaign starts one worker per attempt (process policy ``fresh``), so
memory peaks and caches belong to that attempt alone: as this module, or as a
fork of the run's fork server, which calls :func:`main` the same way. The worker reads an
:class:`~toolkit.runner.spec.AttemptSpec` as JSON on stdin, prints progress
events as JSON lines on stdout, appends the finished record to the workbook's
journal (fsync'd) and prints it as the last event. Timings stay inside the
worker. Exit code 0, or 130 when Ctrl-C asked the campaign to stop.

A run's pre-flight comes the same way, as ``{"preflight": {...}}`` on stdin
(:mod:`toolkit.runner.driver.preflight_apart`): its progress lines as ``line`` events, then
its outcome as one ``preflight`` event.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from toolkit.evidence import corpus, journal
from toolkit.runner import preflight_result

INTERRUPTED_EXIT = 130


def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def read_events(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The events among a worker's output lines (the driver's side of :func:`_emit`); a
    line that is not one (a library printed something) is skipped."""
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def main() -> int:
    """Run the attempt described on stdin; return the exit code."""
    # Ctrl-C while torch is still importing: no attempt has begun; the campaign
    # records the interruption itself.
    signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(INTERRUPTED_EXIT))
    message = json.loads(sys.stdin.read())
    if "preflight" in message:
        return _preflight(message["preflight"])
    from toolkit.runner.attempt import AttemptSpec, InterruptGuard, run_attempt  # torch

    spec = AttemptSpec(**message)
    with InterruptGuard() as guard:
        record = run_attempt(spec, _emit, guard)
        journal.append(spec.workbook, record)
        _emit({"event": "record", "record": record})
    stop = guard.requested or record["attempt"]["status"] == "interrupted"
    return INTERRUPTED_EXIT if stop else 0


def _preflight(request: dict[str, Any]) -> int:
    """Run a pre-flight (:func:`toolkit.runner.preflight.check`) as ``request`` describes
    it; its checks or problems go out as one event."""
    from toolkit.runner import preflight  # torch

    try:
        checks = preflight.check(
            request["variants"],
            request["protocol"],
            Path(request["workbook"]),
            [corpus.Item(**item) for item in request["items"]],
            bool(request["locked"]),
            lambda line: _emit({"event": "line", "text": line}),
            request.get("labels", ()),
        )
    except preflight_result.PreflightError as exc:
        _emit(preflight_result.to_json(None, exc.problems))
        return 0
    _emit(preflight_result.to_json(checks, []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
