"""Target: serve-bench's figures agree with guidellm's on the same server, prompts and load.

Both clients drive one `transformers serve` (the sample causal LM on 127.0.0.1, greedy by its
generation config) with Poisson arrivals at ``--rate``, ``--requests`` requests of at most
``--max-tokens`` tokens each, streamed, the prompts of samples/prompts.jsonl in file order.
A few toolkit requests warm the server first, not measured. Rounds are interleaved
(toolkit, guidellm, then guidellm, toolkit, ...) so that a change of load hits both.

The same load: in round k both clients draw their gaps from
``random.Random(--seed + k - 1).expovariate(rate)``. The toolkit sends its first request at
once, guidellm after the first draw; so the toolkit sends one request more and is compared
from its second on (its own figures, by its own code, on its requests file less the first),
and guidellm's prompts start one later: both compare the same prompts planned at the same
times after their start. guidellm runs with one worker process:
each of its workers draws from a generator of its own seeded alike, so its default ten
workers repeat every gap ten times (at rate 2, twenty requests went out as ten gaps of
0.51 s then ten of 0.013 s: 4 requests/s). Its Poisson start also races (the start event
is set before the first arrival time is), and a run that lost the race sends everything at
once: every guidellm run's planned send times are checked against the draws and a run
that does not match is discarded and repeated, saying so.

The server runs on the first half of the cores (all of them its own); the clients (this
process with the toolkit's, and guidellm's processes) may use every core but at a lower
priority, so that a client's own work does not slow the server it measures: guidellm takes
about ten times the toolkit's CPU per request, and on 2 cores it competed with the server.
(Pinned to the other half instead, guidellm's single worker lost its start race every time.)

From each client's per-request timings:

- **TTFT**: first text-bearing chunk minus the first header write (guidellm's start: its
  httpx trace hook; the toolkit records the same write as ``headers_s``), per request. On
  this server one request's TTFT moves by tens of percent from one request to the next, and a
  run's median by up to a fifth from the run a minute before, so the verdict pools every
  round: the ratio of the two medians over all requests both clients completed, with a 95 %
  bootstrap interval over the rounds (whole rounds resampled; at least 5 rounds). Met only
  when the interval lies inside the band, missed when it lies outside, otherwise not
  resolved (more rounds narrow it). Where a raw packet socket can be opened (root), the
  loopback wire referees (wire.py): the kernel's timestamps of each request's first byte and
  of its first text-bearing event give the server's own TTFT of that request, each client's
  TTFT is divided by it before the medians are taken, and the server's drift between the
  clients' runs leaves the ratio while what each client adds stays in it (printed per
  client, in ms; the raw ratio is printed beside it, not judged). The per-round ratios and
  the median paired difference are printed too, and the toolkit's own figure from the send
  (what its Attempts rows hold, and what ``vllm bench serve`` counts: building the request
  and finding a connection included);
- **output tokens/s**: output tokens of the completed requests (the server's usage count)
  over first send to last end (guidellm's own ``output_tokens_per_second``, a mean over a
  per-second series, is printed beside it);
- **achieved rate**: requests after the first over the span of their sends (the planned
  rate, the same over the planned send times, is printed beside it).

Target: toolkit / guidellm within 0.95-1.05 for TTFT (the pooled medians, as above) and for
output tokens/s (the median over rounds). Printed beside it: the achieved rates side by side, each client's
own CPU per request (this process's CPU seconds over the toolkit's run; guidellm's process
tree's, from its exit) and the share of the machine other processes took.

guidellm needs torch and pins click 8.4, so it never goes into the project's venv: install it
in a throwaway one (`python -m venv /tmp/gl && /tmp/gl/bin/pip install torch==2.13.0
guidellm==0.8.1`) and name its executable with ``--guidellm``. Exit 2 without it.

    python benchmarks/serving.py --guidellm /tmp/gl/bin/guidellm
    python benchmarks/serving.py --guidellm /tmp/gl/bin/guidellm --rate 1 --requests 60 --rounds 4
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import wire

from toolkit import serving
from toolkit.serving.metrics import compute
from toolkit.serving.records import MEASURED, read_records
from toolkit.serving.schedule import poisson_offsets

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "samples" / "causal_lm"
PROMPTS = ROOT / "samples" / "prompts.jsonl"
BAND = (0.95, 1.05)
EXIT_MET, EXIT_MISSED, EXIT_USAGE = 0, 1, 2
WARMUP_REQUESTS = 4
#: One worker process: one generator, so guidellm's gaps are the declared Poisson draws.
GUIDELLM_ENV = {"GUIDELLM__MAX_WORKER_PROCESSES": "1", "HF_HUB_OFFLINE": "1"}
#: guidellm runs per round at most, a run whose send plan lost its start race discarded.
GUIDELLM_TRIES = 3
#: How far a planned send time may sit from the declared draw (floating point, not load).
PLAN_TOLERANCE_S = 0.001
PROMPTS_FILE, REPORT_FILE = "prompts.jsonl", "guidellm.json"
SECOND_SEND_FILE = "requests-from-second-send.jsonl"
#: The clients' priority below the server's (they share its cores when they need more).
CLIENT_NICENESS = 10
#: Resamples of the rounds for the TTFT ratio's interval, and the fewest rounds it is drawn
#: from (one round resampled is always itself: a zero-width interval that proves nothing).
BOOTSTRAP_RESAMPLES, MIN_ROUNDS = 2000, 5


#: One run's figures by name.
Figures = dict[str, float]


@dataclass(frozen=True)
class Round:
    """One client's run: its figures, and each compared request's TTFT (ms from the first
    header write; None: failed or no token) in the order of the plan both clients share,
    with the wire's timing of the same requests where a capture ran."""

    figures: Figures
    ttfts: list[float | None]
    #: The wire's TTFT of each of those requests, in the same order (None: not seen), or
    #: None when no capture ran (see wire.py).
    wire: list[float | None] | None = None


