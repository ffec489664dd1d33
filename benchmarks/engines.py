"""The engine series side by side: torch fp32 against onnxruntime fp32, onnxruntime dynamic
int8 and the TF-IDF plugin, on the same items in one campaign run.

    HF_HUB_OFFLINE=1 python benchmarks/engines.py [--items 300] [--threads 2] [--rounds 5]
        [--keep DIR]

One workbook, one attempt per variant in one shared process through the real CLI
(``iteralab run``), the first ``--items`` rows of the sample corpus (300 by default); the
ONNX export and its quantization are built by the run's pre-flight, before any attempt (the
cache beside the workbook), and each attempt reuses them. Printed per variant: its load phase, its measured
window and that window relative to torch fp32's, accuracy and its change against torch fp32,
the quality verdict under the Protocol's tolerance (0.01) and whether the corpus was
accepted; then the int8 quantization's own accuracy change (against onnxruntime fp32).

One attempt per engine says little about speed on a shared machine, so ``--rounds`` (5 by
default) interleaved rounds follow: each round runs every engine's attempt through the
runner in this process, in rotated order, reusing the campaign's exports. Printed: every
run's wall and CPU seconds with the cores other processes kept busy, each engine's median,
min and max on both clocks, its measured window over torch fp32's on both clocks, and a row
for benchmarks/README.md's results table.

``check()`` is the same series on a CUDA card for benchmarks/gpu_check.py (onnxruntime's
CUDA provider: the machine needs onnxruntime-gpu; the TF-IDF plugin stays on the CPU).
Exit codes: 0 every attempt completed, 1 one did not.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

TORCH = "t8-fp32"
PLUGIN = "python:austen_tfidf:Predictor"


def engine_rows(device: str = "cpu", slug: str | None = None) -> list[dict[str, Any]]:
    """torch fp32 batch 8 (the reference), then series 2: each engine against it."""
    on = {"device": device, "gpu_slug": slug}
    later = {"series": 2, "base_variant": TORCH}
    return [
        common.variant(TORCH, 8, **on, engine="torch"),
        common.variant("ort-fp32", 8, **on, **later, engine="onnxruntime", changes="engine"),
        *(
            []
            if device == "cuda"
            else [
                common.variant(
                    "ort-int8",
                    8,
                    **on,
                    **later,
                    engine="onnxruntime",
                    quantization="dynamic-int8",
                    changes="engine, quantization",
                )
            ]
        ),  # onnxruntime's dynamic int8 is a CPU path
        common.variant(
            "tfidf",
            8,
            **later,
            engine=PLUGIN,
            model_path="austen_tfidf",
            head_path=None,
            changes="engine, model_path, head_path"
            + (", device, gpu_slug" if device == "cuda" else ""),
        ),
    ]


def build(folder: Path, items: int, rows: list[dict[str, Any]]) -> Path:
    """A locked workbook in ``folder``: the corpus slice, the head, the plugin, ``rows``."""
    common.prepare_folder(folder, items)
    shutil.copytree(
        common.SAMPLES / "austen_tfidf",
        folder / "austen_tfidf",
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    form = common.protocol(TORCH)
    form["tuning_data"] = "none"
    return common.save_locked(folder / "engines.xlsx", form, rows)


def run(book: Path, threads: int) -> float:
    """``iteralab run BOOK --threads N`` in a subprocess; return its wall time."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(common.ROOT), env.get("PYTHONPATH")) if p)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "toolkit", "run", str(book), "--quiet", f"--threads={threads}"],
        cwd=common.ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"error: iteralab run exited with {done.returncode}")
    return time.perf_counter() - start


