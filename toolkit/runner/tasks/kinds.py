"""The task kinds, by Protocol task: what :func:`toolkit.runner.attempt.run_attempt` picks.

A kind is its name, the measured Attempts columns only it fills (declared in
:mod:`toolkit.runner.tasks.columns`) and the function that runs one attempt of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolkit.runner import decoding
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks import classification, columns, generation
from toolkit.runner.tasks.process_state import Emit
from toolkit.runner.tasks.requests_left import requests_left


@dataclass(frozen=True)
class TaskKind:
    """One Protocol task's attempts: its own columns and how one runs."""

    name: str
    #: The measured Attempts columns only this kind fills (columns.OWN).
    columns: tuple[str, ...]
    #: Run one attempt (spec, progress events, interrupt guard) to its journal record.
    run: Callable[[AttemptSpec, Emit, Any], dict[str, Any]]
    #: What an attempt ended without its record left on disk for its row to point at:
    #: (path in the campaign folder, SHA-256, what it holds in words), or None.
    left_behind: Callable[[AttemptSpec], tuple[str, str, str] | None] = lambda spec: None


def _serving(spec: AttemptSpec, emit: Emit, guard: Any) -> dict[str, Any]:
    """A serving attempt: its client (httpx) comes with the serving extra, so it is imported
    when one runs, never by a classification or generation campaign."""
    from toolkit.runner.tasks import serving

    return serving.run(spec, emit, guard)


def _serving_left(spec: AttemptSpec) -> tuple[str, str, str] | None:
    """A serving attempt's requests file, left by an attempt that ended without its record:
    counted by the serving task's reader (the serving extra); without it, still named with
    its hash."""
    try:
        from toolkit.runner.tasks import serving
    except ImportError as exc:
        why = f"its requests are not counted here ({exc}): install the serving extra"
        return requests_left(spec, lambda path: why)
    return requests_left(spec, serving.requests_held)


KINDS = {
    kind.name: kind
    for kind in (
        TaskKind(classification.NAME, columns.OWN[classification.NAME], classification.run),
        TaskKind(generation.NAME, columns.OWN[generation.NAME], generation.run),
        TaskKind("serving", columns.OWN["serving"], _serving, _serving_left),
    )
}


def kind_of(spec: AttemptSpec) -> TaskKind:
    """The kind of ``spec``'s Protocol task (blank: classification)."""
    return KINDS[decoding.task_of(spec.protocol)]
