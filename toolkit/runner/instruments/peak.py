"""The machine's peak, measured by a short probe: matrix products and memory bandwidth.

What "utilisation" divides by. Run once per process and setting (device, precision,
threads; cached), after an attempt's timed phases so it never disturbs them:

* **matrix multiply**: ``torch.mm`` of square matrices in the variant's precision (and in
  fp32 beside it), a few sizes (CPU 256 and 512, GPU 4096 and 8192), each repeated for a
  short time budget; the best rate of any size, ``2*n**3 / seconds``, is the peak. On the CPU
  it runs with the attempt's torch threads; on CUDA each timing is between synchronisations;
* **memory bandwidth**: a tensor copied into another (32 MiB on the CPU, 1 GiB on a GPU),
  best of a few: ``2 * bytes / seconds`` (read and written).

Kept short (about 0.2-0.5 s on this project's 2-core CPU, under a second on a GPU), and
shared: within a process by a cache, between the fresh worker processes of a campaign by a
small file in the temporary folder (``iteralab-peaks/``, keyed by host, CPU, torch version,
device, precision and threads), reused for :data:`REUSE_S` seconds, so a campaign pays the
probe about once per setting and every attempt of it divides by the same peak (the one its
Manifest row shows). ``ITERALAB_PEAK_CACHE=0`` probes in every process. A best-of-a-few is
a floor for the true peak: on a machine shared with other work the probe sees what was
available then.
On a GPU the catalog's figures (``tariffs/gpus.csv``) go beside the measurement, never in its
place.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import platform
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from toolkit.planner.gpus import load_catalog
from toolkit.plumbing.atomic import write_text

#: Square sizes probed, by device type.
SIZES = {"cpu": (256, 512), "cuda": (4096, 8192)}
#: Seconds each size is repeated for (at least two calls after one untimed call).
BUDGET_S = {"cpu": 0.05, "cuda": 0.08}
#: Bytes copied for the bandwidth probe, by device type.
COPY_BYTES = {"cpu": 32 * 2**20, "cuda": 2**30}
COPY_REPEATS = 5
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: How long a probe written by another process of this machine is reused (seconds).
REUSE_S = 600
CACHE_VARIABLE = "ITERALAB_PEAK_CACHE"


@dataclass(frozen=True)
class Peak:
    """What the probe measured: FLOP/s per precision, bytes/s, how, and the catalog's line."""

    matmul: dict[str, float]
    bandwidth: float | None
    text: str
    seconds: float


def _sync(device: torch.device) -> Callable[[], None]:
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def matmul_rate(device: torch.device, dtype: torch.dtype, n: int, budget_s: float
                ) -> tuple[float, int]:
    """Best FLOP/s of ``torch.mm`` on n x n matrices within ``budget_s``; and the calls timed."""
    sync = _sync(device)
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    torch.mm(a, b)  # first call: kernel choice, allocations
    sync()
    best, calls, began = float("inf"), 0, time.perf_counter()
    while calls < 2 or time.perf_counter() - began < budget_s:
        start = time.perf_counter()
        torch.mm(a, b)
        sync()
        best = min(best, time.perf_counter() - start)
        calls += 1
    return 2 * n ** 3 / best, calls


def bandwidth(device: torch.device, size: int) -> float:
    """Best bytes/s of copying ``size`` bytes into another buffer (read + write)."""
    sync = _sync(device)
    source = torch.ones(size // 4, device=device)
    target = torch.empty_like(source)
    target.copy_(source)
    sync()
    best = float("inf")
    for _ in range(COPY_REPEATS):
        start = time.perf_counter()
        target.copy_(source)
        sync()
        best = min(best, time.perf_counter() - start)
    return 2 * source.numel() * 4 / best


def _rate_text(value: float, unit: str) -> str:
    return f"{value / 1e12:.3g} T{unit}" if value >= 1e12 else f"{value / 1e9:.3g} G{unit}"


def _cache_file(device: torch.device, precision: str, threads: int) -> Path:
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else platform.processor() or platform.machine())
    cpu = ""
    info = Path("/proc/cpuinfo")
    if info.exists():
        cpu = next((line for line in info.read_text(errors="replace").splitlines()
                    if line.lower().startswith("model name")), "")
    key = json.dumps([socket.gethostname(), cpu, os.cpu_count(), torch.__version__,
                      device.type, where, precision, threads])
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "iteralab-peaks" / f"{name}.json"


