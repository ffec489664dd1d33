"""The generation path of the GPU check (benchmarks/gpu_check.py, issue 19).

A short generation campaign through the real CLI (``iteralab run``): the sample causal LM
(samples/causal_lm/) continues the prompts of samples/prompts.jsonl, greedy, 16 new tokens,
batch 8 in fp32 (the reference) and bf16 and batch 32 in bf16, on the card. Printed per
variant (medians over the repetitions): the measured window, time to first token, decode
tokens/s, the bandwidth ceiling (the catalog's bandwidth for the card over the planner's
bytes per step: weights + batch x KV cache per sequence) and the fraction reached, the KV
cache's peak beside the device's allocated peak, and the bf16 outputs' agreement with fp32.

Checks: every attempt completed with exactly the prompt ids; on CUDA every attempt has its
TTFT, decode rate, ceiling and fraction, and no fraction passes 1 (decode faster than the
bandwidth allows would mean the ceiling's bytes per step are over-counted); the bf16
variants have a token agreement with the reference. The sample model is tiny (2.5 MB), so
on a data-centre card its fraction is small: launches, not bandwidth, bound its decode; the
figure is still the one a user's own model gets measured against.

On a card where ctranslate2 sees CUDA, ``g8-ct2-fp32`` (the same model converted by
CTranslate2, fp32, batch 8; issue 32) joins the campaign against ``g8-fp32`` under the same
checks, and its TTFT and decode rate are printed relative to torch's. Without CUDA, or
without ctranslate2 (it is not in the GPU carry: its wheel is too large), a line says why it
is skipped.

    python benchmarks/gpu_generation.py --cpu-dry-run     # plumbing check without a GPU
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import common
from gpu_common import current_card, run_campaign

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


#: The ctranslate2 variant on the card, and the torch variant it is compared with.
CT2 = "g8-ct2-fp32"
REFERENCE = "g8-fp32"


def ctranslate2_skipped(cuda: bool) -> str | None:
    """Why ctranslate2 does not join the campaign here; None when it runs on the card."""
    if not cuda:
        return "no CUDA device here"
    try:
        import ctranslate2
    except ImportError:
        return "ctranslate2 is not installed (pip install 'iteragpu-lab[ctranslate2]')"
    if ctranslate2.get_cuda_device_count() == 0:
        return (
            f"ctranslate2 {ctranslate2.__version__} sees no CUDA device (a wheel without CUDA, "
            "or a driver it does not support)"
        )
    return None


def variants(device: str, slug: str | None, cuda: bool, ct2: bool = False) -> list[dict[str, Any]]:
    base = {
        "series": 1,
        "model_path": "causal_lm",
        "quantization": "none",
        "device": device,
        "gpu_slug": slug,
        "padding": "dynamic",
        "max_length": 96,
        "length_grouping": "none",
        "compile": "no",
        "attention_backend": "sdpa",
        "padding_side": "left",
    }
    rows = [
        {**base, "variant_id": "g8-fp32", "batch_size": 8, "precision": "fp32"},
        {
            **base,
            "variant_id": "g8-bf16",
            "batch_size": 8,
            "precision": "bf16",
            "series": 2,
            "base_variant": "g8-fp32",
            "changes": "precision",
        },
    ]
    if cuda:
        rows.append(
            {
                **base,
                "variant_id": "g32-bf16",
                "batch_size": 32,
                "precision": "bf16",
                "series": 2,
                "base_variant": "g8-fp32",
                "changes": "batch_size, precision",
            }
        )
    if ct2:
        rows.append(
            {
                **base,
                "variant_id": CT2,
                "batch_size": 8,
                "precision": "fp32",
                "engine": "ctranslate2",
                "series": 3,
                "base_variant": REFERENCE,
                "changes": "engine",
            }
        )
    return rows


def build(folder: Path, items: int, repetitions: int, rows: list[dict[str, Any]]) -> Path:
    """A locked generation workbook in ``folder`` with the prompts subset and the model."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SAMPLES / "prompts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "prompts.jsonl").write_text("".join(lines[:items]), encoding="utf-8")
    shutil.copytree(SAMPLES / "causal_lm", folder / "causal_lm", dirs_exist_ok=True)
    form = {
        **common.protocol(REFERENCE, repetitions),
        "task": "generation",
        "corpus_path": "prompts.jsonl",
        "tuning_data": "none",
        "metric": "chrf",
        "threshold": 0.0,
        "tolerance": 0.2,
        "subgroups": "stratum",
        "warmup_rule": "first 8 items once, not timed",
        "max_new_tokens": 16,
        "stop_rule": "eos",
        "long_prompts": "truncate",
        "timing_boundary": "read prompts, tokenize, generate, decode outputs on the host",
    }
    return common.save_locked(folder / "gpu_generation.xlsx", form, rows)


def _median(rows: list[dict[str, Any]], column: str) -> float | None:
    values = [r[column] for r in rows if r.get(column) is not None]
    return statistics.median(values) if values else None


def _shown(value: float | None, fmt: str, unit: str = "") -> str:
    return "empty" if value is None else format(value, fmt) + unit