class GuidellmPlanError(RuntimeError):
    """guidellm planned its sends elsewhere than the declared Poisson draws."""


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _rate(sends: list[float]) -> float:
    """The arrival rate a client really produced: requests after the first over the span of
    its sends (a client that bursts shows a rate far above the declared one)."""
    span = sends[-1] - sends[0]
    return (len(sends) - 1) / span if span > 0 else float("inf")


def planned_rate(args: argparse.Namespace, seed: int) -> float:
    """The arrival rate both clients' compared requests are planned at: draws 2 to N."""
    arrivals = serving.Arrivals(rate=args.rate, requests=args.requests + 1, seed=seed)
    return _rate(poisson_offsets(arrivals)[1:])


def guidellm_plan_error(benchmark: dict[str, Any], rate: float, seed: int) -> str | None:
    """Why guidellm's planned send times (``targeted_start`` of every request, from its
    scheduler's start) are not the declared draws ``Random(seed).expovariate(rate)``
    summed, its first request one gap after the start; None when they are. Names the first
    request off the plan."""
    requests = [  # a request cancelled before its turn has no planned time
        r
        for kind in ("successful", "errored", "incomplete")
        for r in benchmark["requests"][kind]
        if r["info"]["timings"].get("targeted_start") is not None
    ]
    if not requests:
        return "it recorded no request"
    start = requests[0]["info"]["scheduler_start_time"]
    planned = sorted(r["info"]["timings"]["targeted_start"] - start for r in requests)
    arrivals = serving.Arrivals(rate=rate, requests=len(planned) + 1, seed=seed)
    declared = poisson_offsets(arrivals)[1:]
    off = [
        i
        for i, (at, due) in enumerate(zip(planned, declared, strict=True))
        if abs(at - due) > PLAN_TOLERANCE_S
    ]
    if not off:
        return None
    first = off[0]
    return (
        f"request {first + 1} of {len(planned)} was planned {planned[first]:.3f} s after its "
        f"start, the declared draws put it at {declared[first]:.3f} s ({len(off)} off the plan)"
    )


