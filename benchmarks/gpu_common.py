"""What the GPU checks share (gpu_check.py, gpu_generation.py): the card's catalog row and a
campaign run through the real CLI. Both import this module, never each other."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common

ATTEMPT_TIMEOUT_S = 120
FORM_FACTORS = ("pcie", "nvl")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def match_card(device_name: str, memory_bytes: int | None, catalog: Sequence[Any]) -> Any | None:
    """The catalog row (toolkit.planner.gpus.Gpu) of a CUDA device, or None when none fits.

    A row matches when its model token (the first slug part with a digit: h200,
    a100, 4090, mi300x) is a word of the device name, no form-factor word of the
    device (PCIe, NVL) is missing from the row, and the device's memory is within
    10 % of the row's. Among matches, the row sharing most words wins.
    """
    words = _words(device_name)
    best, best_score = None, -1
    for gpu in catalog:
        tokens = re.findall(r"[a-z0-9]+", gpu.slug.lower())
        keys = [t for t in tokens if any(c.isdigit() for c in t)] or tokens
        if keys[0] not in words:
            continue
        row_words = _words(f"{gpu.slug} {gpu.name}")
        if any(f in words and f not in row_words for f in FORM_FACTORS):
            continue
        if (
            memory_bytes is not None
            and abs(memory_bytes - gpu.capacity_bytes) > 0.1 * gpu.capacity_bytes
        ):
            continue
        score = len(words & row_words)
        if score > best_score:
            best, best_score = gpu, score
    return best


def current_card(catalog: Sequence[Any]) -> Any | None:
    """The catalog row of the CUDA device a ``cuda`` variant uses (None without a match)."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return match_card(props.name, int(props.total_memory), catalog)


def run_campaign(book: Path, *options: str) -> float:
    """``iteralab run BOOK [OPTIONS]`` in a subprocess; return its wall time (exit on
    failure)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(common.ROOT), env.get("PYTHONPATH")) if p)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolkit",
            "run",
            str(book),
            "--quiet",
            f"--timeout={ATTEMPT_TIMEOUT_S}",
            *options,
        ],
        cwd=common.ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.strip().splitlines():
        print(f"  | {line}")
    if done.returncode != 0:
        print(done.stderr.strip()[-2000:], file=sys.stderr)
        raise SystemExit(f"error: iteralab run exited with {done.returncode}")
    return time.perf_counter() - start
