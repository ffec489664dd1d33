"""A rented card's campaign replayed from a CPU run: the path a CUDA campaign takes.

No GPU here. The replay takes a campaign run recorded on this CPU (its breakdown and its
Attempts rows) and puts, for each attempt of a variant the card would run (the torch engine),
what the card measured for that variant in place of this CPU's window, and adds what a CUDA
attempt pays that a CPU attempt does not: a CUDA context in every fresh worker, the weights'
copy to the device, the shape warm-up's setup. Variants on another engine (ONNX Runtime, the
TF-IDF plugin) stay on the host CPU, as measured here. The toolkit's overhead is this run's
own, on the path it took (forked workers, as a CUDA campaign's are now), plus the driver
probe each fresh worker makes on a GPU host. Every figure is printed with where it comes from
(:func:`assumptions`); nothing runs faster for real.

The card's windows come from its measured rows in benchmarks/README.md (the sample model,
1,000 items, the medians of two repetitions; bf16's warm repetition, since the load phase now
sets up every window shape): per item, times the attempt's items.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Card:
    """What a card measured, or is assumed to cost, for the sample campaign."""

    name: str
    source: str
    #: Seconds for 1,000 items by (precision, batch size), and what each figure is.
    windows_1000: dict[tuple[str, int], tuple[float, str]]
    #: A fresh process's first attempt less a later one's, same variant (context, kernels).
    context_s: float
    context_source: str
    #: Host-to-device copy rate of the weights (bytes/s) and its source.
    copy_bytes_per_s: float
    copy_source: str
    #: Per-shape setup the warm-up now pays in load, by precision (s per attempt) and source.
    shape_setup_s: dict[str, tuple[float, str]] = field(default_factory=dict)
    #: The driver probe (``nvidia-smi``) every fresh worker runs once, and its source.
    driver_probe_s: float = 0.0
    driver_probe_source: str = ""


H200 = Card(
    name="h200",
    source="benchmarks/README.md, NVIDIA H200 rows of 2026-12-04 (gpu_check.py, 1,000 items)",
    windows_1000={
        ("fp32", 1): (5.46, "g1-fp32 median"),
        ("fp32", 4): (1.50, "g4-fp32 median"),
        ("fp32", 8): (1.20, "g8-fp32 median"),
        ("bf16", 4): (1.89, "g4-bf16 repetition 2 (warm shapes)"),
        ("bf16", 8): (0.98, "g8-bf16 repetition 2 (warm shapes)"),
        ("bf16", 1): (8.19, "g1-bf16 median (no warm repetition recorded)"),
    },
    context_s=2.40,
    context_source="a process's first attempt 6.655 s less a later g1-fp32 attempt's 4.255 s "
    "(context creation and lazy kernel loading)",
    copy_bytes_per_s=10e9,
    copy_source="assumed 10 GB/s, pageable host memory (PCIe 5 x16 peaks at 64 GB/s)",
    shape_setup_s={
        "bf16": (
            4.0,
            "g8-bf16 repetition 1 less repetition 2 (4.97 - 0.98 s): cuDNN attention plans, "
            "one per new shape, now set up in load",
        ),
        "fp32": (0.0, "fp32 attention (memory-efficient) set up no per-shape plan on the H200"),
    },
    driver_probe_s=0.0,
    driver_probe_source="none per worker: the fork server asks nvidia-smi once before it "
    "forks and its workers inherit the answer (one call per run, in start-up)",
)
CARDS = {H200.name: H200}


def on_card(row: dict[str, Any]) -> bool:
    """Whether the card runs this variant (the torch engine); others stay on the host CPU."""
    return str(row.get("engine") or "torch") == "torch"


def window_on_card(card: Card, row: dict[str, Any], items: int) -> tuple[float, str]:
    """The card's window for ``items`` items of this variant, and what it comes from: the
    measured figure for its precision and batch, else the nearest smaller batch's (said)."""
    precision, batch = str(row.get("precision") or "fp32"), int(row.get("batch_size") or 1)
    known = sorted(b for p, b in card.windows_1000 if p == precision) or sorted(
        b for p, b in card.windows_1000 if p == "fp32"
    )
    chosen = max([b for b in known if b <= batch] or known[:1])
    key = (precision if (precision, chosen) in card.windows_1000 else "fp32", chosen)
    seconds, source = card.windows_1000[key]
    note = (
        source if key == (precision, batch) else f"{source}, standing in for {precision} b{batch}"
    )
    return seconds * items / 1000, note


def weight_bytes(folder: Path | None) -> int:
    """The model's weight files' size (safetensors or PyTorch bin), 0 when unknown."""
    if folder is None:
        return 0
    return sum(p.stat().st_size for p in folder.rglob("*") if p.suffix in (".safetensors", ".bin"))