def _reuse(path: Path) -> Peak | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if 0 <= time.time() - float(found["at"]) <= REUSE_S:
            return Peak({str(k): float(v) for k, v in found["matmul"].items()},
                        found["bandwidth"], str(found["text"]), float(found["seconds"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _keep(path: Path, found: Peak) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic: a reader sees the old file or the new one.
        write_text(path, json.dumps({**asdict(found), "at": time.time()}))
    except OSError:
        pass  # no cache: the next process probes again


@functools.cache
def measure(device_name: str, precision: str, threads: int) -> Peak:
    """The peak of ``device_name`` (``cpu``, ``cuda``) in ``precision`` and fp32: this
    process's probe, or another's from the last :data:`REUSE_S` seconds on this machine."""
    device = torch.device(device_name)
    if os.environ.get(CACHE_VARIABLE, "1") == "0":
        return probe(device, precision, threads)
    path = _cache_file(device, precision, threads)
    found = _reuse(path)
    if found is None:
        found = probe(device, precision, threads)
        _keep(path, found)
    return found


def probe(device: torch.device, precision: str, threads: int) -> Peak:
    """Probe ``device`` in ``precision`` and fp32 now. Raises what torch raises when a
    precision cannot run."""
    kind = device.type
    began = time.perf_counter()
    rates: dict[str, float] = {}
    parts = []
    for name in dict.fromkeys(("fp32", precision)):
        best, shown = 0.0, ""
        for n in SIZES[kind]:
            rate, calls = matmul_rate(device, DTYPES[name], n, BUDGET_S[kind])
            if rate > best:
                best, shown = rate, f"{n}x{n}, best of {calls}"
        rates[name] = best
        parts.append(f"torch.mm {name} {_rate_text(best, 'FLOP/s')} ({shown})")
    copied = bandwidth(device, COPY_BYTES[kind])
    parts.append(f"copy {_rate_text(copied, 'B/s')} ({COPY_BYTES[kind] // 2**20} MiB, best of "
                 f"{COPY_REPEATS})")
    seconds = time.perf_counter() - began
    where = f"{threads} CPU thread(s)" if kind == "cpu" else torch.cuda.get_device_name(device)
    at = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    text = f"{'; '.join(parts)}; {where}; probed {at} in {seconds:.2f} s (pid {os.getpid()})"
    return Peak(rates, copied, text, seconds)


def catalog_line(device_name: str, gpu_name: str | None) -> str:
    """The GPU catalog's figures for the device, or why there are none (text for the
    Manifest's ``catalog_peaks``)."""
    if device_name != "cuda":
        return "n/a: cpu variant (the catalog lists GPUs)"
    try:
        cards = load_catalog()
    except Exception as exc:  # noqa: BLE001 - a broken catalog must not fail an attempt
        return f"catalog unreadable: {type(exc).__name__}"
    name = (gpu_name or "").strip()
    for gpu in cards:
        if name in gpu.device_names:
            dense = (f"{gpu.bf16_dense_tflops} TFLOP/s bf16 dense" if gpu.bf16_dense_tflops
                     is not None else "no bf16 figure")
            return (f"{gpu.slug} ({gpu.name}): {dense}, {gpu.bandwidth_gbps} GB/s "
                    f"(tariffs/gpus.csv, {gpu.source_date})")
    return f"not in the GPU catalog: {name or 'unnamed device'}"
