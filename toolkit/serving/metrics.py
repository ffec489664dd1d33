"""The figures of a run, computed from its requests file alone.

Percentiles are numpy's default ("linear", Hyndman and Fan's type 7): for sorted values
``x[0..n-1]`` the p-th percentile sits at rank ``h = (n - 1) * p / 100`` and is
``x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])``. Per request:

- TTFT: first streamed text minus the request's actual send;
- time per output token (TPOT): last piece minus first, over output tokens minus one (a
  request of one token has none);
- inter-token latency (ITL): every gap between two streamed pieces, pooled over requests;
- end-to-end: end of the stream minus the send.

Only completed measured requests enter the percentiles; a failed one counts as sent and
failed, and against goodput. The window runs from the first measured send to the last
measured end; output tokens/s and goodput are per second of it. Goodput counts the completed
requests meeting every declared target with their own value (a target ``ttft_p99_ms=500``
asks each request's TTFT to be at most 500 ms, and the run's p99 too). A figure that cannot
be computed is None, with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from toolkit.evidence.scenario import LAG_LIMIT_MS, METRIC_NAMES, LatencyTarget, parse_target
from toolkit.serving.records import MEASURED, Record, read_records

#: The target grammar is the Protocol's (latency_targets); serve-bench takes the same.
__all__ = ["METRIC_NAMES", "LatencyTarget", "Metrics", "compute", "parse_target", "percentile"]

#: Client lag (actual minus due send) above which, at p99, the run is named lagged.
DEFAULT_LAG_LIMIT_MS = LAG_LIMIT_MS


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) of ``values``, linear between closest ranks (numpy's
    default). Raises ValueError for no value."""
    if not values:
        raise ValueError("no value")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


@dataclass
class Metrics:
    """A run's figures; a None value has its reason in ``reasons`` under the same name."""

    requests_sent: int
    requests_completed: int
    requests_failed: int
    warmup_requests: int
    window_s: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    itl_p99_ms: float | None = None
    output_tokens: int = 0
    output_tokens_from: str = ""
    output_tokens_per_s: float | None = None
    good_requests: int = 0
    #: Output tokens of the requests meeting every target: what a cost per token divides by.
    good_output_tokens: int = 0
    goodput_rps: float | None = None
    client_lag_p99_ms: float | None = None
    client_lagged: bool = False
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    failure_examples: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Values:
    """Each completed request's own figures, in milliseconds (None where it has none)."""

    ttft: float | None
    tpot: float | None
    itl: list[float]
    e2e: float


def _values(record: Record) -> _Values:
    assert record.sent_s is not None and record.end_s is not None
    ttft = tpot = None
    if record.first_token_s is not None:
        ttft = (record.first_token_s - record.sent_s) * 1000
    tokens = record.output_tokens or 0
    if tokens > 1 and len(record.token_s) > 1:
        tpot = (record.token_s[-1] - record.token_s[0]) * 1000 / (tokens - 1)
    gaps = [(b - a) * 1000 for a, b in pairwise(record.token_s)]
    return _Values(ttft, tpot, gaps, (record.end_s - record.sent_s) * 1000)


def _own(values: _Values, metric: str) -> list[float]:
    """A request's values of ``metric`` as a target reads them (ITL: every gap)."""
    if metric == "itl":
        return values.itl
    one = getattr(values, metric)
    return [] if one is None else [one]


def _meets(values: _Values, targets: Sequence[LatencyTarget]) -> bool:
    """True when every value of the request is within every target (a request with no
    value of a metric, one token and so no TPOT, has nothing over its limit)."""
    return all(v <= t.limit_ms for t in targets for v in _own(values, t.metric))


