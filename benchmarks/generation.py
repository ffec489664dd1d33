"""Target: the runner's generation window costs at most 3 % more than a bare generate loop.

Contestants, interleaved in one process (A, B, then B, A, ...), ``--runs`` each:

- **runner**: a real generation attempt (:func:`toolkit.runner.attempt.run_attempt` with
  Protocol task ``generation``: load, warm-up, measured window, export, evaluation); the
  time compared is its measured window (``measured_s``, and the CPU seconds inside that
  same span);
- **hand loop**: the same work written by hand with plain transformers: load the sample
  causal LM and its tokenizer (not timed), warm up on the same first 8 prompts (not
  timed), then, timed, read the JSONL prompts, tokenize each batch with left padding,
  ``model.generate`` (greedy, the same max_new_tokens, stop at the end-of-sequence token),
  cut each output after its end-of-sequence token and decode it to text on the host.

Same model files (samples/causal_lm/), prompts, batch size, precision, decoding rule and
threads. The outputs of both are compared id by id. Target: median runner / median hand
loop <= 1.03 on the verdict clock (``--clock``, CPU seconds by default: see
benchmarks/README.md).

    python benchmarks/generation.py                   # 48 prompts, batch 8, 5 runs each
    python benchmarks/generation.py --items 200 --clock wall
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

TARGET = 1.03
ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "samples" / "causal_lm"
PROMPTS = ROOT / "samples" / "prompts.jsonl"
WARMUP = 8
MAX_LENGTH = 96


def protocol(max_new_tokens: int) -> dict[str, Any]:
    """The generation Protocol both contestants follow."""
    return {
        **common.protocol("bench"),
        "task": "generation",
        "corpus_path": "prompts.jsonl",
        "metric": "chrf",
        "threshold": 0.0,
        "tolerance": 1.0,
        "subgroups": "stratum",
        "warmup_rule": f"first {WARMUP} items once, not timed",
        "max_new_tokens": max_new_tokens,
        "stop_rule": "eos",
        "long_prompts": "truncate",
    }


def variant(batch: int, precision: str) -> dict[str, Any]:
    return {
        "variant_id": "bench",
        "series": 1,
        "model_path": str(MODEL),
        "precision": precision,
        "quantization": "none",
        "batch_size": batch,
        "device": "cpu",
        "padding": "dynamic",
        "max_length": MAX_LENGTH,
        "length_grouping": "none",
        "compile": "no",
        "attention_backend": "sdpa",
        "padding_side": "left",
    }


class Runner:
    """Real generation attempts of the runner, in this process."""

    def __init__(
        self, folder: Path, threads: int, batch: int, precision: str, max_new_tokens: int
    ) -> None:
        from toolkit.evidence import corpus

        self.folder, self.threads = folder, threads
        self.items = corpus.read_corpus(folder / "prompts.jsonl")
        self.row = variant(batch, precision)
        self.form = protocol(max_new_tokens)
        self.count = 0

    def __call__(self) -> tuple[common.Timing, dict[str, str]]:
        from toolkit.evidence import corpus
        from toolkit.runner.attempt import AttemptSpec, run_attempt

        self.count += 1
        sha = hashlib.sha256(json.dumps(self.form, sort_keys=True).encode()).hexdigest()
        spec = AttemptSpec(
            workbook=str(self.folder / "bench.xlsx"),
            attempt_id=f"a{self.count:03d}-bench",
            variant=self.row,
            repetition=self.count,
            order_position=1,
            protocol=self.form,
            protocol_sha256=sha,
            corpus_sha256=corpus.fingerprint(self.items),
            corpus_items=len(self.items),
            threads=self.threads,
        )
        with common._instrumented_runner() as seen:
            record = run_attempt(spec, lambda event: None)
        attempt = record["attempt"]
        if attempt["status"] != "completed" or attempt["measured_s"] is None:
            raise RuntimeError(f"runner attempt {attempt['status']}: {attempt['notes']}")
        measured = seen["spans"][-1]  # load, warm-up, then the measured window
        if abs(measured.host_s - attempt["measured_s"]) > 1e-5:
            raise RuntimeError("the last span opened is not the measured window")
        rows = corpus.read_predictions(spec.predictions_file)
        return (
            common.Timing(float(attempt["measured_s"]), measured.cpu_s),
            {r["id"]: r["prediction"] for r in rows},
        )


class HandLoop:
    """The same work with plain transformers: tokenizer, generate, decode."""

    def __init__(self, folder: Path, batch: int, precision: str, max_new_tokens: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[precision]
        self.prompts = folder / "prompts.jsonl"
        self.tokenizer = AutoTokenizer.from_pretrained(str(MODEL))
        self.tokenizer.padding_side = "left"
        self.model = AutoModelForCausalLM.from_pretrained(
            str(MODEL), dtype=dtype, attn_implementation="sdpa"
        ).eval()
        self.batch, self.max_new_tokens = batch, max_new_tokens
        self.eos = self.tokenizer.eos_token_id

    def generate(self, texts: list[str]) -> list[str]:
        import torch

        out: list[str] = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch):
                inputs = self.tokenizer(
                    texts[start : start + self.batch],
                    padding="longest",
                    truncation=True,
                    max_length=MAX_LENGTH,
                    return_tensors="pt",
                )
                sequences = self.model.generate(
                    **inputs,
                    do_sample=False,
                    max_new_tokens=self.max_new_tokens,
                    eos_token_id=self.eos,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
                new = sequences[:, inputs["input_ids"].shape[1] :].tolist()
                cut = [row[: row.index(self.eos) + 1] if self.eos in row else row for row in new]
                out.extend(self.tokenizer.batch_decode(cut, skip_special_tokens=True))
        return out

    def __call__(self) -> tuple[common.Timing, dict[str, str]]:
        with self.prompts.open(encoding="utf-8") as handle:
            self.generate(
                [json.loads(line)["text"] for _, line in zip(range(WARMUP), handle, strict=False)]
            )
        wall, cpu = time.perf_counter(), time.process_time()
        with self.prompts.open(encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        outputs = self.generate([row["text"] for row in rows])
        timing = common.Timing(time.perf_counter() - wall, time.process_time() - cpu)
        return timing, {row["id"]: text for row, text in zip(rows, outputs, strict=True)}


def main(argv: list[str] | None = None) -> int:
    """Run both contestants interleaved and print the verdict; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=48, help="first N prompts (default 48)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each (default 5)")
    parser.add_argument("--batch", type=int, default=8, help="batch size (default 8)")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads for both (default 1; 0 = torch's choice)",
    )
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="the verdict's clock: CPU seconds of this process inside the "
        "window (default: robust on a shared machine), or wall seconds",
    )
    args = parser.parse_args(argv)
    threads = common.set_threads(args.threads)
    print(
        f"generation overhead: {args.items} prompts, batch {args.batch}, {args.precision}, "
        f"greedy, max_new_tokens {args.max_new_tokens}, {threads} threads, {args.runs} "
        "runs each, interleaved"
    )
    with tempfile.TemporaryDirectory(prefix="bench-generation-") as tmp:
        folder = Path(tmp)
        lines = PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[: args.items]
        (folder / "prompts.jsonl").write_text("".join(lines), encoding="utf-8")
        runner = Runner(folder, threads, args.batch, args.precision, args.max_new_tokens)
        hand = HandLoop(folder, args.batch, args.precision, args.max_new_tokens)
        runs, seen = common.interleave_with_outputs(
            {"runner": runner, "hand loop": hand}, args.runs
        )
        shutil.rmtree(folder / "bench_predictions", ignore_errors=True)
    print(f"outputs runner vs hand loop: {common.agreement(seen['runner'], seen['hand loop'])}")
    (found,) = common.compare(runs, args.clock, [("runner", "hand loop")])
    return common.runs_target(runs, found, args.clock, TARGET)


if __name__ == "__main__":
    sys.exit(main())
