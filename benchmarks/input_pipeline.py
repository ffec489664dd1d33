"""Issue 43: the overlapped input pipeline against the sequential one, on this CPU.

One model is loaded as the runner loads it (the sample's b8-fp32: batch 8, dynamic padding,
file order, sdpa, max length 256), its load phase's first calls and the protocol's warm-up
run once, then the runner's own batching code (``tasks.classification.run_batches``, the
code of the measured window) passes over the first N corpus items with
``input_pipeline`` sequential and overlapped in turn, in interleaved, rotated rounds
(``common.interleave``). Both contestants share the loaded model, so they differ only in
the pipeline; their predictions are compared id by id and must be identical. The figure is

    overlapped window / sequential window (ratio of medians over the rounds)

on the CPU clock by default (CPU seconds of this process inside the pass: the tokenizing
thread's are counted too), wall time printed beside it, with the cores other processes kept
busy. Target <= 1.0: on the CPU the overlapped pipeline must not cost more than the
sequential one.

    python benchmarks/input_pipeline.py                     # 300 items, 5 rounds
    python benchmarks/input_pipeline.py --items 16 --runs 1 # smoke run
    python benchmarks/input_pipeline.py --threads 2 --clock wall   # a quiet machine
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

TARGET = 1.0
CONTESTANTS = ("sequential", "overlapped")


def _contestant(model: Any, variant: dict[str, Any], items: list[Any]) -> Any:
    """One timed pass of the runner's batching code: (Timing, predictions by id)."""
    from toolkit.runner.tasks.classification import Window, run_batches

    def run() -> tuple[common.Timing, dict[str, str]]:
        window = Window()
        wall, cpu = time.perf_counter(), time.process_time()
        run_batches(model, variant, items, window, lambda done: None)
        timing = common.Timing(time.perf_counter() - wall, time.process_time() - cpu)
        return timing, {items[i].id: label for i, label in window.predictions}

    return run


def main(argv: list[str] | None = None) -> int:
    """Measure, print the ratio and the results row; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_workload_args(parser, items=300, runs=5, batch=8)
    args = parser.parse_args(argv)
    if args.clock == "outside":
        parser.error("--clock outside: the tokenizing thread's time is outside the model too")
    count = common.items_of(args)
    from toolkit.evidence import corpus
    from toolkit.runner.engines.model import load
    from toolkit.runner.engines.torch_engine import TorchClassifier
    from toolkit.runner.tasks.classification import Window, first_calls, run_batches

    threads = common.set_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        folder = common.prepare_folder(Path(tmp), count)
        items = corpus.read_corpus(folder / "corpus.jsonl")
        variants = {
            name: common.variant(
                f"b{args.batch}-{args.precision}-{name}",
                args.batch,
                args.precision,
                max_length=args.max_length,
                input_pipeline=name,
            )
            for name in CONTESTANTS
        }
        model = TorchClassifier(load(variants["sequential"], folder), variants["sequential"])
        print(
            f"input pipeline: b{args.batch}-{args.precision} on {count} items, {threads} torch "
            f"thread(s), {args.runs} round(s), verdict on the {args.clock} clock"
        )
        first_calls(model, variants["sequential"], items)
        for variant in variants.values():  # the protocol's warm-up, once per pipeline
            run_batches(model, variant, items[: common.WARMUP_ITEMS], Window(), lambda d: None)
        runs, outputs = common.interleave_with_outputs(
            {name: _contestant(model, variants[name], items) for name in CONTESTANTS}, args.runs
        )
    print(
        "predictions overlapped vs sequential: "
        + common.agreement(outputs["overlapped"], outputs["sequential"])
    )
    (found,) = common.compare(runs, args.clock, [("overlapped", "sequential")])
    label = (
        f"b{args.batch}-{args.precision}, {count} items, {threads} thread(s), {args.clock} clock"
    )
    met = common.judge(runs, found, args.clock, TARGET)
    identical = outputs["overlapped"] == outputs["sequential"]
    row = common.results_row(
        common.script_line(),
        found.of_medians,
        TARGET,
        met if identical else False,
        f"{label}; {runs.others_text()}",
    )
    print("results row:", row)
    return common.exit_code([met, identical])


if __name__ == "__main__":
    sys.exit(main())
