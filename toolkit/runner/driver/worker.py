"""Run one attempt in a fresh process: ``python -m toolkit.runner.driver.worker < SPEC.json``.

The campaign starts one worker per attempt (process policy ``fresh``), so
memory peaks and caches belong to that attempt alone: as this module, or as a
fork of the run's fork server, which calls :func:`main` the same way. The worker reads an
:class:`~toolkit.runner.spec.AttemptSpec` as JSON on stdin, prints progress
events as JSON lines on stdout, appends the finished record to the workbook's
journal (fsync'd) and prints it as the last event. Timings stay inside the
worker. Exit code 0, or 130 when Ctrl-C asked the campaign to stop.

The events' stdout is the runner's own channel: at its start the worker keeps the
descriptor it was given as fd 1 for them alone and points fd 1 (and so ``sys.stdout``) at
stderr, so that whatever the model's or a ``python:`` predictor's code prints lands in the
attempt's stderr, never among the events. The campaign's reader (:func:`read_events`)
still trusts nothing it reads: a malformed event is skipped with a note.

A run's pre-flight comes the same way, as ``{"preflight": {...}}`` on stdin
(:mod:`toolkit.runner.driver.preflight_apart`): its progress lines as ``line`` events, then
its outcome as one ``preflight`` event.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any

from toolkit.evidence import corpus, journal
from toolkit.runner.preflight import result as preflight_result

INTERRUPTED_EXIT = 130


#: The runner's event channel once :func:`_take_channel` kept it; None before.
_channel: IO[str] | None = None

#: Each event a worker sends, and the type of each field the campaign reads of it.
EVENT_FIELDS: dict[str, dict[str, type]] = {
    "phase": {"phase": str},
    "items": {"done": int, "total": int},
    "record": {"record": dict},
    "line": {"text": str},
    "preflight": {"problems": list},
}


def _emit(event: dict[str, Any]) -> None:
    stream = _channel if _channel is not None else sys.stdout
    stream.write(json.dumps(event, ensure_ascii=False) + "\n")
    stream.flush()


def _take_channel() -> None:
    """Keep fd 1 for the runner's events and point fd 1 at stderr: what the attempt's own
    code prints (a predictor's debugging, a library's banner) goes to the attempt's stderr,
    where it cannot pass for an event. The kept descriptor is not inherited by a child."""
    global _channel
    sys.stdout.flush()
    _channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)


@contextmanager
def stdout_to_stderr() -> Iterator[Callable[[], AbstractContextManager[None]]]:
    """Within the block, fd 1 and ``sys.stdout`` write to stderr (process policy
    ``shared``: the attempt runs in the campaign's process, whose stdout is the user's
    screen or pipe). Yields a context manager factory that gives the original stdout back
    for a moment, for the campaign's own progress lines."""
    sys.stdout.flush()
    saved_fd, saved_stream = os.dup(1), sys.stdout

    def redirect() -> None:
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def restore() -> None:
        sys.stdout.flush()
        os.dup2(saved_fd, 1)
        sys.stdout = saved_stream

    @contextmanager
    def original() -> Iterator[None]:
        restore()
        try:
            yield
        finally:
            redirect()

    redirect()
    try:
        yield original
    finally:
        restore()
        os.close(saved_fd)


@contextmanager
def alarm(limit_s: float | None, expired: Callable[[], None]) -> Iterator[Callable[[], None]]:
    """Within the block, ``expired`` runs (in the main thread, where it may raise into the
    code that is blocked) once ``limit_s`` passes without a restart; yields the restart.
    For code in this process that a worker's kill cannot reach (process policy ``shared``).
    No alarm without a limit, or off the main thread (signals reach that one only)."""
    if limit_s is None or threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    limit = limit_s

    def restart() -> None:
        signal.setitimer(signal.ITIMER_REAL, limit)

    previous = signal.signal(signal.SIGALRM, lambda signum, frame: expired())
    restart()
    try:
        yield restart
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def malformed(event: Any) -> str | None:
    """Why ``event`` (a decoded line of the channel) is not an event the campaign can use;
    None when it is."""
    if not isinstance(event, dict):
        return f"a JSON {type(event).__name__}, not an object"
    fields = EVENT_FIELDS.get(event.get("event"))  # type: ignore[arg-type]
    if fields is None:
        return f"unknown event {event.get('event')!r}"
    for name, kind in fields.items():
        value = event.get(name)
        # bool is an int to Python, not a count to the campaign.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{event['event']} event's {name} is {value!r}, expected {kind.__name__}"
    if event["event"] == "record":
        attempt = event["record"].get("attempt")
        if not isinstance(attempt, dict) or not isinstance(attempt.get("status"), str):
            return "record event without an attempt row and its status"
    return None


def read_events(
    lines: Iterable[str], skipped: Callable[[str], None] | None = None
) -> Iterator[dict[str, Any]]:
    """The events among a worker's channel lines (the driver's side of :func:`_emit`); a
    line that is not a well-formed event is skipped, and ``skipped`` hears why."""
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            problem: str | None = "not JSON"
        else:
            problem = malformed(event)
        if problem is None:
            yield event
        elif skipped is not None:
            skipped(f"skipped a malformed line on the runner's channel ({problem}): {line[:200]!r}")


def main() -> int:
    """Run the attempt described on stdin; return the exit code."""
    # Ctrl-C while torch is still importing: no attempt has begun; the campaign
    # records the interruption itself.
    signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(INTERRUPTED_EXIT))
    _take_channel()
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
    """Run a pre-flight (:func:`toolkit.runner.preflight.checks.check`) as ``request`` describes
    it; its checks or problems go out as one event."""
    from toolkit.runner.preflight import checks as preflight  # torch

    try:
        checks = preflight.check(
            request["variants"],
            request["protocol"],
            Path(request["workbook"]),
            items=[corpus.Item(**item) for item in request["items"]],
            locked=bool(request["locked"]),
            progress=lambda line: _emit({"event": "line", "text": line}),
            labels=request.get("labels", ()),
        )
    except preflight_result.PreflightError as exc:
        _emit(preflight_result.to_json(None, exc.problems))
        return 0
    _emit(preflight_result.to_json(checks, []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
