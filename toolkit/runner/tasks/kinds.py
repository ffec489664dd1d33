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


@dataclass(frozen=True)
class TaskKind:
    """One Protocol task's attempts: its own columns and how one runs."""

    name: str
    #: The measured Attempts columns only this kind fills (columns.OWN).
    columns: tuple[str, ...]
    #: Run one attempt (spec, progress events, interrupt guard) to its journal record.
    run: Callable[[AttemptSpec, Emit, Any], dict[str, Any]]


KINDS = {
    kind.name: kind
    for kind in (
        TaskKind(classification.NAME, columns.OWN[classification.NAME], classification.run),
        TaskKind(generation.NAME, columns.OWN[generation.NAME], generation.run),
    )
}


def kind_of(spec: AttemptSpec) -> TaskKind:
    """The kind of ``spec``'s Protocol task (blank: classification)."""
    return KINDS[decoding.task_of(spec.protocol)]
