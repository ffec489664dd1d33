"""Target 1: the runner's measured window costs at most 3 % more than a bare torch loop.

Contestants, interleaved in one process (A, B, then B, A, ...), ``--runs`` each:

- **runner**: a real attempt of :func:`toolkit.runner.attempt.run_attempt`
  (load, the protocol's warm-up, measured window, evaluation, export); the
  time compared is its measured window (``measured_s``, and the CPU seconds
  inside that same span);
- **hand loop**: the same work written by hand with plain transformers and
  torch: load the encoder, the tokenizer and the head's tensors (not timed),
  warm up on the same first 16 items (not timed), then, timed, read the JSONL
  corpus, (order it by token length when ``--grouping sorted``), tokenize each
  batch with dynamic padding and truncation, encoder, mask-aware mean pooling,
  L2 norm, head, argmax, labels on the host.

Same model files, corpus subset, batch size, padding, max length, precision
and threads. The predictions of both are compared id by id. Target: median
runner / median hand loop <= 1.03 on the verdict clock (``--clock``, CPU
seconds by default: see benchmarks/README.md).

    python benchmarks/runner_overhead.py             # 300 items, batch 8, 5 runs each
    python benchmarks/runner_overhead.py --full --runs 7 --threads 0 --clock wall
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from pathlib import Path

import common

TARGET = 1.03


def hand_loop(
    folder: Path, batch: int, precision: str, max_length: int, grouping: str
) -> tuple[common.Timing, dict[str, str]]:
    """Load, warm up, then time the bare loop; return (seconds, predictions by id)."""
    import torch

    model = common.load_sample_model(folder, precision)
    tokenizer, encoder, labels = model.tokenizer, model.encoder, model.labels

    def classify(texts: list[str]) -> list[str]:
        out: list[str] = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch):
                inputs = tokenizer(
                    texts[start : start + batch],
                    padding="longest",
                    truncation=True,
                    max_length=max_length,
                    return_tensors="pt",
                )
                hidden = encoder(**inputs).last_hidden_state
                mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                logits = pooled @ model.weight.T + model.bias
                out.extend(labels[i] for i in logits.argmax(dim=-1).tolist())
        return out

    return common.timed_corpus_pass(folder, classify, model, max_length, grouping)


def main(argv: list[str] | None = None) -> int:
    """Parse options, run both contestants interleaved, print the verdict; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_workload_args(parser)
    parser.add_argument(
        "--grouping",
        choices=("none", "sorted"),
        default="none",
        help="order: file order (none) or sorted by token length",
    )
    args = parser.parse_args(argv)
    items = common.items_of(args)
    threads = common.set_threads(args.threads)
    print(
        f"runner overhead: {items} items, batch {args.batch}, {args.precision}, max length "
        f"{args.max_length}, grouping {args.grouping}, {threads} threads, {args.runs} runs "
        "each, interleaved"
    )
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        folder = common.prepare_folder(Path(tmp), items)
        attempts = common.RunnerAttempts(folder, threads)
        row = common.variant(
            f"b{args.batch}-{args.precision}",
            args.batch,
            args.precision,
            args.grouping,
            args.max_length,
        )
        hand = functools.partial(
            hand_loop, folder, args.batch, args.precision, args.max_length, args.grouping
        )
        runs, seen = common.interleave_with_outputs(
            {"runner": functools.partial(attempts.run, row), "hand loop": hand}, args.runs
        )
    print(f"predictions runner vs hand loop: {common.agreement(seen['runner'], seen['hand loop'])}")
    (found,) = common.compare(runs, args.clock, [("runner", "hand loop")])
    return common.runs_target(runs, found, args.clock, TARGET)


if __name__ == "__main__":
    sys.exit(main())