def _scenario(args: argparse.Namespace, server: serving.LocalServer) -> serving.Scenario:
    return serving.Scenario(
        prompts=PROMPTS, max_tokens=args.max_tokens, base_url=server.base_url, model=server.model
    )


def from_second_send(requests: Path) -> Path:
    """The toolkit's requests file without its first measured request (sent at once, before
    the first draw), beside it: the requests guidellm's plan has too."""
    kept = []
    for line in requests.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if not (record["phase"] == MEASURED and record["index"] == 0):
            kept.append(line)
    path = requests.with_name(SECOND_SEND_FILE)
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    return path


def toolkit_round(
    args: argparse.Namespace, server: serving.LocalServer, out: Path, seed: int
) -> Round:
    """One toolkit run of one request more than guidellm's: its figures by its own
    :func:`~toolkit.serving.metrics.compute` on its requests from the second on, each sent
    when guidellm's plan sends the same prompt (median TTFT in ms, output tokens/s, CPU
    seconds per request), and each of those requests' TTFT in plan order."""
    scenario = _scenario(args, server)
    before = _cpu(resource.RUSAGE_SELF)
    arrivals = serving.Arrivals(rate=args.rate, requests=args.requests + 1, seed=seed)
    (result,) = serving.sweep(scenario, [arrivals], out)
    cpu = _cpu(resource.RUSAGE_SELF) - before
    kept = from_second_send(result.requests)
    m = compute(kept)
    if m.ttft_p50_ms is None or m.output_tokens_per_s is None:
        raise SystemExit(f"the toolkit's run gave no figures: {m.reasons}")
    records = sorted((r for r in read_records(kept) if r.phase == MEASURED), key=lambda r: r.index)
    ttfts = [ttft_from_headers_ms(r) for r in records]
    if not any(t is not None for t in ttfts):
        raise SystemExit("the toolkit's requests file holds no header write time")
    figures = {
        "planned_per_s": planned_rate(args, seed),
        "sent_per_s": _rate(sorted(r.sent_s or 0.0 for r in records)),
        "ttft_ms": _median_of(ttfts),
        "ttft_from_send_ms": m.ttft_p50_ms,
        "tokens_per_s": m.output_tokens_per_s,
        "output_tokens": m.output_tokens,
        "cpu_per_request_s": cpu / (args.requests + 1),
        "completed": m.requests_completed,
    }
    return Round(figures, ttfts)


def ttft_from_headers_ms(record: serving.Record) -> float | None:
    """A completed request's time to first token counted from the first header write as
    guidellm counts it (its ``request_start`` is httpx's trace of that write), not from the
    send as the toolkit's own figures are: the same start on both sides. None when it has
    none (failed, or no text came)."""
    if not record.ok or record.first_token_s is None or record.headers_s is None:
        return None
    return (record.first_token_s - record.headers_s) * 1000


def _median_of(ttfts: list[float | None]) -> float:
    return float(statistics.median(t for t in ttfts if t is not None))


def _guidellm_command(
    args: argparse.Namespace, server: serving.LocalServer, seed: int, folder: Path
) -> list[str]:
    return [
        args.guidellm,
        "run",
        "--backend",
        f"kind=openai_http,target={server.base_url},model={server.model},"
        f"request_format=/v1/completions,max_tokens={args.max_tokens}",
        "--profile",
        f"kind=poisson,rate={args.rate}",
        "--seed",
        f"kind=static,value={seed}",
        "--constraint",
        f"kind=max_requests,count={args.requests}",
        "--data",
        f"kind=json_file,path={folder / PROMPTS_FILE}",
        "--output",
        f"kind=json,path={folder / REPORT_FILE}",
        "--disable-console",
    ]