def report(
    attempts: list[dict[str, Any]], rows: list[dict[str, Any]], items: int, cuda: bool
) -> list[str]:
    """Print the generation figures per variant; return the failed checks."""
    failures: list[str] = []
    for spec in rows:
        vid = spec["variant_id"]
        mine = [a for a in attempts if a["variant_id"] == vid]
        print(
            f"  {vid}: measured {_shown(_median(mine, 'measured_s'), '.3f')} s, TTFT "
            f"{_shown(_median(mine, 'ttft_s'), '.4f')} s, decode "
            f"{_shown(_median(mine, 'decode_tokens_per_s'), '.1f')} tok/s, ceiling "
            f"{_shown(_median(mine, 'bandwidth_ceiling_tokens_per_s'), '.0f')} tok/s, "
            f"fraction {_shown(_median(mine, 'decode_ceiling_fraction'), '.5f')}; KV cache "
            f"peak {_shown(_median(mine, 'kv_cache_peak_bytes'), ',.0f', ' B')}, allocated "
            f"peak {_shown(_median(mine, 'mem_allocated_peak_bytes'), ',.0f', ' B')}; token "
            f"agreement {_shown(_median(mine, 'token_agreement'), '.4f')}"
        )
        for a in mine:
            if a["status"] != "completed" or a["ids_match"] != "yes" or a["observed_ids"] != items:
                failures.append(
                    f"generation {a['attempt_id']}: {a['status']}, ids "
                    f"{a['ids_match']}: {a['notes']}"
                )
            needed = (
                (
                    "ttft_s",
                    "decode_tokens_per_s",
                    "bandwidth_ceiling_tokens_per_s",
                    "decode_ceiling_fraction",
                )
                if cuda
                else ("ttft_s", "decode_tokens_per_s")
            )
            for column in needed:
                if a.get(column) is None:
                    failures.append(
                        f"generation {a['attempt_id']}: {column} empty "
                        f"({a.get(column + '_reason')})"
                    )
            fraction = a.get("decode_ceiling_fraction")
            if fraction is not None and fraction > 1:
                failures.append(
                    f"generation {a['attempt_id']}: decode at {fraction:.3f} of "
                    "the bandwidth ceiling: its bytes per step are over-counted"
                )
            if vid != REFERENCE and a.get("token_agreement") is None:
                failures.append(
                    f"generation {a['attempt_id']}: no token agreement with the "
                    f"reference ({a.get('token_agreement_reason')})"
                )
    return failures


def check(
    folder: Path, cuda: bool, slug: str | None, items: int, repetitions: int, run_campaign: Any
) -> list[str]:
    """Build, run (``run_campaign(book)``) and report the generation campaign."""
    from toolkit.workbook import store

    skipped = ctranslate2_skipped(cuda)
    print(
        f"ctranslate2 on CUDA: skipped: {skipped}"
        if skipped
        else f"ctranslate2 on CUDA: {CT2} joins the campaign against {REFERENCE}"
    )
    rows = variants("cuda" if cuda else "cpu", slug if cuda else None, cuda, ct2=not skipped)
    book = build(folder, items, repetitions, rows)
    print(
        f"generation: {len(rows)} variants x {repetitions} repetitions, {items} prompts, "
        "greedy, 16 new tokens, through `iteralab run`"
    )
    run_campaign(book)
    attempts = list(store.read(book).tables["Attempts"])
    failures = report(attempts, rows, items, cuda)
    if not skipped:
        print(engine_ratios(attempts))
    return failures


def engine_ratios(attempts: list[dict[str, Any]]) -> str:
    """ctranslate2's median TTFT and decode rate over torch fp32's, on one line."""
    parts = []
    for column, what in (("ttft_s", "TTFT"), ("decode_tokens_per_s", "decode tokens/s")):
        ct2 = _median([a for a in attempts if a["variant_id"] == CT2], column)
        base = _median([a for a in attempts if a["variant_id"] == REFERENCE], column)
        parts.append(f"{what} {ct2 / base:.2f}x" if ct2 and base else f"{what} empty")
    return f"ctranslate2 fp32 / torch fp32 on the card: {', '.join(parts)}"


def main(argv: list[str] | None = None) -> int:
    """Run the generation path alone (the GPU check runs it after its own campaign)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-dry-run", action="store_true")
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--card", default=None, metavar="SLUG")
    args = parser.parse_args(argv)
    import torch

    cuda = torch.cuda.is_available() and not args.cpu_dry_run
    if not cuda and not args.cpu_dry_run:
        print("gpu_generation needs a CUDA device (--cpu-dry-run checks the script only)")
        return common.EXIT_NO_CUDA
    slug = args.card
    if cuda and slug is None:
        from toolkit.planner import gpus

        card = current_card(gpus.load_catalog())
        slug = card.slug if card else None
    items = min(args.items, 16) if args.cpu_dry_run else args.items
    with tempfile.TemporaryDirectory(prefix="bench-gen-") as tmp:
        failures = check(
            Path(tmp), cuda, slug, items, 1 if args.cpu_dry_run else args.repetitions, run_campaign
        )
    return common.checks_exit(failures)


if __name__ == "__main__":
    sys.exit(main())
