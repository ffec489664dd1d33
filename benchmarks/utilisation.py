"""Issue 20: how close the length-sorted variant comes to this machine's matrix-multiply peak.

In one process, for fp32 and bf16 in turn, interleaved round by round: the peak probe the
runner records in the Manifest (``runner.instruments.peak.probe``, fresh each round, no cache),
then one pass of the runner's own batching code (``tasks.classification.run_batches``,
the code of the measured window) over the first N corpus items with the sample's
``b8-fp32-sorted`` settings (batch 8, dynamic padding, length-sorted, sdpa, max length 256,
not compiled; ``--batch``, ``--attention``, ``--compile`` change those) in that precision.
Real-token FLOPs come from ``runner.instruments.flops`` and the window's own tallies. The figure is

    achieved real-token FLOP rate (median over the rounds) / measured peak (best probe)

on the CPU clock by default (CPU seconds of this single-threaded process inside the pass;
the probe's best call is a short wall-clock time, taken when the core was free). Targets:
fp32 >= 1/1.3 (0.769), bf16 >= 0.6. The script also prints where the pass's time goes
(torch profiler: matrix products, attention kernels, compiled code, other operators, outside
the model) and, for bf16, what holds it back (the CPU's bf16 instructions, the bf16 peak
against fp32).

    python benchmarks/utilisation.py                 # 300 items, 3 rounds (~2-4 min here)
    python benchmarks/utilisation.py --items 40 --runs 1     # smoke run
    python benchmarks/utilisation.py --compile --precisions fp32  # the compiled variant
    python benchmarks/utilisation.py --batch 32       # the same at batch 32
    TORCHINDUCTOR_FREEZING=1 python benchmarks/utilisation.py --compile --precisions fp32

``--compile`` loads the variant with ``compile`` = yes on the runner's own path: inside
``toolkit.runner.instruments.compilation.session`` (fresh caches, dynamo reset, failing recompile
limit), ``load`` (torch.compile, dynamic shapes), the load phase's first calls
(``classification.first_calls``: the window's shortest, longest and last batch compile there), then
the warm-up; graphs compiled in each phase are counted, and one compiled inside a timed pass
is reported (its compile time is then inside the rate). Inductor's own settings come from its
environment variables (the runner sets none): with ``TORCHINDUCTOR_FREEZING=1`` the linear
layers run oneDNN kernels on prepacked weights with bias and GELU fused in.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import common

TARGETS = {"fp32": 1 / 1.3, "bf16": 0.6}
#: Matrix products as the profiler names them: aten's, and the oneDNN/MKL linear kernels
#: Inductor calls with frozen weights (TORCHINDUCTOR_FREEZING=1; bias and GELU fused in).
MATMUL_OPS = (
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::matmul",
    "aten::baddbmm",
    "mkldnn::_linear_pointwise",
    "mkl::_mkl_linear",
)
ATTENTION_MARK = "scaled_dot_product"
#: Profiler events of Inductor's compiled graphs: their self time is the fused kernels it
#: generated (elementwise, LayerNorm, GELU...) and its wrapper code, not aten operators.
COMPILED_MARKS = ("CompiledFxGraph", "Torch-Compiled Region", "cpp_fused")
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "avx_ne_convert")


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _load(
    precision: str, folder: Path, args: argparse.Namespace, texts: list[str]
) -> tuple[Any, dict[str, Any], dict[str, int]]:
    """The model as the runner's load phase leaves it, then the protocol's warm-up; with
    the graphs compiled in each (both 0 uncompiled)."""
    from toolkit.runner.engines.model import load
    from toolkit.runner.engines.torch_engine import TorchClassifier
    from toolkit.runner.instruments import compilation
    from toolkit.runner.tasks.classification import first_calls

    name = (
        f"b{args.batch}-{precision}-sorted"
        + ("-compiled" if args.compile else "")
        + ("" if args.attention == "sdpa" else f"-{args.attention}")
    )
    variant = common.variant(
        name,
        args.batch,
        precision,
        "sorted",
        attention_backend=args.attention,
        compile="yes" if args.compile else "no",
    )
    count = compilation.GraphCount()
    model = TorchClassifier(load(variant, folder), variant)
    first_calls(model, variant, _items(texts))  # compiles the window's batch shapes (R8)
    graphs = {"load": count.take()}
    _pass(model, variant, texts[: common.WARMUP_ITEMS])  # the protocol's warm-up
    graphs["warm-up"] = count.take()
    return model, variant, graphs


def _pass(model: Any, variant: dict[str, Any], texts: list[str]) -> tuple[float, float, Any]:
    """One pass of the runner's batching code: (wall s, CPU s, window tallies)."""
    from toolkit.runner.tasks.classification import Window, run_batches

    window = Window()
    wall, cpu = time.perf_counter(), time.process_time()
    run_batches(model, variant, _items(texts), window, lambda done: None)
    return time.perf_counter() - wall, time.process_time() - cpu, window