def _guidellm_run(
    args: argparse.Namespace, server: serving.LocalServer, out: Path, seed: int
) -> dict[str, Any]:
    """One guidellm run in ``out``: its report's first benchmark and its CPU seconds; raises
    GuidellmPlanError when its send plan is not the declared one."""
    out.mkdir(parents=True)
    with (out / PROMPTS_FILE).open("w", encoding="utf-8") as handle:
        lines = PROMPTS.read_text(encoding="utf-8").splitlines()
        for line in lines[1:] + lines[:1]:  # its first send is the toolkit's second
            handle.write(json.dumps({"prompt": json.loads(line)["text"]}) + "\n")
    before = _cpu(resource.RUSAGE_CHILDREN)
    with (out / "guidellm.log").open("w") as log:
        subprocess.run(
            _guidellm_command(args, server, seed, out),
            check=True,
            cwd=out,
            env={**os.environ, **GUIDELLM_ENV},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    cpu = _cpu(resource.RUSAGE_CHILDREN) - before
    benchmark = json.loads((out / REPORT_FILE).read_text(encoding="utf-8"))["benchmarks"][0]
    why = guidellm_plan_error(benchmark, args.rate, seed)
    if why:
        raise GuidellmPlanError(why)
    return {"benchmark": benchmark, "cpu_s": cpu}


def guidellm_round(
    args: argparse.Namespace, server: serving.LocalServer, out: Path, seed: int
) -> Round:
    """One guidellm run whose send plan is the declared one (a run that lost guidellm's start
    race is discarded and repeated): the same figures from its JSON report, and each planned
    request's TTFT in plan order (its ``first_token_iteration - request_start``, as its own
    ``time_to_first_token_ms``)."""
    for attempt in range(1, GUIDELLM_TRIES + 1):
        try:
            run = _guidellm_run(args, server, out / f"try-{attempt}", seed)
            break
        except GuidellmPlanError as error:
            print(
                f"  guidellm try {attempt} discarded, its sends were not the declared plan: {error}"
            )
    else:
        raise GuidellmPlanError(f"{GUIDELLM_TRIES} guidellm runs in a row missed the plan")
    benchmark = run["benchmark"]
    metrics, done = benchmark["metrics"], benchmark["requests"]["successful"]
    window = max(r["request_end_time"] for r in done) - min(r["request_start_time"] for r in done)
    tokens = sum(r["output_tokens"] for r in done)
    figures = {
        "planned_per_s": planned_rate(args, seed),
        "sent_per_s": _rate(sorted(r["request_start_time"] for r in done)),
        "ttft_ms": metrics["time_to_first_token_ms"]["successful"]["median"],
        # The toolkit's definition on guidellm's own per-request timings.
        "tokens_per_s": tokens / window,
        "reported_tokens_per_s": metrics["output_tokens_per_second"]["successful"]["mean"],
        "output_tokens": tokens,
        "cpu_per_request_s": run["cpu_s"] / args.requests,
        "completed": len(done),
    }
    return Round(figures, guidellm_ttfts(benchmark))


def guidellm_ttfts(benchmark: dict[str, Any]) -> list[float | None]:
    """Each planned request's TTFT in ms, in the order of its planned send (None: it failed or
    brought no token), from guidellm's per-request timings."""
    requests = sorted(
        (
            (r["info"]["timings"]["targeted_start"], kind == "successful", r["info"]["timings"])
            for kind in ("successful", "errored", "incomplete")
            for r in benchmark["requests"][kind]
            if r["info"]["timings"].get("targeted_start") is not None
        ),
        key=lambda found: found[0],
    )
    return [
        (t["first_token_iteration"] - t["request_start"]) * 1000
        if ok and t.get("first_token_iteration") and t.get("request_start")
        else None
        for _, ok, t in requests
    ]


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--guidellm",
        default=shutil.which("guidellm"),
        help="guidellm's executable, from its own venv",
    )
    parser.add_argument("--rate", type=float, default=3.0, help="requests per second")
    parser.add_argument(
        "--requests",
        type=int,
        default=199,
        help="requests per run (at most one less than the prompts file's 200 lines)",
    )
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=6, help="rounds of both clients")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="both clients' Poisson seed in round 1 (one more each round)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="a new folder to keep every run's files in (requests, reports, the server's log)",
    )
    args = parser.parse_args(argv)
    prompts = len(PROMPTS.read_text(encoding="utf-8").splitlines())
    if not 1 <= args.requests < prompts:
        # guidellm ends at the end of its prompts file, the toolkit would start it again
        parser.error(f"--requests must be 1 to {prompts - 1}: the toolkit sends one more")
    return args


