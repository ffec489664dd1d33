"""Target 7: a short campaign on a CUDA card, checked against CUDA events and the card's ceilings.

One prepared command for a lent GPU machine (at most 5 minutes; see
benchmarks/README.md for the set-up)::

    HF_HUB_OFFLINE=1 timeout 330 python benchmarks/gpu_check.py

What it does, in order:

1. **Card**: the CUDA device's name and memory, matched to a row of
   ``tariffs/gpus.csv`` (via ``toolkit.planner.gpus``; ``--card SLUG`` overrides). Without a
   match the ceilings stay empty, with the reason.
2. **Timing probe**: bf16 matrix products timed by the runner's own
   :class:`toolkit.runner.instruments.probes.Span` (synchronised host timer and CUDA
   events) must agree within 2 %; an unsynchronised host timer is shown
   beside them (it only times the kernel launches). The achieved matrix rate
   and a device-to-device copy rate are compared with the catalog's dense
   BF16 rate and memory bandwidth: a check of the ceilings themselves.
3. **Campaign**: the sample classifier on CUDA through the real CLI
   (``iteralab run``): batch 1, 4 and 8, fp32 and bf16, file order and
   length-grouped (12 variants), ``--repetitions`` each (default 2) in rotated
   order, one shared process (so start-up is paid once; the CUDA peaks are
   reset at each attempt's start), the whole corpus by default.
4. **Report**: per variant the median measured window, the device span from
   CUDA events and its agreement with the host span, the forward calls' device time
   as a share of that span (``forward_device_s / device_s``, R10), memory peaks
   (``memory_allocated`` and ``memory_reserved``, never added), throughput,
   the linear layers' FLOP rate against the BF16 ceiling and the weight stream
   against the memory bandwidth, and the quality verdict.
5. **The CUDA review (#21)**: a float32 product after the runner's pin against
   float64 (TF32 off: its error stays at fp32's, not TF32's), the Manifest's fp32
   flags, the attention kernel each variant ran, the memory each attempt after the
   first found at its start (released, not the previous attempt's model), the
   first attempt of the process against later ones of its variant (lazy kernel
   loading), the device, driver CUDA version and GPU wheels recorded; then a second
   campaign, compiled fp32 with warm-up ``none`` on 301 items (a last batch of 5),
   that must compile nothing inside its measured window.
6. **Generation (issue 19)**: benchmarks/gpu_generation.py's campaign of the sample causal
   LM (fp32 and bf16, batch 8 and 32): TTFT, decode tokens/s against the card's bandwidth
   ceiling as a fraction (never above 1), KV cache and device peaks, bf16 vs fp32 agreement,
   and ctranslate2 on the card (``g8-ct2-fp32`` against ``g8-fp32``) where ctranslate2 sees
   CUDA, else a line saying why not (``--no-generation`` skips it).
7. **Utilisation (issue 20)**: every completed attempt has its model FLOPs, real- and
   padded-token rates, utilisation and padding waste; every Manifest row the probe's
   peaks and the catalog's line; per variant the median utilisation is printed, and none
   may pass 1.05 of the measured peak (the FLOP formula would over-count).
8. **Engines (issue 32)**: benchmarks/engines.py's series on the card (torch fp32,
   onnxruntime's CUDA provider, the TF-IDF plugin on the CPU) over 300 items, where
   onnxruntime has its CUDA provider (onnxruntime-gpu); else a line saying why not.

Exit codes: 0 every check passed, 1 a check failed (an attempt not
completed, host and device spans disagreeing, TF32 in an fp32 product, memory
not released, a compilation inside the window, or more than 5 minutes), 2 bad
arguments, 3 no CUDA device (this machine cannot run the check).
``--cpu-dry-run`` runs the same campaign on the CPU with a few items: a
plumbing check of this script on a machine without a GPU, not a measurement.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import gpu_generation
from gpu_common import match_card, run_campaign

from toolkit.report.summary import LOADED_SHARE

BUDGET_S = 300.0
TIMING_TOLERANCE = 0.02  # host span vs CUDA-event span, relative ...
WINDOW_ALLOWANCE_S = 0.005  # ... beyond this absolute allowance (short windows)
FP32_ERROR = 1e-5  # relative error of a 1024^2 float32 product: fp32 ~3e-7, TF32 ~4e-4
RELEASED_SHARE = 0.25  # an attempt's starting allocation / the smallest attempt peak
UTILISATION_SLACK = 0.05  # a dedicated GPU: utilisation above 1.05 means over-counting
COMPILE_ITEMS = 301  # 301 = 37 x 8 + 5: the window ends on a batch of its own shape
BASELINE = re.compile(r"CUDA memory when the peaks were reset: allocated ([\d,]+) B")


# ---------------------------------------------------------------- the model's work


@dataclass(frozen=True)
class ModelWork:
    """What one token and one batch cost the sample encoder, from its files."""

    flops_per_token: int  # linear layers only (attention scores add a little with length)
    weight_params: int  # non-embedding parameters, streamed from memory once per batch


def model_work(encoder: Path | None = None) -> ModelWork:
    """FLOPs per token of the linear layers and the non-embedding parameter count of the
    encoder folder (default: the sample package's)."""
    from safetensors import safe_open

    folder = encoder or importlib.resources.files(common.MODEL_PACKAGE) / "model"
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    flops = 2 * config["num_hidden_layers"] * (4 * hidden * hidden + 2 * hidden * inner)
    params = 0
    with safe_open(str(folder / "model.safetensors"), "pt") as tensors:
        for key in tensors.keys():
            if "embeddings" not in key:
                params += math.prod(tensors.get_slice(key).get_shape())
    return ModelWork(flops, params)


# ---------------------------------------------------------------- probes


def timing_probe(size: int = 8192, reps: int = 40) -> dict[str, float]:
    """bf16 matrix products timed three ways, and a device copy; seconds and rates."""
    import torch

    from toolkit.runner.instruments import probes

    device = torch.device("cuda")
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    unsynced = time.perf_counter() - start
    torch.cuda.synchronize()
    with probes.Span(device) as span:
        for _ in range(reps):
            a @ b
    del a, b
    copy_bytes = 2 << 30
    src = torch.empty(copy_bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    with probes.Span(device) as copy:
        for _ in range(5):
            dst.copy_(src)
    del src, dst
    torch.cuda.empty_cache()
    assert span.host_s and span.device_s and copy.device_s
    return {
        "unsynced_s": unsynced,
        "host_s": span.host_s,
        "device_s": span.device_s,
        "tflops": 2 * size**3 * reps / span.device_s / 1e12,
        "copy_gbps": 2 * copy_bytes * 5 / copy.device_s / 1e9,
    }


def fp32_probe(size: int = 1024) -> dict[str, float]:
    """Relative error (Frobenius) of a float32 product against float64: with the runner's
    pin, then with TF32 allowed for contrast (the pin is restored)."""
    import torch

    from toolkit.runner.instruments import precision

    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(size, size, device="cuda", generator=gen)
    b = torch.randn(size, size, device="cuda", generator=gen)
    exact = a.double() @ b.double()

    def error() -> float:
        return float(torch.linalg.norm((a @ b).double() - exact) / torch.linalg.norm(exact))

    precision.pin_fp32()
    pinned = error()
    torch.backends.cuda.matmul.allow_tf32 = True
    allowed = error()
    precision.pin_fp32()
    return {"pinned": pinned, "tf32_allowed": allowed}


# ---------------------------------------------------------------- the campaign


def variants(
    device: str,
    slug: str | None,
    batches: Sequence[int],
    precisions: Sequence[str],
    groupings: Sequence[str],
    encoder: Path | None = None,
) -> list[dict[str, Any]]:
    """The Variants rows: every batch x precision x grouping. Each (grouping, precision) pair
    is a series, the first one series 1 (batch its only variable); a later series names the
    same batch of series 1 as its base_variant and the columns it changes (R6). ``encoder``:
    a model folder in place of the sample package's."""
    model = {"model_path": str(encoder.resolve())} if encoder else {}
    rows = []
    pairs = [(grouping, precision) for grouping in groupings for precision in precisions]
    for series, (grouping, precision) in enumerate(pairs, start=1):
        for batch in batches:
            vid = f"g{batch}-{precision}" + ("-sorted" if grouping == "sorted" else "")
            row = common.variant(
                vid,
                batch,
                precision,
                grouping,
                device=device,
                series=series,
                gpu_slug=slug,
                **model,
            )
            if series > 1:
                first_grouping, first_precision = pairs[0]
                changes = [
                    c
                    for c, same in (
                        ("precision", precision == first_precision),
                        ("length_grouping", grouping == first_grouping),
                    )
                    if not same
                ]
                base = f"g{batch}-{first_precision}" + (
                    "-sorted" if first_grouping == "sorted" else ""
                )
                row.update(base_variant=base, changes=", ".join(changes))
            rows.append(row)
    return rows


def build_campaign(
    folder: Path,
    items: int,
    repetitions: int,
    rows: list[dict[str, Any]],
    warmup_rule: str | None = None,
    head: Path | None = None,
) -> Path:
    """A locked workbook in ``folder`` with the corpus subset, the head (``head``'s files
    over the sample's) and ``rows``."""
    common.prepare_folder(folder, items)
    if head is not None:
        shutil.copytree(head, folder / "head", dirs_exist_ok=True)
    form = common.protocol(str(rows[0]["variant_id"]), repetitions)
    if warmup_rule is not None:
        form["warmup_rule"] = warmup_rule
    return common.save_locked(folder / "gpu_check.xlsx", form, rows)


# ---------------------------------------------------------------- the report


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f}"


def _peak(rows: list[dict[str, Any]], column: str) -> int | None:
    values = [r[column] for r in rows if isinstance(r[column], int)]
    return max(values) if values else None


def timing_gap(host_s: float, device_s: float) -> float:
    """(|host - device| - 5 ms allowance) / host, at least 0: the disagreement checked."""
    return max(0.0, abs(host_s - device_s) - WINDOW_ALLOWANCE_S) / host_s


def worst_gap(rows: list[dict[str, Any]]) -> float | None:
    """The largest :func:`timing_gap` over completed attempts with a device span."""
    gaps = [
        timing_gap(r["measured_s"], r["device_s"])
        for r in rows
        if r["status"] == "completed" and r["device_s"] is not None
    ]
    return max(gaps) if gaps else None


def report(
    rows: list[dict[str, Any]],
    variant_rows: list[dict[str, Any]],
    items: int,
    work: ModelWork,
    card: Any | None,
    cuda: bool,
) -> list[str]:
    """Print the per-variant table; return the failed checks."""
    failures: list[str] = []
    for row in rows:
        if row["status"] != "completed":
            failures.append(f"{row['attempt_id']}: {row['status']} ({row['notes']})")
        elif cuda:
            host, dev = row["measured_s"], row["device_s"]
            if dev is None or timing_gap(host, dev) > TIMING_TOLERANCE:
                failures.append(f"{row['attempt_id']}: host {host} s vs CUDA events {dev} s")
            forward = row.get("forward_device_s")
            if forward is None or dev is None or not 0 < forward <= dev:
                failures.append(
                    f"{row['attempt_id']}: forward calls {forward} s not within "
                    f"the window's device span {dev} s (R10)"
                )
    bandwidth = float(card.bandwidth_gbps) * 1e9 if card else None
    bf16_peak = float(card.bf16_dense_tflops) * 1e12 if card and card.bf16_dense_tflops else None
    print(
        f"{'variant':<16} {'median_s':>9} {'dev/host':>8} {'fwd/win':>7} {'items/s':>8} "
        f"{'ktok/s':>7} "
        f"{'TFLOP/s':>8} {'%bf16':>6} {'GB/s wts':>8} {'%bw':>6} {'alloc MiB':>9} "
        f"{'resv MiB':>9} quality"
    )
    for spec in variant_rows:
        vid = spec["variant_id"]
        done = [r for r in rows if r["variant_id"] == vid and r["status"] == "completed"]
        if not done:
            print(f"{vid:<16} no completed attempt")
            continue
        seconds = statistics.median(r["measured_s"] for r in done)
        devs = [r["device_s"] / r["measured_s"] for r in done if r["device_s"]]
        # R10: the model's forward calls alone, as a share of the window's device span
        forwards = [
            r["forward_device_s"] / r["device_s"]
            for r in done
            if r.get("forward_device_s") and r["device_s"]
        ]
        padded = statistics.median(r["padded_tokens"] for r in done)
        real = statistics.median(r["padded_tokens"] * r["padding_efficiency"] for r in done)
        rate = work.flops_per_token * padded / seconds
        batches = math.ceil(items / int(spec["batch_size"]))
        per_param = 4 if spec["precision"] == "fp32" else 2
        stream = batches * work.weight_params * per_param / seconds
        share = (
            f"{100 * rate / bf16_peak:5.2f}"
            if bf16_peak and spec["precision"] == "bf16"
            else "    -"
        )
        share_bw = f"{100 * stream / bandwidth:5.2f}" if bandwidth else "    -"
        alloc = _peak(done, "mem_allocated_peak_bytes")
        reserved = _peak(done, "mem_reserved_peak_bytes")
        verdicts = ",".join(sorted({str(r["quality_verdict"]) for r in done}))
        dev_text = f"{statistics.median(devs):8.4f}" if devs else f"{'-':>8}"
        fwd_text = f"{statistics.median(forwards):7.4f}" if forwards else f"{'-':>7}"
        print(
            f"{vid:<16} {seconds:9.3f} {dev_text} {fwd_text} "
            f"{items / seconds:8.0f} {real / seconds / 1e3:7.1f} {rate / 1e12:8.3f} {share} "
            f"{stream / 1e9:8.1f} {share_bw} {_mib(alloc):>9} "
            f"{_mib(reserved):>9} {verdicts}"
        )
    notes = [
        "fwd/win: forward_device_s / device_s, the model's forward calls' device time "
        "as a share of the measured window's device span (R10)",
        "TFLOP/s counts the linear layers of the padded tokens "
        f"({work.flops_per_token / 1e6:.1f} MFLOP per token; attention scores excluded)",
        f"GB/s wts: {work.weight_params:,} non-embedding weights read once per batch",
    ]
    if card is None:
        notes.append("no catalog row for this device: %bf16 and %bw are empty")
    else:
        notes.append(
            f"ceilings from tariffs/gpus.csv row {card.slug}: "
            f"{card.bandwidth_gbps} GB/s, BF16 dense {card.bf16_dense_tflops} TFLOP/s; "
            "no FP32 rate in the catalog, so %bf16 is shown for bf16 variants only"
        )
    if not cuda:
        notes.append("CPU dry run: no CUDA events, no CUDA memory peaks (empty, with reasons)")
    for note in notes:
        print(f"  note: {note}")
    return failures


def baseline_allocated(row: dict[str, Any]) -> int | None:
    """The allocated bytes an attempt's notes give for its starting baseline (CUDA only)."""
    found = BASELINE.search(str(row.get("notes") or ""))
    return int(found[1].replace(",", "")) if found else None


def review_checks(
    rows: list[dict[str, Any]], manifests: list[dict[str, Any]], cuda: bool
) -> list[str]:
    """Print what #21 asked of the main campaign; return the failed checks."""
    failures: list[str] = []
    for m in manifests:
        flags = str(m.get("fp32_matmul"))
        if "cuBLAS TF32 off" not in flags or "cuDNN TF32 off" not in flags or "forced" in flags:
            failures.append(f"manifest {m['manifest_id']}: fp32 flags {flags!r}")
    if manifests:
        first = manifests[0]
        for name in (
            "gpu_device",
            "driver_cuda",
            "gpu_packages",
            "fp32_matmul",
            "environment_variables",
        ):
            print(f"  {name}: {first.get(name)}")
    print("attention kernels (load phase, shortest and longest batch):")
    seen: dict[str, str] = {}
    for row in rows:
        seen.setdefault(str(row["variant_id"]), str(row.get("attention_kernels")))
    for vid, kernels in seen.items():
        print(f"  {vid:<16} {kernels}")
    if not cuda or not rows:
        return failures
    peaks = [
        r["mem_allocated_peak_bytes"]
        for r in rows
        if isinstance(r.get("mem_allocated_peak_bytes"), int)
    ]
    starts = [b for r in rows[1:] if (b := baseline_allocated(r)) is not None]
    if peaks and starts:
        share = max(starts) / min(peaks)
        print(
            f"memory released between attempts: largest starting allocation "
            f"{_mib(max(starts))} MiB / smallest attempt peak {_mib(min(peaks))} MiB:"
        )
        if not common.verdict(share, RELEASED_SHARE):
            failures.append(f"an attempt started with {max(starts):,} B still allocated")
    first = rows[0]
    later = [
        r["measured_s"]
        for r in rows[1:]
        if r["variant_id"] == first["variant_id"] and r["status"] == "completed"
    ]
    if first["status"] == "completed" and later:
        print(
            f"lazy kernel loading: first attempt of the process {first['measured_s']:.3f} s "
            f"/ later attempts of {first['variant_id']} (median) "
            f"{statistics.median(later):.3f} s = "
            f"{first['measured_s'] / statistics.median(later):.3f} (information)"
        )
    return failures


def _loaded(row: dict[str, Any]) -> bool:
    """Other processes took more than LOADED_SHARE of the machine during the attempt's peak
    probe or its measured window (the runner then leaves utilisation empty, with why)."""
    shares = (row.get("probe_others_share"), row.get("others_cpu_share"))
    return any(isinstance(s, (int, float)) and s > LOADED_SHARE for s in shares)


def utilisation_checks(
    rows: list[dict[str, Any]], manifests: list[dict[str, Any]], cuda: bool
) -> list[str]:
    """Issue 20's columns: FLOPs, rates and utilisation filled for every completed attempt,
    the probe's peaks in every Manifest row (with the catalog's line on CUDA), and no
    utilisation above 1 + :data:`UTILISATION_SLACK` on a dedicated device (a rate above the
    measured peak would mean the FLOP formula over-counts)."""
    failures: list[str] = []
    for m in manifests:
        missing = [
            c
            for c in ("matmul_peak_flops", "fp32_matmul_peak_flops", "memory_bandwidth_bytes_s")
            if not m.get(c)
        ]
        if missing:
            failures.append(
                f"manifest {m['manifest_id']}: {', '.join(missing)} empty "
                f"({m.get('matmul_peak_flops_reason')})"
            )
        if cuda and str(m.get("catalog_peaks") or "").startswith(("n/a", "catalog")):
            failures.append(
                f"manifest {m['manifest_id']}: catalog_peaks {m.get('catalog_peaks')!r}"
            )
    if manifests:
        print(f"  peak_probe: {manifests[0].get('peak_probe')}")
        print(f"  catalog_peaks: {manifests[0].get('catalog_peaks')}")
    print(
        "utilisation (real-token FLOP rate / measured peak in the variant's precision; "
        "median over completed attempts) and padding waste:"
    )
    by_variant: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["status"] == "completed":
            by_variant.setdefault(str(row["variant_id"]), []).append(row)
            empty = [
                c
                for c in (
                    "real_flops",
                    "padded_flops",
                    "real_flop_rate",
                    "padded_flop_rate",
                    "utilisation",
                    "padding_waste",
                )
                if row.get(c) is None
            ]
            if empty == ["utilisation"] and _loaded(row):
                # An honest refusal: the probe or the window shared the machine. Not the
                # runner's fault, and not a figure either: said, not judged.
                print(
                    f"  {row['attempt_id']}: utilisation not judged: {row.get('utilisation_reason')}"
                )
            elif empty:
                failures.append(
                    f"{row['attempt_id']}: {', '.join(empty)} empty "
                    f"({row.get(empty[0] + '_reason')})"
                )
    for vid, mine in by_variant.items():
        use = [r["utilisation"] for r in mine if r.get("utilisation") is not None]
        waste = [r["padding_waste"] for r in mine if r.get("padding_waste") is not None]
        rate = [r["real_flop_rate"] for r in mine if r.get("real_flop_rate") is not None]
        if use:
            print(
                f"  {vid:<16} utilisation {statistics.median(use):.4f}, padding waste "
                f"{statistics.median(waste):.3f}, real-token rate "
                f"{statistics.median(rate) / 1e12:.3f} TFLOP/s"
            )
    highest = max(
        (r["utilisation"] for r in rows if r.get("utilisation") is not None), default=None
    )
    if cuda and highest is not None:
        print(
            "highest utilisation / (1 + slack): a rate above the measured peak means the "
            "formula over-counts:"
        )
        if not common.verdict(highest / (1 + UTILISATION_SLACK), 1.0):
            failures.append(f"utilisation {highest:.3f} above the measured peak")
    return failures


def compile_check(
    folder: Path, slug: str | None, encoder: Path | None = None, head: Path | None = None
) -> list[str]:
    """A compiled fp32 campaign with warm-up ``none``: nothing compiles inside the window."""
    model = {"model_path": str(encoder.resolve())} if encoder else {}
    rows_spec = [
        common.variant("g8-fp32", 8, device="cuda", gpu_slug=slug, **model),
        common.variant(
            "g8-fp32-compiled",
            8,
            device="cuda",
            gpu_slug=slug,
            series=2,
            compile="yes",
            base_variant="g8-fp32",
            changes="compile",
            **model,
        ),
    ]
    book = build_campaign(folder, COMPILE_ITEMS, 1, rows_spec, warmup_rule="none", head=head)
    print(
        f"compile campaign: g8-fp32 and g8-fp32-compiled, {COMPILE_ITEMS} items, warm-up "
        "none, through `iteralab run`"
    )
    run_campaign(book)
    from toolkit.workbook import store

    plain, compiled = store.read(book).tables["Attempts"]
    failures = []
    if compiled["status"] != "completed" or compiled["quality_verdict"] != "pass":
        failures.append(
            f"compiled attempt {compiled['status']}, {compiled['quality_verdict']}"
            f" ({compiled['notes']})"
        )
    if compiled["recompilations"] != 0:
        failures.append(f"{compiled['recompilations']} graph(s) compiled inside the window")
    if compiled["load_s"] and plain["load_s"]:
        print(
            f"  load_s compiled / eager: {compiled['load_s'] / plain['load_s']:.2f}; "
            f"recompilations in the window: {compiled['recompilations']}"
        )
    if compiled["measured_s"] and plain["measured_s"]:
        print(f"  measured_s compiled / eager: {compiled['measured_s'] / plain['measured_s']:.3f}")
    print(
        f"  attention kernels: eager {plain['attention_kernels']}; compiled "
        f"{compiled['attention_kernels']}"
    )
    print(f"  notes: {compiled['notes']}")
    return failures


def onnxruntime_cuda_skipped(cuda: bool) -> str | None:
    """Why onnxruntime's CUDA provider is not measured here; None when it is."""
    if not cuda:
        return "no CUDA device here"
    try:
        import onnxruntime
    except ImportError:
        return "onnxruntime is not installed (pip install onnxruntime-gpu)"
    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        return (
            f"onnxruntime {onnxruntime.__version__} has no CUDA provider here (pip install "
            "onnxruntime-gpu in place of onnxruntime; it is not in the GPU carry: too large)"
        )
    return None


def engines_check(folder: Path, cuda: bool, slug: str | None, items: int) -> list[str]:
    """The engine series (benchmarks/engines.py) on the card: torch fp32 against
    onnxruntime's CUDA provider and the CPU TF-IDF plugin. Skipped, saying why, without
    CUDA or without onnxruntime's CUDA provider (install onnxruntime-gpu)."""
    import engines

    skipped = onnxruntime_cuda_skipped(cuda)
    if skipped:
        print(f"onnxruntime CUDA provider: skipped: {skipped}")
        return []
    print("onnxruntime CUDA provider: the engine series joins the check")
    return engines.check(folder, "cuda", slug, items, threads=2)


def main(argv: list[str] | None = None) -> int:
    """Run the GPU check; return 0 (passed), 1 (a check failed) or 3 (no CUDA device)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--items",
        type=int,
        default=common.FULL_CORPUS_ITEMS,
        help="first N corpus items (default: all 1,000)",
    )
    parser.add_argument(
        "--repetitions", type=int, default=2, help="repetitions of each variant (default 2)"
    )
    parser.add_argument("--batches", default="1,4,8", help="batch sizes (default 1,4,8)")
    parser.add_argument("--precisions", default="fp32,bf16", help="default fp32,bf16")
    parser.add_argument("--groupings", default="none,sorted", help="default none,sorted")
    parser.add_argument(
        "--card",
        default=None,
        metavar="SLUG",
        help="catalog row to compare with (default: matched by device name)",
    )
    parser.add_argument(
        "--encoder",
        type=Path,
        default=None,
        metavar="DIR",
        help="encoder folder in place of the sample package's (the rebuilt "
        "copy a GPU machine receives: benchmarks/gpu_kit)",
    )
    parser.add_argument(
        "--head",
        type=Path,
        default=None,
        metavar="DIR",
        help="head folder in place of samples/head/ (fitted on --encoder)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="build the campaign in DIR and keep it (default: a temp folder)",
    )
    parser.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="plumbing check on the CPU (few items, no CUDA checks)",
    )
    parser.add_argument(
        "--no-generation",
        action="store_true",
        help="skip the generation campaign (benchmarks/gpu_generation.py)",
    )
    parser.add_argument(
        "--no-compile",
        action="store_true",
        help="skip the compiled campaign (it is skipped on the CPU dry run)",
    )
    args = parser.parse_args(argv)
    for option, folder in (("--encoder", args.encoder), ("--head", args.head)):
        if folder is not None and not folder.is_dir():
            parser.error(f"{option} {folder}: no such folder")
    began = time.perf_counter()
    import torch

    from toolkit.planner import gpus

    cuda = torch.cuda.is_available()
    if not cuda and not args.cpu_dry_run:
        print(
            f"gpu_check needs a CUDA device: torch {torch.__version__} sees none "
            f"(CUDA build: {torch.version.cuda or 'none'}). Run it on a GPU machine "
            "(benchmarks/README.md, target 7); --cpu-dry-run checks the script only."
        )
        return common.EXIT_NO_CUDA
    cuda = cuda and not args.cpu_dry_run
    catalog = gpus.load_catalog()
    if cuda:
        used = torch.cuda.current_device()  # the device the runner's "cuda" variants use
        props = torch.cuda.get_device_properties(used)
        name, memory = torch.cuda.get_device_name(used), int(props.total_memory)
    else:
        name, memory = "CPU (dry run)", None
    card = (
        next((g for g in catalog if g.slug == args.card), None)
        if args.card
        else match_card(name, memory, catalog)
    )
    if args.card and card is None:
        raise SystemExit(f"error: --card {args.card}: no such slug in tariffs/gpus.csv")
    print(
        f"gpu check: {name}"
        + (f", {memory / 2**30:.1f} GiB" if memory else "")
        + f"; torch {torch.__version__}, CUDA {torch.version.cuda or 'none'}"
    )
    print(
        f"catalog row: {card.slug} ({card.name}), {card.bandwidth_gbps} GB/s, BF16 dense "
        f"{card.bf16_dense_tflops} TFLOP/s"
        if card
        else "catalog row: none matches this device (use --card SLUG): ceilings empty"
    )
    failures: list[str] = []
    if cuda:
        probe = timing_probe()
        gap = abs(probe["host_s"] - probe["device_s"]) / probe["device_s"]
        print(
            f"timing probe (bf16 8192^2 products x 40): synchronised host {probe['host_s']:.4f}"
            f" s, CUDA events {probe['device_s']:.4f} s (gap {100 * gap:.2f} %), "
            f"unsynchronised host {probe['unsynced_s']:.4f} s (launches only)"
        )
        peak = (
            f" = {100 * probe['tflops'] / float(card.bf16_dense_tflops):.0f} % of the "
            f"catalog's {card.bf16_dense_tflops}"
            if card and card.bf16_dense_tflops
            else ""
        )
        copy = (
            f" = {100 * probe['copy_gbps'] / float(card.bandwidth_gbps):.0f} % of the "
            f"catalog's {card.bandwidth_gbps}"
            if card
            else ""
        )
        print(
            f"  matrix rate {probe['tflops']:.0f} TFLOP/s{peak}; copy "
            f"{probe['copy_gbps']:.0f} GB/s{copy}"
        )
        if gap > TIMING_TOLERANCE:
            failures.append(f"timing probe: host and CUDA-event spans differ by {100 * gap:.1f} %")
        errors = fp32_probe()
        print(
            f"fp32 probe (1024^2 product vs float64, runner's pin): relative error "
            f"{errors['pinned']:.2e}; with TF32 allowed {errors['tf32_allowed']:.2e}; "
            f"limit {FP32_ERROR:g}:"
        )
        if not common.verdict(errors["pinned"] / FP32_ERROR, 1.0):
            failures.append(f"fp32 product error {errors['pinned']:.2e}: TF32 was on")
    items = min(args.items, 24) if args.cpu_dry_run else args.items
    batches = [int(b) for b in args.batches.split(",")]
    rows_spec = variants(
        "cuda" if cuda else "cpu",
        card.slug if card and cuda else None,
        batches,
        args.precisions.split(","),
        args.groupings.split(","),
        args.encoder,
    )
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        folder = args.keep or Path(tmp)
        book = build_campaign(folder, items, args.repetitions, rows_spec, head=args.head)
        print(
            f"campaign: {len(rows_spec)} variants x {args.repetitions} repetitions, "
            f"{items} items, shared process, through `iteralab run`"
        )
        wall = run_campaign(book)
        from toolkit.workbook import store

        data = store.read(book)
        attempts = list(data.tables["Attempts"])
        manifests = list(data.tables["Manifest"])
        measured = sum(r["measured_s"] or 0 for r in attempts)
        print(
            f"campaign wall {wall:.1f} s, measured windows {measured:.1f} s, "
            f"{len(attempts)} attempts"
        )
        failures += report(attempts, rows_spec, items, model_work(args.encoder), card, cuda)
        failures += review_checks(attempts, manifests, cuda)
        failures += utilisation_checks(attempts, manifests, cuda)
        if not args.no_generation:  # issue 19: decode tokens/s against the bandwidth ceiling
            failures += gpu_generation.check(
                folder / "generation",
                cuda,
                card.slug if card else None,
                min(items, 200),
                1 if args.cpu_dry_run else args.repetitions,
                run_campaign,
            )
        if cuda and not args.no_compile:
            failures += compile_check(
                folder / "compiled", card.slug if card else None, args.encoder, args.head
            )
        # issue 32: onnxruntime's CUDA provider beside torch on this card (ctranslate2 on
        # CUDA is in the generation part: benchmarks/gpu_generation.py)
        failures += engines_check(
            folder / "engines", cuda, card.slug if card else None, min(items, 300)
        )
    elapsed = time.perf_counter() - began
    if elapsed > BUDGET_S:
        failures.append(f"took {elapsed:.0f} s, over the {BUDGET_S:.0f} s budget")
    gap = worst_gap(attempts)
    if gap is not None:
        print("worst (|host - CUDA events| - 5 ms) / host over the measured windows:")
        common.verdict(gap, TIMING_TOLERANCE)
    print(f"elapsed {elapsed:.1f} s / budget {BUDGET_S:.0f} s:")
    common.verdict(elapsed / BUDGET_S, 1.0)
    return common.checks_exit(failures)


if __name__ == "__main__":
    sys.exit(main())
