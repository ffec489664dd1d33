"""``iteralab serve-bench``: measure an OpenAI-compatible endpoint under a declared load.

Parses the declaration, calls :func:`toolkit.serving.sweep` once, prints each run's figures
and its requests file with the file's SHA-256. These runs stay in OUT; a campaign workbook
measures the same way under Protocol task serving.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolkit.errors import ToolkitError
from toolkit.evidence.scenario import DEFAULT_API, ROUTES


def _figure(value: float | None, unit: str, why: str | None) -> str:
    return f"{value:.1f}{unit}" if value is not None else f"none ({why})"


def _render(result: Any) -> list[str]:
    """The lines printed for one run."""
    m = result.metrics
    r = m.reasons
    lines = [
        f"{result.label}: sent {m.requests_sent}, completed {m.requests_completed}, "
        f"failed {m.requests_failed} (warm-up {m.warmup_requests}, not measured)",
        f"  TTFT p50 / p90 / p99: {_figure(m.ttft_p50_ms, ' ms', r.get('ttft_p50_ms'))} / "
        f"{_figure(m.ttft_p90_ms, ' ms', r.get('ttft_p90_ms'))} / "
        f"{_figure(m.ttft_p99_ms, ' ms', r.get('ttft_p99_ms'))}",
        f"  time per output token p50 / p99: {_figure(m.tpot_p50_ms, ' ms', r.get('tpot_p50_ms'))}"
        f" / {_figure(m.tpot_p99_ms, ' ms', r.get('tpot_p99_ms'))}",
        f"  inter-token latency p99: {_figure(m.itl_p99_ms, ' ms', r.get('itl_p99_ms'))}",
        f"  output tokens/s: {_figure(m.output_tokens_per_s, '', r.get('output_tokens_per_s'))}"
        f" ({m.output_tokens} tokens, counted from {m.output_tokens_from or 'nothing'})",
        f"  goodput: {_figure(m.goodput_rps, ' requests/s', r.get('goodput_rps'))}"
        f" ({m.good_requests} requests meeting every target)",
        f"  client lag p99: {_figure(m.client_lag_p99_ms, ' ms', r.get('client_lag_p99_ms'))}",
    ]
    for name, target in m.targets.items():
        value = target["value_ms"]
        shown = "none" if value is None else f"{value:.1f} ms"
        verdict = "met" if target["met"] else "NOT met"
        lines.append(f"  target {name} <= {target['limit_ms']:g}: {shown}, {verdict}")
    if m.client_lagged:
        lines.append(f"  CLIENT LAGGED: {r['client_lagged']}")
    lines += [
        f"  failed: {count} x {kind} (first: {m.failure_examples[kind]})"
        for kind, count in m.failures.items()
    ]
    lines += [f"  note: {note}" for note in result.notes]
    lines.append(f"  requests: {result.requests}  sha256 {result.sha256}")
    return lines


@click.command("serve-bench")
@click.option("--endpoint", metavar="URL", help="Base URL of the endpoint, e.g. http://HOST:8000.")
@click.option("--model", metavar="NAME", help="The served model's name, as /v1/models lists it.")
@click.option(
    "--start-local",
    "local_model",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="MODEL_DIR",
    help="Start `transformers serve` with this model folder on 127.0.0.1 (stopped at the "
    "end, its log kept in OUT); replaces --endpoint.",
)
@click.option(
    "--prompts",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="JSONL or CSV of prompts (id, text), sent in file order, round and round "
    "(default: the shipped samples/prompts.jsonl).",
)
@click.option(
    "--api",
    type=click.Choice(list(ROUTES)),
    default=DEFAULT_API,
    show_default=True,
    help="completions: /v1/completions; chat: /v1/chat/completions (needs a model with a chat "
    "template). A campaign's Protocol api field takes the same words.",
)
@click.option(
    "--rate",
    type=float,
    multiple=True,
    help="Requests per second, Poisson arrivals; repeat it for a sweep (one run per rate).",
)
@click.option(
    "--concurrency",
    type=int,
    multiple=True,
    help="Requests in flight at once instead of a rate; repeatable.",
)
@click.option("--requests", "count", type=int, help="Measured requests per run.")
@click.option("--duration", type=float, help="Seconds of arrivals per run, instead of a count.")
@click.option(
    "--warmup",
    type=int,
    default=2,
    show_default=True,
    help="Requests sent first, one at a time, recorded but not measured.",
)
@click.option(
    "--max-tokens",
    type=int,
    default=32,
    show_default=True,
    help="Most tokens generated per request (greedy).",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="METRIC_pNN_ms=LIMIT",
    help="A latency target, e.g. ttft_p99_ms=500 or tpot_p99_ms=50 (metrics: ttft, "
    "tpot, itl, e2e); repeatable. Goodput counts the requests meeting all of them.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the Poisson draws.")
@click.option(
    "--timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds a request may wait for the next byte before it fails.",
)
@click.option(
    "--max-client-lag-ms",
    type=float,
    default=10.0,
    show_default=True,
    help="Client lag p99 above which a run is named lagged.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for each run's requests.jsonl and run.json (one subfolder per run).",
)
def serve_bench(**options: Any) -> None:
    """Measure an OpenAI-compatible endpoint (vLLM, SGLang, TGI, transformers serve) at
    declared request rates.

    An open-loop client sends streamed requests on their own schedule whatever the server
    does, records every request in OUT/RATE/requests.jsonl and prints TTFT, time per output
    token, inter-token latency, output tokens/s, goodput against the targets and its own lag,
    all computed from that file. A campaign workbook records the same measurement as
    Protocol task serving (`iteralab run`), with its Summary and Settlement.
    """
    try:
        from toolkit import serving
    except ImportError as exc:  # httpx comes with the serving extra, not the base install
        raise ToolkitError(
            f"serve-bench needs the serving extra: {exc}",
            hint="pip install 'iteragpu-lab[serving]' (httpx, and what `transformers serve` "
            "needs for --start-local)",
        ) from exc
    from toolkit.plumbing.shipped import SAMPLES, shipped

    scenario = serving.Scenario(
        prompts=options["prompts"] or shipped(f"{SAMPLES}/prompts.jsonl"),
        max_tokens=options["max_tokens"],
        base_url=options["endpoint"],
        model=options["model"],
        api=options["api"],
        targets=tuple(serving.parse_target(t) for t in options["targets"]),
        timeout_s=options["timeout"],
        lag_limit_ms=options["max_client_lag_ms"],
        local_model=options["local_model"],
    )
    common = {
        "requests": options["count"],
        "duration_s": options["duration"],
        "warmup": options["warmup"],
        "seed": options["seed"],
    }
    arrivals = [serving.Arrivals(rate=rate, **common) for rate in options["rate"]]
    arrivals += [serving.Arrivals(concurrency=n, **common) for n in options["concurrency"]]
    if not arrivals:
        raise click.UsageError("declare at least one --rate or --concurrency")
    results = serving.sweep(scenario, arrivals, options["out"])
    for result in results:
        click.echo("\n".join(_render(result)))
    empty = [r.label for r in results if r.metrics.requests_completed == 0]
    if empty:
        raise ToolkitError(
            f"no request of {', '.join(empty)} completed: nothing was measured",
            hint="read the failures above (endpoint, model name, server log), then run again",
        )


COMMANDS = [serve_bench]
