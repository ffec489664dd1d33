"""The open loop: every request leaves at its due time, whatever the server does.

A slow server makes requests pile up in flight; it never delays the next send. Under a
fixed concurrency a request is due the moment a slot frees. Warm-up requests go first, one
at a time. Each record is written as its request ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from toolkit.serving.client import Request, monotonic_from, send
from toolkit.serving.records import MEASURED, WARMUP, Record, RecordWriter
from toolkit.serving.schedule import Arrivals, poisson_offsets

#: Sends request ``index`` of a phase, due at a time of ``clock``, and writes its record.
_Send = Callable[[int, str, float, Callable[[], float]], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class Prompt:
    """One prompt: its stable id and its text."""

    id: str
    text: str


@dataclass(frozen=True)
class Endpoint:
    """Where and how: the endpoint's base URL, the request's shape, the read timeout."""

    base_url: str
    request: Request
    timeout_s: float


def run_loop(
    endpoint: Endpoint,
    prompts: Sequence[Prompt],
    arrivals: Arrivals,
    writer: RecordWriter,
    measured: bool = True,
) -> None:
    """Send the warm-up, then (unless not ``measured``: a warm-up timed on its own) the
    measured requests on their schedule; write every record."""
    asyncio.run(_run(endpoint, prompts, arrivals, writer, measured))


async def _run(
    endpoint: Endpoint,
    prompts: Sequence[Prompt],
    arrivals: Arrivals,
    writer: RecordWriter,
    measured: bool,
) -> None:
    # No pool limit: an open loop must never wait for a free connection to send.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    timeout = httpx.Timeout(endpoint.timeout_s, connect=min(10.0, endpoint.timeout_s))
    async with httpx.AsyncClient(
        base_url=endpoint.base_url, limits=limits, timeout=timeout
    ) as client:

        async def one(index: int, phase: str, due: float, clock: Callable[[], float]) -> None:
            prompt = prompts[index % len(prompts)]
            record = Record(index=index, phase=phase, prompt_id=prompt.id, scheduled_s=due)
            try:
                await send(client, endpoint.request, prompt.text, record, clock)
            finally:  # an interrupted request is recorded too
                writer.write(record)

        warmup_clock = monotonic_from(time.perf_counter())
        for index in range(arrivals.warmup):
            await one(-arrivals.warmup + index, WARMUP, warmup_clock(), warmup_clock)
        if not measured:
            return
        if arrivals.rate is not None:
            await _open_loop(one, poisson_offsets(arrivals))
        else:
            await _fixed_concurrency(one, arrivals)


async def _open_loop(one: _Send, offsets: list[float]) -> None:
    origin = time.perf_counter()
    clock = monotonic_from(origin)
    tasks: list[asyncio.Task[None]] = []
    for index, due in enumerate(offsets):
        wait = due - clock()
        if wait > 0:
            await asyncio.sleep(wait)
        tasks.append(asyncio.create_task(one(index, MEASURED, due, clock)))
    await _gather(tasks)


async def _fixed_concurrency(one: _Send, arrivals: Arrivals) -> None:
    clock = monotonic_from(time.perf_counter())
    assert arrivals.concurrency is not None
    counter = iter(range(arrivals.requests or 2**62))

    async def slot() -> None:
        due = 0.0
        for index in counter:
            if arrivals.duration_s is not None and due >= arrivals.duration_s:
                return
            await one(index, MEASURED, due, clock)
            due = clock()

    await _gather([asyncio.create_task(slot()) for _ in range(arrivals.concurrency)])


async def _gather(tasks: list[asyncio.Task[None]]) -> None:
    """Wait for every task; on interruption cancel them all and wait for their records."""
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
