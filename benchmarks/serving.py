"""Target: serve-bench's figures agree with guidellm's on the same server, prompts and rate.

Both clients drive one `transformers serve` (the sample causal LM on 127.0.0.1) with Poisson
arrivals at ``--rate``, ``--requests`` requests of at most ``--max-tokens`` tokens each, the
prompts of samples/prompts.jsonl in file order, no warm-up. Rounds are interleaved (toolkit,
guidellm, then guidellm, toolkit, ...) so that a change of load hits both. Per round:

- **toolkit**: :func:`toolkit.serving.sweep`; median TTFT and output tokens/s from its
  requests file;
- **guidellm**: ``guidellm run`` as a subprocess (its ``openai_http`` backend, the same
  route, ``max_tokens``, prompts and rate); its JSON report's median TTFT of the successful
  requests (``time_to_first_token_ms``), and their output tokens over first send to last end
  from its per-request timings (the toolkit's definition; guidellm's own
  ``output_tokens_per_second``, a mean over a per-second series, is printed beside it).

Each round also prints the arrival rate the client really produced (requests over the span
of their sends): the comparison holds only where both are near ``--rate``.

Target: the ratio of the medians over rounds, toolkit / guidellm, within 0.95-1.05 for TTFT
and for output tokens/s. Printed beside it: each client's own CPU per request (this
process's CPU seconds over the toolkit's run; guidellm's process tree's, from its exit).

guidellm needs torch and pins click 8.4, so it never goes into the project's venv: install it
in a throwaway one (`python -m venv /tmp/gl && /tmp/gl/bin/pip install torch==2.13.0
guidellm==0.8.1`) and name its executable with ``--guidellm``. Exit 2 without it.

    python benchmarks/serving.py --guidellm /tmp/gl/bin/guidellm
    python benchmarks/serving.py --guidellm /tmp/gl/bin/guidellm --rate 4 --requests 40 --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from toolkit import serving
from toolkit.serving.records import read_records

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "samples" / "causal_lm"
PROMPTS = ROOT / "samples" / "prompts.jsonl"
BAND = (0.95, 1.05)
EXIT_MET, EXIT_MISSED, EXIT_USAGE = 0, 1, 2


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _rate(sends: list[float]) -> float:
    """The arrival rate a client really produced: requests after the first over the span of
    its sends (a client that bursts shows a rate far above the declared one)."""
    span = sends[-1] - sends[0]
    return (len(sends) - 1) / span if span > 0 else float("inf")


def toolkit_round(args: argparse.Namespace, server: serving.LocalServer, out: Path) -> dict:
    """One toolkit run: its median TTFT (ms), output tokens/s and CPU seconds per request."""
    scenario = serving.Scenario(
        prompts=PROMPTS,
        max_tokens=args.max_tokens,
        base_url=server.base_url,
        model=server.model,
    )
    before = _cpu(resource.RUSAGE_SELF)
    (result,) = serving.sweep(
        scenario, [serving.Arrivals(rate=args.rate, requests=args.requests, seed=args.seed)], out
    )
    cpu = _cpu(resource.RUSAGE_SELF) - before
    m = result.metrics
    sends = sorted(r.sent_s or 0.0 for r in read_records(result.requests))
    return {
        "sent_per_s": _rate(sends),
        "ttft_ms": m.ttft_p50_ms,
        "tokens_per_s": m.output_tokens_per_s,
        "cpu_per_request_s": cpu / len(read_records(result.requests)),
        "completed": m.requests_completed,
    }


def guidellm_round(args: argparse.Namespace, server: serving.LocalServer, out: Path) -> dict:
    """One guidellm run: the same figures from its JSON report."""
    out.mkdir(parents=True)
    prompts = out / "prompts.jsonl"
    with prompts.open("w", encoding="utf-8") as handle:
        for line in PROMPTS.read_text(encoding="utf-8").splitlines():
            handle.write(json.dumps({"prompt": json.loads(line)["text"]}) + "\n")
    report = out / "guidellm.json"
    command = [
        args.guidellm,
        "run",
        "--backend",
        f"kind=openai_http,target={server.base_url},model={server.model},"
        f"request_format=/v1/completions,max_tokens={args.max_tokens}",
        "--profile",
        f"kind=poisson,rate={args.rate}",
        "--constraint",
        f"kind=max_requests,count={args.requests}",
        "--data",
        f"kind=json_file,path={prompts}",
        "--output",
        f"kind=json,path={report}",
        "--disable-console",
    ]
    before = _cpu(resource.RUSAGE_CHILDREN)
    subprocess.run(
        command,
        check=True,
        cwd=out,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=(out / "guidellm.log").open("w"),
    )
    cpu = _cpu(resource.RUSAGE_CHILDREN) - before
    benchmark = json.loads(report.read_text(encoding="utf-8"))["benchmarks"][0]
    metrics, done = benchmark["metrics"], benchmark["requests"]["successful"]
    window = max(r["request_end_time"] for r in done) - min(r["request_start_time"] for r in done)
    return {
        "sent_per_s": _rate(sorted(r["request_start_time"] for r in done)),
        "ttft_ms": metrics["time_to_first_token_ms"]["successful"]["median"],
        # The toolkit's definition on guidellm's own per-request timings: output tokens of the
        # completed requests over first send to last end. guidellm's reported figure (the
        # mean of its per-second series) is printed beside it.
        "tokens_per_s": sum(r["output_tokens"] for r in done) / window,
        "reported_tokens_per_s": metrics["output_tokens_per_second"]["successful"]["mean"],
        "cpu_per_request_s": cpu / args.requests,
        "completed": len(done),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--guidellm",
        default=shutil.which("guidellm"),
        help="guidellm's executable, from its own venv",
    )
    parser.add_argument("--rate", type=float, default=2.0, help="requests per second")
    parser.add_argument("--requests", type=int, default=20, help="requests per run")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both clients")
    parser.add_argument("--seed", type=int, default=0, help="the toolkit's Poisson seed")
    args = parser.parse_args(argv)
    if not args.guidellm or not Path(args.guidellm).is_file():
        print("guidellm not found: install it in a venv of its own and pass --guidellm PATH")
        return EXIT_USAGE
    os.environ["HF_HUB_OFFLINE"] = "1"
    runs: dict[str, list[dict]] = {"toolkit": [], "guidellm": []}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        with serving.LocalServer(MODEL, work / "serve.log") as server:
            for number in range(args.rounds):
                order = ["toolkit", "guidellm"] if number % 2 == 0 else ["guidellm", "toolkit"]
                for who in order:
                    run = toolkit_round if who == "toolkit" else guidellm_round
                    found = run(args, server, work / f"{who}-{number}")
                    runs[who].append(found)
                    print(
                        f"round {number + 1} {who}: "
                        + ", ".join(f"{key} {value:.4g}" for key, value in found.items())
                    )
    return _verdicts(runs)


def _verdicts(runs: dict[str, list[dict]]) -> int:
    met = []
    for figure in ("ttft_ms", "tokens_per_s"):
        ours = statistics.median(r[figure] for r in runs["toolkit"])
        theirs = statistics.median(r[figure] for r in runs["guidellm"])
        ratio = ours / theirs
        ok = BAND[0] <= ratio <= BAND[1]
        met.append(ok)
        print(
            f"{figure}: toolkit {ours:.4g}, guidellm {theirs:.4g}; ratio {ratio:.3f} "
            f"(target {BAND[0]}-{BAND[1]}): {'met' if ok else 'missed'}"
        )
    for who, found in runs.items():
        cpu = statistics.median(r["cpu_per_request_s"] for r in found)
        print(f"client CPU per request, {who}: {cpu * 1000:.1f} ms (median over rounds)")
    return EXIT_MET if all(met) else EXIT_MISSED


if __name__ == "__main__":
    sys.exit(main())