def _warm(args: argparse.Namespace, server: serving.LocalServer, out: Path) -> None:
    serving.sweep(
        _scenario(args, server), [serving.Arrivals(rate=args.rate, requests=WARMUP_REQUESTS)], out
    )
    print(f"warm-up: {WARMUP_REQUESTS} toolkit requests, not measured")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if not args.guidellm or not Path(args.guidellm).is_file():
        print("guidellm not found: install it in a venv of its own and pass --guidellm PATH")
        return EXIT_USAGE
    os.environ["HF_HUB_OFFLINE"] = "1"
    runs: dict[str, list[Round]] = {"toolkit": [], "guidellm": []}
    no_referee, prompts = wire.unavailable(), compared_prompts(args.requests)
    with tempfile.TemporaryDirectory() as folder, common.OthersOfTree() as others:
        work = args.keep or Path(folder)
        work.mkdir(parents=True, exist_ok=True)
        cores = os.sched_getaffinity(0)
        os.sched_setaffinity(0, server_cores(cores))  # the server's threads inherit it
        with serving.LocalServer(MODEL, work / "serve.log") as server:
            os.sched_setaffinity(0, cores)
            os.nice(CLIENT_NICENESS)  # this process, its client and guidellm's: after the server
            print(
                f"server on CPU {sorted(server_cores(cores))}; clients on CPU {sorted(cores)} at "
                f"niceness {CLIENT_NICENESS}"
            )
            print(
                "TTFT's referee: the loopback wire (wire.py)"
                if no_referee is None
                else f"TTFT's referee: none, the raw medians are judged ({no_referee})"
            )
            _warm(args, server, work / "warm-up")
            for number in range(args.rounds):
                order = ["toolkit", "guidellm"] if number % 2 == 0 else ["guidellm", "toolkit"]
                for who in order:
                    run = toolkit_round if who == "toolkit" else guidellm_round
                    out = work / f"{who}-{number}"
                    capture = None
                    if no_referee is None:
                        capture = wire.Capture(server.port, out.with_suffix(".wire"))
                    try:
                        with capture or contextlib.nullcontext():
                            found = run(args, server, out, args.seed + number)
                    except GuidellmPlanError as error:
                        print(f"missed: guidellm never sent the declared load ({error})")
                        return EXIT_MISSED
                    if capture is not None:
                        found = refereed(found, capture.exchanges(), prompts)
                    runs[who].append(found)
                    print(
                        f"round {number + 1} {who}: "
                        + ", ".join(f"{key} {value:.4g}" for key, value in found.figures.items())
                    )
            others.stop()  # before the server stops: its seconds leave the process tree
    print(f"load: {others.text()} during the run ({common.MACHINE_CORES} cores)")
    return _verdicts(args, runs)


