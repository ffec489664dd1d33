"""Timing and memory probes with one boundary for every variant (R9, R10, R18).

:class:`Span` times a phase on the host with ``perf_counter``; on CUDA it
synchronises before starting and before stopping, and records CUDA events so
the device span is known too (on the CPU there is no device span: None).
:class:`ForwardSpans` times the model's forward calls alone on the device: a pair of CUDA
events around each call, read once the window has synchronised (no synchronisation per
call, so the window's own timing does not change).
Memory: CUDA peaks of ``memory_allocated`` and ``memory_reserved``, reset at the
start of each attempt once what earlier work left is collected and the cache emptied
(the baseline is returned); the process's peak resident set is :mod:`toolkit.plumbing.rss`'s.
Kernels: :func:`attention_kernel` names the scaled-dot-product attention kernel a call ran,
from the operators the profiler saw.
"""

from __future__ import annotations

import gc
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

import torch

#: The operators behind ``scaled_dot_product_attention``, by the kernel family they run.
ATTENTION_OPS = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (cpu)",
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_efficient_attention": "memory-efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_scaled_dot_product_fused_attention_overrideable": "fused (device override)",
    "aten::_scaled_dot_product_attention_math": "math",
}
NO_SDPA = "no SDPA kernel (attention as matrix products and softmax)"
#: torch 2.11 warns once per process at the first profiler it starts that events are cleared
#: each cycle: the probe reads one cycle only, so it is expected here.
PROFILER_CYCLE = r"(Warning: )?Profiler clears events at the end of each cycle"


class Span:
    """Host (and, on CUDA, device) duration of a block; use as a context manager."""

    def __init__(self, device: torch.device | None = None) -> None:
        self.cuda = device is not None and device.type == "cuda"
        self.host_s: float | None = None
        self.device_s: float | None = None
        self._start = 0.0
        self._events: tuple[torch.cuda.Event, torch.cuda.Event] | None = None

    def __enter__(self) -> Span:
        if self.cuda:
            torch.cuda.synchronize()
            self._events = (
                torch.cuda.Event(enable_timing=True),
                torch.cuda.Event(enable_timing=True),
            )
            self._events[0].record()
        self._start = time.perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is not None:
            return  # a failed phase has no duration
        if self._events is not None:
            self._events[1].record()
            torch.cuda.synchronize()
        self.host_s = time.perf_counter() - self._start
        if self._events is not None:
            self.device_s = self._events[0].elapsed_time(self._events[1]) / 1000.0


class ForwardSpans:
    """Device time of forward calls: CUDA events around each (``with spans:``), summed."""

    def __init__(self) -> None:
        self._pairs: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self._start: torch.cuda.Event | None = None

    def __enter__(self) -> ForwardSpans:
        self._start = torch.cuda.Event(enable_timing=True)
        self._start.record()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None and self._start is not None:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self._pairs.append((self._start, end))
        self._start = None

    @property
    def calls(self) -> int:
        """Forward calls timed."""
        return len(self._pairs)

    def total_s(self) -> float | None:
        """Summed device span of the timed calls, in seconds (waits for the last one);
        None when none was timed."""
        if not self._pairs:
            return None
        self._pairs[-1][1].synchronize()
        return sum(start.elapsed_time(end) for start, end in self._pairs) / 1000.0


def release_memory(device: torch.device, cuda: bool = True) -> None:
    """Free what nothing reaches any more (a model is held by reference cycles until the
    collector runs), drop cuBLAS's workspaces (allocated tensors too), then hand CUDA's
    cached blocks back (``cuda=False``: the context is broken, leave it alone)."""
    gc.collect()
    if cuda and device.type == "cuda" and torch.cuda.is_available():
        clear_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear_workspaces is not None:
            clear_workspaces()
        torch.cuda.empty_cache()


def start_cuda_peaks(device: torch.device) -> tuple[int, int] | None:
    """Release what earlier work left, then start the CUDA peak counters afresh.

    Returns the baseline the peaks start from, (memory_allocated, memory_reserved) in
    bytes; None off CUDA.
    """
    release_memory(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    torch.cuda.reset_peak_memory_stats(device)
    return int(torch.cuda.memory_allocated(device)), int(torch.cuda.memory_reserved(device))


def cuda_peaks(device: torch.device) -> tuple[int, int] | None:
    """(max_memory_allocated, max_memory_reserved) in bytes, None off CUDA."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    return int(torch.cuda.max_memory_allocated(device)), int(torch.cuda.max_memory_reserved(device))


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Hide file descriptor 2: the profiler's C++ side prints a line at start and stop."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 to hide
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
        finally:
            os.close(null)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def attention_kernel(call: Callable[[], object]) -> str:
    """The attention kernel(s) ``call`` ran, from the operators the profiler recorded
    (``flash``, ``memory-efficient``, ``cudnn``, ``math``...; joined by `` + ``)."""
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PROFILER_CYCLE, category=UserWarning)
        with profile(activities=[ProfilerActivity.CPU]) as recorded:
            call()
    names = {event.name for event in recorded.events()}
    return " + ".join(label for op, label in ATTENTION_OPS.items() if op in names) or NO_SDPA