def report(book: Path) -> list[str]:
    """Print the series side by side; return the failures (an attempt not completed)."""
    from toolkit.workbook import store

    data = store.read(book)
    rows = {str(r["variant_id"]): r for r in data.tables["Attempts"]}
    engines = {str(v["variant_id"]): v.get("engine") or "torch" for v in data.tables["Variants"]}
    torch_row = rows.get(TORCH)
    base_s = torch_row["measured_s"] if torch_row else None
    base_acc = torch_row["metric_value"] if torch_row else None
    print(
        f"{'variant':<9} {'engine':<30} {'status':<10} {'load_s':>7} {'window_s':>9} "
        f"{'vs torch':>9} {'accuracy':>9} {'change':>8}  verdict"
    )
    failures = []
    for vid, row in rows.items():
        window, acc = row["measured_s"], row["metric_value"]
        ratio = f"{window / base_s:.3g}x" if window and base_s else "-"
        change = f"{acc - base_acc:+.4f}" if acc is not None and base_acc is not None else "-"
        print(
            f"{vid:<9} {engines[vid]:<30} {row['status']:<10} "
            f"{row['load_s'] or 0:>7.1f} {window or 0:>9.2f} {ratio:>9} "
            f"{acc if acc is not None else '-':>9} {change:>8}  {row['quality_verdict']}, "
            f"accepted {row['corpus_accepted']}"
        )
        if row["status"] != "completed":
            failures.append(f"{vid}: {row['status']}: {row['notes']}")
    fp32, int8 = rows.get("ort-fp32"), rows.get("ort-int8")
    if fp32 and int8 and fp32["metric_value"] is not None and int8["metric_value"] is not None:
        print(
            f"int8 accuracy change (onnxruntime dynamic-int8 - fp32): "
            f"{int8['metric_value'] - fp32['metric_value']:+.4f}; reference agreement "
            f"{int8['reference_agreement']}"
        )
    return failures


def check(folder: Path, device: str, slug: str | None, items: int, threads: int) -> list[str]:
    """The series on ``device`` (benchmarks/gpu_check.py calls it on cuda)."""
    book = build(folder, items, engine_rows(device, slug))
    wall = run(book, threads)
    print(f"engine series on {device}: {items} items, campaign wall {wall:.1f} s")
    return report(book)


def rounds(folder: Path, threads: int, count: int) -> common.Runs:
    """``count`` interleaved rounds of every engine's attempt, in this process.

    Each round runs the runner's real attempt of each variant (load, warm-up, measured
    window) in rotated order, so a change of load hits the engines alike; the exports the
    campaign's pre-flight built beside its workbook are reused.
    """
    attempts = common.RunnerAttempts(folder, threads)
    rows = engine_rows()

    def contestant(row: dict[str, Any]) -> Any:
        def run() -> common.Timing:
            timing = attempts.run(row)[0]
            # The engines do different encoder work: no split inside / outside the encoder.
            return common.Timing(timing.wall, timing.cpu)

        return run

    return common.interleave({str(r["variant_id"]): contestant(r) for r in rows}, count)


def compare_rounds(runs: common.Runs, args: argparse.Namespace) -> None:
    """Each engine's spread on both clocks, its ratios to torch fp32, the results row."""
    others = [name for name in runs.cpu if name != TORCH]
    found = common.compare(runs, "cpu", [(name, TORCH) for name in others])
    walls = [common.ratio(runs.wall, name, TORCH).of_medians for name in others]
    ratios = "; ".join(
        f"{r.numerator} {r.of_medians:.3f} (wall {wall:.3f})"
        for r, wall in zip(found, walls, strict=True)
    )
    print(f"measured window / torch fp32's, CPU clock: {ratios}")
    label = (
        f"`engines.py --items {args.items} --rounds {args.rounds} --threads {args.threads}` "
        f"(measured window / torch fp32's, CPU clock, wall beside: {ratios}; "
        f"{runs.others_text()})"
    )
    print(
        f"results row: | {dt.date.today().isoformat()} | {common.machine()} | {label} | "
        f"{found[0].of_medians:.3f} | n/a (a comparison) | shown |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="interleaved rounds of every engine after the campaign (default 5; 0: none)",
    )
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    args = parser.parse_args(argv)
    print(common.machine())
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        folder = args.keep or Path(tmp)
        failures = check(folder, "cpu", None, args.items, args.threads)
        if args.rounds and not failures:
            print(f"{args.rounds} interleaved rounds, each engine's attempt in this process:")
            compare_rounds(rounds(folder, args.threads, args.rounds), args)
    for failure in failures:
        print(f"FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
