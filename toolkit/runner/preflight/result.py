"""What a pre-flight found, without torch: the driver reads it from the process that ran it.

`iteralab run` runs its pre-flight in a worker process, as its attempts
(:mod:`toolkit.runner.driver.preflight_apart`), so the campaign's own process never imports
torch nor holds a model or a CUDA context while the attempts run; the checks and problems
travel back as JSON (:func:`to_json`, :func:`from_json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from toolkit.errors import ModelError

#: Why a cuda variant is resolved but not loaded on a machine without CUDA.
NO_CUDA_HERE = "cuda variant: no CUDA device here (resolved, head checked, not loaded)"


@dataclass
class VariantCheck:
    """One variant's pre-flight: its engine, its model's load and its one batch."""

    variant_id: str
    engine: str
    load_s: float | None = None
    batch_s: float | None = None
    batch_items: int = 0
    #: Why it was not loaded here (a cuda variant on a machine without CUDA).
    not_loaded: str | None = None
    #: Seconds of model work: both calls of its one batch (the first paid one-off costs).
    work_s: float | None = None
    #: Seconds its load spent converting the model for its engine (ONNX export,
    #: CTranslate2), on the first variant of those sharing the model only.
    conversion_s: float = 0.0

    @property
    def item_s(self) -> float | None:
        """Seconds per item in its one batch (None when not run here)."""
        if self.batch_s is None or not self.batch_items:
            return None
        return self.batch_s / self.batch_items


@dataclass(frozen=True)
class Problem:
    """What stops a variant (or several sharing one model) before any attempt."""

    variant_ids: tuple[str, ...]
    message: str
    hint: str | None


class PreflightError(ModelError):
    """One or more variants cannot run; the message names each, the hint says what to do."""

    def __init__(self, problems: Sequence[Problem], locked: bool, workbook: str) -> None:
        lines = []
        for p in problems:
            fix = f"\n      fix: {p.hint}" if p.hint else ""
            lines.append(f"  variant {', '.join(p.variant_ids)}: {p.message}{fix}")
        after = (
            f"then record the change with `iteralab amend {workbook} --reason ...` (the "
            "model and head are locked)"
            if locked
            else "then check again"
        )
        super().__init__(
            f"pre-flight: {len(problems)} problem(s); no attempt was run or "
            "recorded:\n" + "\n".join(lines),
            hint=f"fix each as said, {after}",
        )
        self.problems = list(problems)


def to_json(checks: Sequence[VariantCheck] | None, problems: Sequence[Problem]) -> dict[str, Any]:
    """The pre-flight's outcome as a JSON-ready event: its checks, or its problems."""
    return {
        "event": "preflight",
        "checks": None if checks is None else [asdict(c) for c in checks],
        "problems": [asdict(p) for p in problems],
    }


def from_json(event: dict[str, Any], locked: bool, workbook: str) -> list[VariantCheck]:
    """The checks of :func:`to_json`'s event; raises its PreflightError when it has problems."""
    problems = [
        Problem(tuple(p["variant_ids"]), p["message"], p["hint"]) for p in event["problems"]
    ]
    if problems:
        raise PreflightError(problems, locked, workbook)
    return [VariantCheck(**c) for c in event["checks"]]
