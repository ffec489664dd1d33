"""Timing and memory probes with one boundary for every variant (R9, R10, R18).

:class:`Span` times a phase on the host with ``perf_counter``; on CUDA it
synchronises before starting and before stopping, and records CUDA events so
the device span is known too (on the CPU there is no device span: None).
Memory: CUDA peaks of ``memory_allocated`` and ``memory_reserved`` (reset at
the start of each attempt); the process's peak resident set is :mod:`toolkit.plumbing.rss`'s.
"""

from __future__ import annotations

import time
from types import TracebackType

import torch


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
            self._events = (torch.cuda.Event(enable_timing=True),
                            torch.cuda.Event(enable_timing=True))
            self._events[0].record()
        self._start = time.perf_counter()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None:
            return  # a failed phase has no duration
        if self._events is not None:
            self._events[1].record()
            torch.cuda.synchronize()
        self.host_s = time.perf_counter() - self._start
        if self._events is not None:
            self.device_s = self._events[0].elapsed_time(self._events[1]) / 1000.0


def reset_cuda_peaks(device: torch.device) -> None:
    """Start the CUDA peak counters afresh for this attempt."""
    if device.type == "cuda" and torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats(device)


def cuda_peaks(device: torch.device) -> tuple[int, int] | None:
    """(max_memory_allocated, max_memory_reserved) in bytes, None off CUDA."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    return int(torch.cuda.max_memory_allocated(device)), int(torch.cuda.max_memory_reserved(device))