def server_cores(cores: set[int]) -> set[int]:
    """The server's cores: the first half (all of one). The clients keep every core at a
    lower priority (see the module's docstring)."""
    ordered = sorted(cores)
    return set(ordered[: max(1, len(ordered) // 2)])


def _median(found: list[Round], figure: str) -> float:
    return float(statistics.median(r.figures[figure] for r in found))


def ttft_pairs(
    runs: dict[str, list[Round]], over_wire: bool = False
) -> list[list[tuple[float, float]]]:
    """Per round, (toolkit, guidellm) TTFT of each request both completed: the same prompt
    planned at the same time after each client's start. ``over_wire``: each TTFT divided by
    the wire's for the same request (pairs only where both clients' requests were seen)."""
    rounds = []
    for ours, theirs in zip(runs["toolkit"], runs["guidellm"], strict=True):
        if len(ours.ttfts) != len(theirs.ttfts):
            raise SystemExit(
                f"the clients planned {len(ours.ttfts)} and {len(theirs.ttfts)} requests in a "
                "round: not the same load"
            )
        mine, peer = ours.ttfts, theirs.ttfts
        if over_wire:
            mine, peer = over_the_wire(ours), over_the_wire(theirs)
        rounds.append(
            [(a, b) for a, b in zip(mine, peer, strict=True) if a is not None and b is not None]
        )
    return rounds


def over_the_wire(found: Round) -> list[float | None]:
    """Each request's TTFT over the wire's for the same request (None where either is
    missing): 1 plus the client's own share."""
    if found.wire is None:
        raise ValueError("no capture ran in this round")
    return [
        ttft / seen if ttft is not None and seen else None
        for ttft, seen in zip(found.ttfts, found.wire, strict=True)
    ]


def refereed(found: Round, exchanges: list[wire.Exchange], prompts: list[str]) -> Round:
    """``found`` with the wire's TTFT of each compared request, found by its prompt (each
    is sent once in a run; where a guidellm run was repeated after a lost start race, the
    last try's, the one kept)."""
    seen = {e.prompt: e.ttft_ms for e in exchanges if e.prompt is not None}  # in send order
    return dataclasses.replace(found, wire=[seen.get(prompt) for prompt in prompts])


def compared_prompts(requests: int) -> list[str]:
    """The prompts of the compared requests, in plan order: the file's second on."""
    lines = PROMPTS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[1 : requests + 1]]


def _pooled_ratio(rounds: list[list[tuple[float, float]]]) -> float:
    pairs = [pair for found in rounds for pair in found]
    return statistics.median(a for a, _ in pairs) / statistics.median(b for _, b in pairs)


def median_ratio_interval(
    rounds: list[list[tuple[float, float]]], resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float, float]:
    """The ratio of the two medians over every round's pairs, and its 95 % bootstrap
    interval. Whole rounds are resampled: within a round the two clients run a minute apart
    on a server whose speed drifts between runs, so a round's requests are not independent
    of one another; resampling single requests would hide that drift."""
    draw = random.Random(0)
    found = sorted(_pooled_ratio(draw.choices(rounds, k=len(rounds))) for _ in range(resamples))
    low, high = found[int(0.025 * resamples)], found[int(0.975 * resamples) - 1]
    return _pooled_ratio(rounds), low, high


def ttft_verdict(runs: dict[str, list[Round]]) -> bool:
    """TTFT judged on every compared request at once: the ratio of the pooled medians, met
    only when its 95 % interval lies inside the band (one request's TTFT on this server
    moves by tens of percent, and a run's median by up to a fifth from the run before, so a
    ratio inside the band by chance is not a verdict). Where the wire saw every round, each
    client's TTFT is first divided by the wire's for the same request: the server's drift
    between the two runs of a round leaves the ratio, what each client adds stays in it;
    the ratio of the raw medians is then printed, not judged."""
    raw = ttft_pairs(runs)
    pairs = [pair for found in raw for pair in found]
    for who, side in (("toolkit", 0), ("guidellm", 1)):
        q1, q2, q3 = statistics.quantiles((pair[side] for pair in pairs), n=4)
        print(
            f"TTFT per request, {who}: median {q2:.2f} ms, quartiles {q1:.2f}-{q3:.2f} ms "
            f"({len(pairs)} requests)"
        )
    by_round = ", ".join(f"{_pooled_ratio([found]):.3f}" for found in raw)
    difference = statistics.median(a - b for a, b in pairs)
    print(
        f"TTFT ratio by round: {by_round}; toolkit - guidellm per request: median "
        f"{difference:+.2f} ms"
    )
    judged, what = raw, "ttft_ms: ratio of the medians"
    if all(found.wire is not None for rounds in runs.values() for found in rounds):
        ratio, low, high = median_ratio_interval(raw)
        print(
            f"ttft_ms: ratio of the medians {ratio:.3f}, 95 % interval {low:.3f}-{high:.3f} "
            "(not judged: it holds the server's drift between the two runs of each round)"
        )
        for who, rounds in runs.items():
            _print_own_share(who, rounds)
        ours, theirs = (_server_ttft(runs[who]) for who in ("toolkit", "guidellm"))
        print(
            f"the server's TTFT on the wire (median): {ours:.2f} ms in the toolkit's runs, "
            f"{theirs:.2f} ms in guidellm's ({ours / theirs:.3f}: the raw ratio holds it)"
        )
        judged, what = (
            ttft_pairs(runs, over_wire=True),
            "TTFT over the wire's: ratio of the medians",
        )
    ratio, low, high = median_ratio_interval(judged)
    count = sum(len(found) for found in judged)
    inside, outside = BAND[0] <= low and high <= BAND[1], high < BAND[0] or low > BAND[1]
    if len(judged) < MIN_ROUNDS:  # too few rounds to resample: the interval says nothing
        inside = outside = False
    outcome = (
        "met"
        if inside
        else "missed"
        if outside
        else f"not resolved: {len(judged)} round(s), an interval over rounds needs {MIN_ROUNDS}"
        if len(judged) < MIN_ROUNDS
        else "not resolved: the interval crosses the band, more rounds (--rounds) narrow it"
    )
    print(
        f"{what} over {count} paired requests in {len(judged)} rounds {ratio:.3f}, 95 % "
        f"interval {low:.3f}-{high:.3f} (target {BAND[0]}-{BAND[1]}): {outcome}"
    )
    return inside


def _server_ttft(rounds: list[Round]) -> float:
    return statistics.median(t for found in rounds for t in found.wire or [] if t is not None)


def _print_own_share(who: str, rounds: list[Round]) -> None:
    """What a client adds to the wire's TTFT: its ratio to the wire and its milliseconds."""
    over, own = [], []
    for found in rounds:
        assert found.wire is not None
        for ttft, seen in zip(found.ttfts, found.wire, strict=True):
            if ttft is not None and seen:
                over.append(ttft / seen)
                own.append(ttft - seen)
    unseen = sum(seen is None for found in rounds for seen in found.wire or [])
    q1, q2, q3 = statistics.quantiles(own, n=4)
    print(
        f"TTFT over the wire's, {who}: median {statistics.median(over):.4f}; its own time per "
        f"request: median {q2:+.2f} ms, quartiles {q1:+.2f} to {q3:+.2f} ms ({len(own)} "
        f"requests; {unseen} with no TTFT on the wire: not seen, or no text)"
    )


def _verdicts(args: argparse.Namespace, runs: dict[str, list[Round]]) -> int:
    for kind in ("planned", "sent"):
        ours, theirs = (_median(runs[who], f"{kind}_per_s") for who in ("toolkit", "guidellm"))
        print(
            f"request rate {'achieved' if kind == 'sent' else kind} (median over rounds): "
            f"toolkit {ours:.3f}/s, guidellm {theirs:.3f}/s; declared {args.rate:g}/s"
        )
    met = [ttft_verdict(runs)]
    ours, theirs = (
        _median(runs["toolkit"], "tokens_per_s"),
        _median(runs["guidellm"], "tokens_per_s"),
    )
    ratio = ours / theirs
    met.append(BAND[0] <= ratio <= BAND[1])
    print(
        f"tokens_per_s (median over rounds): toolkit {ours:.4g}, guidellm {theirs:.4g}; ratio "
        f"{ratio:.3f} (target {BAND[0]}-{BAND[1]}): {'met' if met[-1] else 'missed'}"
    )
    from_send = _median(runs["toolkit"], "ttft_from_send_ms")
    print(
        f"toolkit TTFT from the send (its Attempts' definition): {from_send:.4g} ms, "
        f"{from_send / _median(runs['guidellm'], 'ttft_ms'):.3f} x guidellm's (not judged: "
        "another start)"
    )
    for who, found in runs.items():
        print(
            f"client CPU per request, {who}: {_median(found, 'cpu_per_request_s') * 1000:.1f} ms"
            " (median over rounds)"
        )
    return EXIT_MET if all(met) else EXIT_MISSED


if __name__ == "__main__":
    sys.exit(main())
