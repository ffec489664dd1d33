"""When each request is sent: Poisson arrivals at a declared rate, or a fixed concurrency.

The arrival plan is fixed before the first request leaves, from the declared rate and seed
alone, so the same declaration gives the same send times on every machine (open loop: what
the server does never moves them). Under a fixed concurrency a request is due when a slot
frees, so its due time is known only while the run goes on. Warm-up requests come first, one
at a time, and are recorded but never measured.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from toolkit.errors import UsageError

#: Requests planned at most in one run: a declaration that would plan more is a typo (a
#: rate of 1e6 for an hour), and the plan is held in memory.
MAX_REQUESTS = 100_000


@dataclass(frozen=True)
class Arrivals:
    """How requests arrive: ``rate`` per second (Poisson) or ``concurrency`` in flight; how
    many (``requests``) or for how long (``duration_s``); ``warmup`` unmeasured requests
    first; ``seed`` fixes the Poisson draws."""

    rate: float | None = None
    concurrency: int | None = None
    requests: int | None = None
    duration_s: float | None = None
    warmup: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if (self.rate is None) == (self.concurrency is None):
            raise UsageError(
                "declare either a request rate or a fixed concurrency, not both or neither",
                hint="e.g. --rate 2 (requests per second) or --concurrency 4",
            )
        if self.rate is not None and not self.rate > 0:
            raise UsageError(f"the request rate must be above 0 per second, not {self.rate}")
        if self.concurrency is not None and self.concurrency < 1:
            raise UsageError(f"the concurrency must be at least 1, not {self.concurrency}")
        if (self.requests is None) == (self.duration_s is None):
            raise UsageError(
                "declare either a request count or a duration, not both or neither",
                hint="e.g. --requests 100 or --duration 60 (seconds)",
            )
        if self.requests is not None and not 1 <= self.requests <= MAX_REQUESTS:
            raise UsageError(f"the request count must be 1 to {MAX_REQUESTS}, not {self.requests}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise UsageError(f"the duration must be above 0 seconds, not {self.duration_s}")
        if self.warmup < 0:
            raise UsageError(f"the warm-up count must be 0 or more, not {self.warmup}")

    @property
    def label(self) -> str:
        """``rate-2`` or ``concurrency-4``: the run's name among others of a sweep."""
        if self.rate is not None:
            return f"rate-{self.rate:g}"
        return f"concurrency-{self.concurrency}"


def poisson_offsets(arrivals: Arrivals) -> list[float]:
    """Send times, in seconds after the measured phase starts, of a Poisson arrival process
    at ``arrivals.rate``: exponential gaps drawn from ``random.Random(seed)``; the first
    request leaves at 0. Stops at the request count, or before the duration ends."""
    assert arrivals.rate is not None
    draw = random.Random(arrivals.seed)
    offsets: list[float] = []
    at = 0.0
    while len(offsets) < (arrivals.requests or MAX_REQUESTS + 1):
        if arrivals.duration_s is not None and at >= arrivals.duration_s:
            break
        offsets.append(at)
        at += draw.expovariate(arrivals.rate)
    if len(offsets) > MAX_REQUESTS:
        raise UsageError(
            f"a rate of {arrivals.rate:g}/s for {arrivals.duration_s:g} s plans more than "
            f"{MAX_REQUESTS} requests",
            hint="lower the rate or the duration",
        )
    return offsets