def replay(
    card: Card,
    run: dict[str, Any],
    rows: list[dict[str, Any]],
    variants: dict[str, dict[str, Any]],
    weights: int,
) -> dict[str, Any]:
    """The card's wall time = windows + floor + overhead, in total and per attempt, from a
    CPU run's breakdown ``run`` (with ``after_run_s``) and its Attempts ``rows``."""
    windows = floor = 0.0
    notes: dict[str, str] = {}
    card_attempts = 0
    speedups: list[float] = []
    for row in rows:
        variant = variants.get(str(row["variant_id"]), {})
        cpu_floor = sum(
            float(row.get(k) or 0.0) for k in ("load_s", "warmup_s", "evaluation_s", "export_s")
        )
        measured = float(row.get("measured_s") or 0.0)
        if not on_card(variant):
            windows += measured
            floor += cpu_floor
            notes[str(row["variant_id"])] = "host CPU (another engine): as measured here"
            continue
        card_attempts += 1
        window, note = window_on_card(card, variant, int(row.get("items_completed") or 0))
        speedup = measured / window if window > 0 else 1.0
        speedups.append(speedup)
        notes[str(row["variant_id"])] = f"{note}: {speedup:.1f}x this CPU's window"
        setup = card.shape_setup_s.get(str(variant.get("precision")), (0.0, ""))[0]
        warmup = float(row.get("warmup_s") or 0.0) / max(speedup, 1.0)
        windows += window
        floor += (
            cpu_floor
            - float(row.get("warmup_s") or 0.0)
            + warmup
            + card.context_s
            + weights / card.copy_bytes_per_s
            + setup
        )
    # The pre-flight's batches are the same model work, at the attempts' median speed-up.
    work = float(run.get("preflight_work_s") or 0.0)
    speedup = statistics.median(speedups) if speedups else 1.0
    preflight_context = card.context_s if card_attempts else 0.0
    overhead = (
        float(run["overhead_s"])
        - work
        + work / max(speedup, 1.0)
        + float(run.get("after_run_s") or 0.0)
        + preflight_context
        + card.driver_probe_s * card_attempts
    )
    n = max(len(rows), 1)
    return {
        "attempts": len(rows),
        "card_attempts": card_attempts,
        "windows_s": windows,
        "floor_s": floor,
        "overhead_s": overhead,
        "wall_s": windows + floor + overhead,
        "per_attempt": {
            "windows_s": windows / n,
            "floor_s": floor / n,
            "overhead_s": overhead / n,
            "wall_s": (windows + floor + overhead) / n,
        },
        "preflight_work_s": work,
        "median_speedup": speedup,
        "notes": notes,
        "launcher": run.get("launcher"),
    }


def assumptions(card: Card, weights: int, result: dict[str, Any]) -> list[str]:
    """Every figure the replay puts in place of this CPU's, with its source."""
    lines = [f"card {card.name}: {card.source}"]
    lines += [
        f"  window per 1,000 items, {p} b{b}: {s:.2f} s ({why})"
        for (p, b), (s, why) in sorted(card.windows_1000.items())
    ]
    lines += [f"  variant {v}: {why}" for v, why in sorted(result["notes"].items())]
    lines.append(
        f"  CUDA context per fresh worker (floor: load): {card.context_s:.2f} s, "
        f"{card.context_source}; once more for the pre-flight's worker (overhead)"
    )
    lines.append(
        f"  weights to the device (floor: load): {weights / 1e6:.1f} MB at "
        f"{card.copy_bytes_per_s / 1e9:g} GB/s = {weights / card.copy_bytes_per_s:.3f} s, "
        f"{card.copy_source}"
    )
    lines += [
        f"  shape warm-up setup, {p} (floor: load): {s:.2f} s per attempt, {why}"
        for p, (s, why) in sorted(card.shape_setup_s.items())
    ]
    lines.append(
        "  the protocol's warm-up pass: this CPU's warmup_s / the variant's speed-up (card "
        "window / this CPU's window); load, evaluation and export: as measured here (host work; "
        "load's one batch per window shape on this CPU: an upper bound)"
    )
    lines.append(
        f"  driver probe per fresh worker (overhead): {card.driver_probe_s:.2f} s, "
        f"{card.driver_probe_source}"
    )
    launcher = result.get("launcher")
    path = (
        "forked by the fork server, as a CUDA campaign's workers are now"
        if launcher and not launcher.get("spawned")
        else f"as this run started them ({launcher}): not the forked path"
    )
    lines.append(
        "  the toolkit's overhead: this run's own parts, start-up, pre-flight (its model work, "
        f"{result['preflight_work_s']:.2f} s here, / the attempts' median speed-up "
        f"{result['median_speedup']:.1f}) and what follows the run included; its workers {path}"
    )
    return lines