def compute(
    path: str | Path,
    targets: Sequence[LatencyTarget] = (),
    lag_limit_ms: float = DEFAULT_LAG_LIMIT_MS,
) -> Metrics:
    """The figures of the requests file at ``path`` against ``targets``."""
    records = read_records(path)
    measured = [r for r in records if r.phase == MEASURED]
    done = [r for r in measured if r.ok]
    metrics = Metrics(
        requests_sent=len(measured),
        requests_completed=len(done),
        requests_failed=len(measured) - len(done),
        warmup_requests=len(records) - len(measured),
    )
    for record in measured:
        if not record.ok:
            kind = str(record.reason).split(":", 1)[0]
            metrics.failures[kind] = metrics.failures.get(kind, 0) + 1
            metrics.failure_examples.setdefault(kind, str(record.reason))
    values = [_values(r) for r in done]
    _latencies(metrics, values)
    _rates(metrics, measured, done, values, targets)
    _lag(metrics, measured, lag_limit_ms)
    _targets(metrics, values, targets)
    return metrics


def _pooled(values: Sequence[_Values], metric: str) -> list[float]:
    return [v for one in values for v in _own(one, metric)]


def _fill(metrics: Metrics, name: str, values: list[float], p: float, why: str) -> None:
    if values:
        setattr(metrics, name, percentile(values, p))
    else:
        metrics.reasons[name] = why


def _latencies(metrics: Metrics, values: Sequence[_Values]) -> None:
    none = "no measured request completed" if not values else None
    for p in (50, 90, 99):
        why = none or "no completed request streamed any text"
        _fill(metrics, f"ttft_p{p}_ms", _pooled(values, "ttft"), p, why)
    for p in (50, 99):
        why = none or "no completed request streamed two tokens or more"
        _fill(metrics, f"tpot_p{p}_ms", _pooled(values, "tpot"), p, why)
    _fill(metrics, "itl_p99_ms", _pooled(values, "itl"), 99, none or "no gap between two pieces")


def _rates(
    metrics: Metrics,
    measured: Sequence[Record],
    done: Sequence[Record],
    values: Sequence[_Values],
    targets: Sequence[LatencyTarget],
) -> None:
    sources = sorted({str(r.output_tokens_from) for r in done})
    metrics.output_tokens_from = " and ".join(sources)
    metrics.output_tokens = sum(r.output_tokens or 0 for r in done)
    good = [_meets(v, targets) for v in values]
    metrics.good_requests = sum(good)
    metrics.good_output_tokens = sum(
        r.output_tokens or 0 for r, ok in zip(done, good, strict=True) if ok
    )
    starts = [r.sent_s for r in measured if r.sent_s is not None]
    ends = [r.end_s for r in measured if r.end_s is not None]
    window = max(ends) - min(starts) if starts and ends else 0.0
    if window > 0:
        metrics.window_s = window
    else:
        metrics.reasons["window_s"] = (
            "no measured request was sent" if not measured else "the window lasted no time"
        )
    if metrics.window_s is not None and done:
        metrics.output_tokens_per_s = metrics.output_tokens / metrics.window_s
        metrics.goodput_rps = metrics.good_requests / metrics.window_s
    else:  # a server that served nothing has no throughput to compare, not a rate of 0
        why = metrics.reasons.get("window_s", "no measured request completed")
        metrics.reasons["output_tokens_per_s"] = metrics.reasons["goodput_rps"] = why


def _lag(metrics: Metrics, measured: Sequence[Record], limit_ms: float) -> None:
    lags = [r.lag_s * 1000 for r in measured if r.lag_s is not None]
    _fill(metrics, "client_lag_p99_ms", lags, 99, "no measured request was sent")
    if metrics.client_lag_p99_ms is not None and metrics.client_lag_p99_ms > limit_ms:
        metrics.client_lagged = True
        metrics.reasons["client_lagged"] = (
            f"the client sent its requests late (p99 {metrics.client_lag_p99_ms:.1f} ms over "
            f"the {limit_ms:g} ms allowed): the server saw a slower arrival than declared"
        )


def _targets(metrics: Metrics, values: Sequence[_Values], targets: Sequence[LatencyTarget]) -> None:
    for target in targets:
        pooled = _pooled(values, target.metric)
        value = percentile(pooled, target.percentile) if pooled else None
        metrics.targets[target.name] = {
            "limit_ms": target.limit_ms,
            "value_ms": value,
            "met": value is not None and value <= target.limit_ms,
        }
