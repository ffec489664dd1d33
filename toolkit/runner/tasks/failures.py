"""What a failed attempt carries: its error text, the traceback it must drop before memory is
released, the time-out, and the CUDA errors that end a shared campaign.
"""

from __future__ import annotations

import torch


class AttemptTimeout(Exception):
    """The attempt ran past its allowed duration."""


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
