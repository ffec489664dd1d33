"""Fault injection for tests and drills: real failures inside the measured loop.

Set ``ITERALAB_INJECT_FAULT=KIND@N[:VARIANT[:REPETITION]]`` and the attempt
fails once ``N`` items (prompts, for the generation task) of the measured window are
done, whichever the task:

- ``oom``: raises ``torch.OutOfMemoryError`` (as CUDA does when memory runs out);
- ``crash``: raises ``RuntimeError``;
- ``cudaerror``: raises the ``RuntimeError`` of a CUDA error other than out-of-memory
  (an illegal memory access), which stops a shared campaign;
- ``interrupt``: raises ``KeyboardInterrupt`` (as Ctrl-C does);
- ``kill``: the process kills itself with SIGKILL (a crash that leaves no record:
  the campaign writes the row);
- ``hang``: stops making progress: sleeps past the attempt's timeout (or forever
  without one, until the campaign kills the worker).

``VARIANT`` and ``REPETITION`` restrict the fault to one attempt. Every
injected error says it was injected, so its row cannot pass for a real one.
Not a command-line option on purpose: nobody should meet it by accident.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from toolkit.errors import UsageError

ENV = "ITERALAB_INJECT_FAULT"
KINDS = ("oom", "crash", "cudaerror", "interrupt", "kill", "hang")


@dataclass(frozen=True)
class Fault:
    """One injected fault: its kind, after how many items, for which attempt."""

    kind: str
    after: int
    variant_id: str | None = None
    repetition: int | None = None

    def applies(self, variant_id: str, repetition: int) -> bool:
        """Whether this fault targets the given attempt."""
        return (self.variant_id is None or self.variant_id == variant_id) and (
            self.repetition is None or self.repetition == repetition
        )

    def fire(self, deadline: float | None = None) -> None:
        """Fail the way the kind says (``deadline``: the attempt's, on the monotonic clock)."""
        import torch

        text = f"injected by {ENV}={os.environ.get(ENV, '')}"
        if self.kind == "oom":
            raise torch.OutOfMemoryError(f"CUDA out of memory ({text})")
        if self.kind == "crash":
            raise RuntimeError(f"simulated crash ({text})")
        if self.kind == "cudaerror":
            raise RuntimeError(f"CUDA error: an illegal memory access was encountered ({text})")
        if self.kind == "interrupt":
            raise KeyboardInterrupt(text)
        if self.kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        while self.kind == "hang" and (deadline is None or time.monotonic() <= deadline):
            time.sleep(0.05)


def from_environment() -> Fault | None:
    """The fault set in ``ITERALAB_INJECT_FAULT``, or None."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    try:
        head, *target = text.split(":")
        kind, after = head.split("@")
        fault = Fault(
            kind.strip(),
            int(after),
            target[0] if target else None,
            int(target[1]) if len(target) > 1 else None,
        )
    except ValueError as exc:
        raise UsageError(
            f"{ENV}={text!r} is not KIND@N[:VARIANT[:REPETITION]]",
            hint=f"e.g. {ENV}=oom@40 or crash@40:b8-fp32:1; unset it to measure",
        ) from exc
    if fault.kind not in KINDS:
        raise UsageError(f"{ENV}: unknown fault {fault.kind!r}", hint=f"one of {', '.join(KINDS)}")
    return fault