def _items(texts: list[str]) -> list[Any]:
    """The texts as corpus items (the runner's batching reads ids and texts)."""
    from toolkit.evidence import corpus

    return [corpus.Item(str(n), text) for n, text in enumerate(texts)]


def _breakdown(model: Any, variant: dict[str, Any], texts: list[str]) -> dict[str, float]:
    """Where one profiled pass spends its time, by kind of operator (wall clock, as the
    profiler times operators)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        total = _pass(model, variant, texts)[0]
    kinds = {
        "matrix products": 0.0,
        "attention kernels": 0.0,
        "compiled fused code": 0.0,
        "other operators": 0.0,
    }
    for event in prof.key_averages():
        seconds = event.self_cpu_time_total / 1e6
        if event.key in MATMUL_OPS:
            kinds["matrix products"] += seconds
        elif ATTENTION_MARK in event.key:
            kinds["attention kernels"] += seconds
        elif any(mark in event.key for mark in COMPILED_MARKS):
            kinds["compiled fused code"] += seconds
        elif event.key.startswith("aten::"):
            kinds["other operators"] += seconds
    inside = sum(kinds.values())
    kinds["outside the operators (tokenizing, Python, profiler)"] = max(0.0, total - inside)
    return {name: seconds / total for name, seconds in kinds.items()}


def _measure(
    precision: str, args: argparse.Namespace, folder: Path, texts: list[str], threads: int
) -> tuple[bool, str]:
    """Load, warm up, run the interleaved rounds and print one precision's figures; return
    whether it met its target and its results row."""
    import torch

    from toolkit.runner.instruments import compilation, peak

    model, variant, graphs = _load(precision, folder, args, texts)
    cost, reason = model.flop_cost()
    if cost is None:
        raise SystemExit(f"error: {reason}")
    peaks, walls, cpus, probes = [], [], [], []
    real = 0
    count = compilation.GraphCount()
    with common.OthersMeter() as others:
        for _ in range(args.runs):
            found = peak.probe(torch.device("cpu"), precision, threads)
            peaks.append(found.matmul[precision])
            probes.append(found)
            wall, cpu, window = _pass(model, variant, texts)
            walls.append(wall)
            cpus.append(cpu)
            real = cost.total(window.sequences, window.real_tokens, window.real_squares)
    graphs["timed passes"] = count.take()
    best = max(peaks)
    seconds = statistics.median(cpus if args.clock == "cpu" else walls)
    rate = real / seconds
    value = rate / best
    print(f"{precision}: real-token FLOPs per pass {real / 1e9:.1f} GFLOP ({cost.formula})")
    print(
        f"  peak probes: {', '.join(f'{p / 1e9:.1f}' for p in peaks)} GFLOP/s "
        f"(best {best / 1e9:.1f}; last: {probes[-1].text})"
    )
    print(
        f"  passes: wall {', '.join(f'{w:.2f}' for w in walls)} s; cpu "
        f"{', '.join(f'{c:.2f}' for c in cpus)} s"
    )
    padded = cost.total(window.sequences, window.padded_tokens, window.padded_squares)
    print(
        f"  achieved {rate / 1e9:.1f} GFLOP/s on real tokens (on padded tokens "
        f"{padded / seconds / 1e9:.1f})"
    )
    if others.cores is not None:
        print(f"  other processes kept {others.cores:.2f} cores busy meanwhile")
    shares = _breakdown(model, variant, texts[: min(len(texts), 120)])
    graphs["profiled pass"] = count.take()
    print(
        "  where a profiled pass's time goes: "
        + ", ".join(f"{name} {share:.0%}" for name, share in shares.items() if share)
    )
    if args.compile:
        print(
            "  graphs compiled: "
            + ", ".join(f"{n} in {phase}" for phase, n in graphs.items())
            + (" (compile time is inside the timed passes)" if graphs["timed passes"] else "")
        )
    met = value >= TARGETS[precision]
    print(
        f"{precision} ratio {value:.3f} (target >= {TARGETS[precision]:.3g}): "
        f"{'met' if met else 'missed'}"
    )
    matmul = shares["matrix products"]
    if not met and matmul:
        print(
            f"  what holds {precision} back: {1 - matmul:.0%} of the pass is outside "
            "the matrix products (the attention kernel, elementwise operators or fused "
            "code, host work), which do little of the counted FLOPs; the matrix products "
            f"themselves ran at about {padded / seconds / matmul / best:.2f} of the "
            "probe's peak"
        )
    if precision != "fp32":
        flags = _cpu_flags()
        has = [f for f in BF16_FLAGS if f in flags]
        fp32 = probes[-1].matmul.get("fp32")
        print(
            f"  {precision} on this CPU: its bf16 instructions "
            f"{', '.join(has) or 'none of ' + ', '.join(BF16_FLAGS)}; the probe's "
            f"{precision} peak is {best / fp32:.2f} of its fp32 peak ({fp32 / 1e9:.1f} "
            "GFLOP/s): without native bf16 dot products the matrix products convert "
            "to fp32 and back (utilisation is against the bf16 peak)"
            if fp32
            else ""
        )
    row = (
        f"| {dt.date.today().isoformat()} | {common.machine()} | "
        f"`{common.script_line()}` ({variant['variant_id']}, "
        f"{args.clock} clock; peak {best / 1e9:.1f} GFLOP/s, achieved "
        f"{rate / 1e9:.1f}) | {value:.3f} | >= {TARGETS[precision]:.3g} | "
        f"{'met' if met else 'missed'} |"
    )
    return met, row


def main(argv: list[str] | None = None) -> int:
    """Measure, print the ratios and the results rows; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300, help="first N corpus items (300)")
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument("--precisions", default="fp32,bf16", help="comma list (fp32,bf16)")
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="clock of the pass for the verdict (default cpu)",
    )
    parser.add_argument("--batch", type=int, default=8, help="batch size (8, the sample's)")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="the variant with compile = yes, compiled as the runner does",
    )
    parser.add_argument(
        "--attention",
        choices=("sdpa", "eager"),
        default="sdpa",
        help="the variant's attention_backend (sdpa, the sample's)",
    )
    args = parser.parse_args(argv)
    precisions = [p for p in args.precisions.split(",") if p]
    if (
        not 1 <= args.items <= common.FULL_CORPUS_ITEMS
        or args.runs < 1
        or args.batch < 1
        or any(p not in TARGETS for p in precisions)
    ):
        parser.error("--items 1..1000, --runs >= 1, --batch >= 1, --precisions from fp32,bf16")
    import tempfile

    from toolkit.evidence import corpus
    from toolkit.runner.instruments import compilation

    threads = common.set_threads(1)
    met_all = []
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-util-") as tmp:
        folder = common.prepare_folder(Path(tmp), args.items)
        texts = [i.text for i in corpus.read_corpus(folder / "corpus.jsonl")]
        print(
            f"utilisation: b{args.batch}-*-sorted{' compiled' if args.compile else ''} on "
            f"{args.items} items, {threads} thread, {args.runs} round(s), verdict on the "
            f"{args.clock} clock"
        )
        for precision in precisions:
            with compilation.session(args.compile):  # the runner's compile state (R8)
                met, row = _measure(precision, args, folder, texts, threads)
            met_all.append(met)
            rows.append(row)
    for row in rows:
        print("results row:", row)
    return common.exit_code(met_all)


if __name__ == "__main__":
    sys.exit(main())
