"""One serving benchmark, from declaration to figures: the library call behind ``serve-bench``.

For each declared arrival (one rate or concurrency) the endpoint is identified, the requests
sent (warm-up first), every request written to ``requests.jsonl`` in the run's own folder,
and the figures computed back from that file. ``run.json`` beside it holds the declaration,
the endpoint's identity, the file's SHA-256 and the figures. With a local model folder,
``transformers serve`` is started first and stopped at the end, its log kept in the output
folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from toolkit.errors import UsageError
from toolkit.evidence.corpus import read_corpus
from toolkit.evidence.scenario import DEFAULT_API, ROUTES
from toolkit.plumbing.atomic import write_text
from toolkit.plumbing.digests import file_sha256
from toolkit.serving.client import Request
from toolkit.serving.identity import Identity, identify
from toolkit.serving.local import LocalServer
from toolkit.serving.loop import Endpoint, Prompt, run_loop
from toolkit.serving.metrics import DEFAULT_LAG_LIMIT_MS, LatencyTarget, Metrics, compute
from toolkit.serving.records import RecordWriter
from toolkit.serving.schedule import Arrivals

REQUESTS_FILE = "requests.jsonl"
RUN_FILE = "run.json"
SERVER_LOG = "transformers-serve.log"


@dataclass(frozen=True)
class Scenario:
    """What every run of a sweep shares: where (``base_url``, ``model``; both may come from
    ``local_model``), what (``prompts``, ``api``, ``max_tokens``), the latency targets."""

    prompts: Path
    max_tokens: int
    base_url: str | None = None
    model: str | None = None
    api: str = DEFAULT_API
    targets: tuple[LatencyTarget, ...] = ()
    timeout_s: float = 120.0
    lag_limit_ms: float = DEFAULT_LAG_LIMIT_MS
    local_model: Path | None = None


@dataclass(kw_only=True)
class RunResult:
    """One run: its folder, the requests file and its SHA-256, the figures, the endpoint."""

    label: str
    folder: Path
    requests: Path
    sha256: str
    metrics: Metrics
    identity: Identity
    arrivals: Arrivals
    notes: list[str] = field(default_factory=list)


def base_url(text: str) -> str:
    """``text`` as a base URL the routes are appended to (no trailing ``/`` or ``/v1``);
    UsageError when it is no http(s) URL."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"endpoint {text!r} is not an http(s) URL",
            hint="e.g. http://127.0.0.1:8000 or https://HOST/v1",
        )
    url = text.strip().rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def sweep(scenario: Scenario, sweep_arrivals: Sequence[Arrivals], out: Path) -> list[RunResult]:
    """Run each of ``sweep_arrivals`` in turn into ``out/LABEL/``; return their results."""
    _check(scenario, sweep_arrivals, out)
    prompts = [Prompt(item.id, item.text) for item in read_corpus(scenario.prompts)]
    out.mkdir(parents=True, exist_ok=True)
    with _endpoint(scenario, out) as (url, model):
        endpoint = Endpoint(
            url, Request(model, scenario.api, scenario.max_tokens), scenario.timeout_s
        )
        return [_run(scenario, endpoint, prompts, one, out / one.label) for one in sweep_arrivals]


def _check(scenario: Scenario, sweep_arrivals: Sequence[Arrivals], out: Path) -> None:
    if scenario.api not in ROUTES:
        raise UsageError(f"api {scenario.api!r} is not one of {', '.join(ROUTES)}")
    if scenario.max_tokens < 1:
        raise UsageError(f"max new tokens must be at least 1, not {scenario.max_tokens}")
    if scenario.local_model is None and (scenario.base_url is None or scenario.model is None):
        raise UsageError(
            "name the endpoint and its model, or a local model folder to serve",
            hint="--endpoint URL --model NAME, or --start-local MODEL_DIR",
        )
    if scenario.local_model is None and scenario.base_url is not None:
        base_url(scenario.base_url)  # refused before anything is written
    labels = [one.label for one in sweep_arrivals]
    if not labels or len(set(labels)) != len(labels):
        raise UsageError(f"declare each rate or concurrency once (got {', '.join(labels)})")
    taken = [label for label in labels if (out / label / REQUESTS_FILE).exists()]
    if taken:
        raise UsageError(
            f"{out}: already holds the runs {', '.join(taken)}",
            hint="give another output folder (a run never overwrites its evidence)",
        )


@contextmanager
def _endpoint(scenario: Scenario, out: Path) -> Iterator[tuple[str, str]]:
    """(base URL, model name): the declared endpoint, or a local server started for it."""
    if scenario.local_model is None:
        assert scenario.base_url is not None and scenario.model is not None
        yield base_url(scenario.base_url), scenario.model
        return
    with LocalServer(scenario.local_model, out / SERVER_LOG) as server:
        yield server.base_url, scenario.model or server.model


def _run(
    scenario: Scenario, endpoint: Endpoint, prompts: list[Prompt], arrivals: Arrivals, folder: Path
) -> RunResult:
    folder.mkdir(parents=True, exist_ok=True)
    identity = identify(endpoint.base_url)
    notes = [identity.reason] if identity.reason else []
    if identity.lists(endpoint.request.model) is False:
        notes.append(
            f"model {endpoint.request.model!r} is not among the endpoint's models "
            f"({', '.join(identity.models or [])})"
        )
    path = folder / REQUESTS_FILE
    with RecordWriter(path) as writer:
        run_loop(endpoint, prompts, arrivals, writer)
    metrics = compute(path, scenario.targets, scenario.lag_limit_ms)
    result = RunResult(
        label=arrivals.label,
        folder=folder,
        requests=path,
        sha256=file_sha256(path),
        metrics=metrics,
        identity=identity,
        arrivals=arrivals,
        notes=notes,
    )
    write_text(folder / RUN_FILE, json.dumps(run_document(scenario, endpoint, result), indent=2))
    return result


def run_document(scenario: Scenario, endpoint: Endpoint, result: RunResult) -> dict[str, Any]:
    """run.json: the declaration, the endpoint, the requests file and its hash, the figures."""
    return {
        "endpoint": endpoint.base_url,
        "model": endpoint.request.model,
        "api": scenario.api,
        "prompts": str(scenario.prompts),
        "max_tokens": scenario.max_tokens,
        "arrivals": asdict(result.arrivals),
        "targets": [t.name + f"={t.limit_ms:g}" for t in scenario.targets],
        "requests_file": REQUESTS_FILE,
        "requests_sha256": result.sha256,
        "identity": asdict(result.identity),
        "notes": result.notes,
        "metrics": asdict(result.metrics),
    }
