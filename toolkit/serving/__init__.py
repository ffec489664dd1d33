"""Measure a model as it is served: an OpenAI-compatible endpoint under a declared load.

An open-loop client sends streamed requests on a Poisson schedule (or at a fixed
concurrency), records each request's send, first token, every piece and end in a JSONL file,
and computes TTFT, time per output token, inter-token latency, output tokens/s, goodput and
its own lag from that file alone. ``transformers serve`` on 127.0.0.1 stands in for a rented
card's vLLM or SGLang in tests and demos. Imports httpx, never torch.
"""

from __future__ import annotations

from toolkit.serving.bench import RunResult, Scenario, base_url, sweep
from toolkit.serving.identity import Identity, identify
from toolkit.serving.local import LocalServer, missing_packages
from toolkit.serving.metrics import LatencyTarget, Metrics, compute, parse_target, percentile
from toolkit.serving.records import Record, read_records
from toolkit.serving.schedule import Arrivals

__all__ = [
    "Arrivals",
    "Identity",
    "LatencyTarget",
    "LocalServer",
    "Metrics",
    "Record",
    "RunResult",
    "Scenario",
    "base_url",
    "compute",
    "identify",
    "missing_packages",
    "parse_target",
    "percentile",
    "read_records",
    "sweep",
]
