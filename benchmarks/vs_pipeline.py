"""Target 2: the runner is no slower than ``transformers.pipeline`` doing the same classification.

The sample model is an encoder plus a linear head, not a pipeline-ready
classifier, so the pipeline side is built fairly as follows. A plain
``pipeline("feature-extraction")`` with ``batch_size > 1`` returns each item's
hidden states at its *batch's* padded length without the attention mask
(transformers' unbatching slices the padded batch), so pooling its output
afterwards would average padding too and give other predictions. The pipeline
side is therefore ``pipeline("feature-extraction", pipeline_class=HeadPipeline)``:
the stock feature-extraction pipeline (its own per-item tokenization with
truncation and max length, its DataLoader, its pad-collate to the batch's
longest, its unbatching) whose ``_forward`` also applies the same mask-aware
mean pooling, L2 norm and linear head as the runner, and whose ``postprocess``
returns the argmax label. Same encoder files, head tensors, batch size,
padding, max length, precision, threads; its predictions are compared with
the runner's id by id.

Timed window on both sides: read the JSONL corpus, (sort by token length for
the grouped variant: the pipeline side tokenizes once for the lengths, then
feeds the sorted texts), classify, labels on the host. Load and the same
warm-up (first 16 items once) are outside it. Each contestant is loaded afresh
per run. Four contestants interleaved in rotated order: runner, pipeline, and
both with the declared length-grouped variant (R6). Targets: median runner /
median pipeline <= 1.00 on the verdict clock (``--clock``, CPU seconds by
default: see benchmarks/README.md), in file order and grouped. The grouping
effect (file order / grouped, wall clock) is printed for both sides.

    python benchmarks/vs_pipeline.py                 # 300 items, batch 8, 5 runs each
    python benchmarks/vs_pipeline.py --full --grouping none
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common

TARGET = 1.00


def head_pipeline_class() -> type:
    """FeatureExtractionPipeline whose forward pools, normalises and applies the linear head."""
    import torch
    from transformers.pipelines import FeatureExtractionPipeline

    class HeadPipeline(FeatureExtractionPipeline):  # type: ignore[misc]
        """Feature extraction + mask-aware mean pooling + L2 norm + linear head + argmax."""

        head: tuple[torch.Tensor, torch.Tensor, list[str]]

        def _forward(self, model_inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            weight, bias, _ = self.head
            hidden = self.model(**model_inputs).last_hidden_state
            mask = model_inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            return {"logits": pooled @ weight.T + bias}

        def postprocess(
            self, model_outputs: dict[str, torch.Tensor], return_tensors: bool = False
        ) -> str:
            return self.head[2][int(model_outputs["logits"].argmax(dim=-1)[0])]

    return HeadPipeline


def pipeline_run(
    folder: Path, batch: int, precision: str, max_length: int, grouping: str
) -> tuple[common.Timing, dict[str, str]]:
    """Build the pipeline, warm it up, time one pass; return (seconds, predictions by id)."""
    from transformers import pipeline

    model = common.load_sample_model(folder, precision)
    pipe: Any = pipeline(
        "feature-extraction",
        model=model.encoder,
        tokenizer=model.tokenizer,
        pipeline_class=head_pipeline_class(),
        device="cpu",
        batch_size=batch,
        tokenize_kwargs={"truncation": True, "max_length": max_length},
    )
    pipe.head = (model.weight, model.bias, model.labels)
    return common.timed_corpus_pass(folder, pipe, model, max_length, grouping)


def main(argv: list[str] | None = None) -> int:
    """Parse options, run the contestants interleaved, print the verdicts; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_workload_args(parser)
    parser.add_argument(
        "--grouping",
        choices=("both", "none", "sorted"),
        default="both",
        help="file order, length-grouped, or both (default)",
    )
    args = parser.parse_args(argv)
    items = common.items_of(args)
    threads = common.set_threads(args.threads)
    groupings = ("none", "sorted") if args.grouping == "both" else (args.grouping,)
    print(
        f"runner vs transformers.pipeline: {items} items, batch {args.batch}, "
        f"{args.precision}, max length {args.max_length}, grouping {'/'.join(groupings)}, "
        f"{threads} threads, {args.runs} runs each, interleaved"
    )
    contestants: dict[str, Callable[[], tuple[common.Timing, dict[str, str]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        folder = common.prepare_folder(Path(tmp), items)
        attempts = common.RunnerAttempts(folder, threads)
        for grouping in groupings:
            suffix = "" if grouping == "none" else " sorted"
            row = common.variant(
                f"b{args.batch}-{args.precision}-{grouping}",
                args.batch,
                args.precision,
                grouping,
                args.max_length,
            )
            contestants["runner" + suffix] = functools.partial(attempts.run, row)
            contestants["pipeline" + suffix] = functools.partial(
                pipeline_run, folder, args.batch, args.precision, args.max_length, grouping
            )
        runs, seen = common.interleave_with_outputs(contestants, args.runs)
    suffixes = ["" if grouping == "none" else " sorted" for grouping in groupings]
    for suffix in suffixes:
        print(
            f"predictions runner{suffix} vs pipeline{suffix}: "
            f"{common.agreement(seen['runner' + suffix], seen['pipeline' + suffix])}"
        )
    found = common.compare(runs, args.clock, [("runner" + s, "pipeline" + s) for s in suffixes])
    met, rows = [], []
    for grouping, ratio in zip(groupings, found, strict=True):
        ok = common.judge(runs, ratio, args.clock, TARGET)
        met.append(ok)
        label = "file order" if grouping == "none" else "length-grouped"
        rows.append(
            common.results_row(
                common.script_line(), ratio.of_medians, TARGET, ok, f"{label}, {args.clock} clock"
            )
        )
    if len(groupings) == 2:
        for side in ("runner", "pipeline"):
            effect = common.ratio(runs.wall, side, side + " sorted")
            print(
                f"grouping effect, {side}: wall file order / length-grouped = "
                f"{effect.of_medians:.2f}x (median of pairs {effect.median_of_pairs:.2f}x)"
            )
    for row_text in rows:
        print("results row:", row_text)
    return common.exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
