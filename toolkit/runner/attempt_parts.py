"""What every kind of attempt (classification, generation) builds its row with.

One place for the cell rule (a measurement is a value or an empty cell with its
reason), the error text a failed row carries, the traceback a failure must
drop before memory is released, the CUDA errors that end a shared campaign,
the seed an attempt runs with (R17), and the process state every attempt starts
from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from toolkit import layout
from toolkit.runner import plan, precision, probes, reproducibility

#: Where an attempt sends its progress events (phase changes, items done).
Emit = Callable[[dict[str, Any]], None]


class AttemptTimeout(Exception):
    """The attempt ran past its allowed duration."""


class Cells:
    """Builds a row where each measurement is a value or an empty cell with its reason."""

    def __init__(self) -> None:
        self.row: dict[str, Any] = {}

    def put(self, name: str, value: Any, reason: str | None = None) -> None:
        self.row[name] = value
        column = layout.ATTEMPTS.column(name) if name in layout.ATTEMPTS.names else None
        if column is not None and column.measurement:
            if value is None and not reason:
                raise AssertionError(f"{name} is empty without a reason")
            self.row[column.reason] = None if value is not None else reason


def seconds(value: float | None) -> float | None:
    """Seconds as the row holds them: microseconds, or None."""
    return None if value is None else round(value, 6)


def error_text(exc: BaseException) -> str:
    """A failure as one line of the row's notes: its type and the first line of its text."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:400]}" if text else type(exc).__name__


def forget_traceback(error: BaseException) -> None:
    """Drop the frames a failure holds (with them the batch's tensors and the model): an
    exception caught in a frame it references is a cycle only the collector would free."""
    pending: list[BaseException | None] = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending += [current.__cause__, current.__context__]


def breaks_cuda(error: BaseException) -> bool:
    """Whether ``error`` is a CUDA error other than out-of-memory: after one, the process's
    CUDA context may be unusable (a sticky error fails every later CUDA call)."""
    if isinstance(error, torch.OutOfMemoryError) or not isinstance(error, RuntimeError):
        return False
    accelerator = getattr(torch, "AcceleratorError", None)  # torch >= 2.8
    if accelerator is not None and isinstance(error, accelerator):
        return True
    return any(mark in str(error) for mark in ("CUDA error", "CUBLAS_STATUS_", "CUDNN_STATUS_"))


def attempt_seed(spec: Any) -> int | None:
    """The seed the attempt runs with: its slot's, else the protocol's first (R17)."""
    if spec.seed is not None:
        return int(spec.seed)
    declared = plan.seeds(spec.protocol.get("seeds"))
    return declared[0] if declared else None


def start_process(spec: Any, device: torch.device
                  ) -> tuple[int, int | None, tuple[int, int] | None]:
    """Put this process in the state the attempt is measured in: torch threads, fp32 at full
    precision (R16), the Protocol's determinism choices and the attempt's seed (R17), CUDA
    peaks reset after memory is released. Returns (threads, seed, the peaks' baseline)."""
    threads = spec.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    precision.pin_fp32()
    reproducibility.apply(spec.protocol, device)
    seed = attempt_seed(spec)
    reproducibility.seed(seed)
    return threads, seed, probes.start_cuda_peaks(device)
