"""The machine's peak, measured by a short probe: matrix products and memory bandwidth.

What "utilisation" divides by. Run once per process and setting (device, precision,
threads; cached), after an attempt's timed phases so it never disturbs them:

* **matrix multiply**: ``torch.mm`` of square matrices in the variant's precision (and in
  fp32 beside it), a few sizes (CPU 256 and 512, GPU 4096 and 8192) and both operand layouts
  a linear layer can meet (:data:`LAYOUTS`), each repeated for a short time budget; the best
  rate of any size and layout, ``2*n**3 / seconds``, is the peak. On the CPU
  it runs with the attempt's torch threads; on CUDA each timing is between synchronisations;
* **memory bandwidth**: a tensor copied into another (32 MiB on the CPU, 1 GiB on a GPU),
  best of a few: ``2 * bytes / seconds`` (read and written).

Kept short (about 0.5-1 s on this project's 2-core CPU, under a second on a GPU). One probe
per campaign and machine: within a process by a cache, between the fresh worker processes of
a campaign by a small file in the temporary folder (``iteralab-peaks/``, keyed by the
campaign's workbook, host, CPU, torch version, device and threads). fp32 and the copy are
probed once; each further precision is probed when an attempt first needs it and added to
the same file, so every attempt of a campaign divides by the same peak of its precision (the
one its Manifest row shows) and no other campaign inherits a moment's load.
``ITERALAB_PEAK_CACHE=0`` probes in every process. A best-of-a-few is a floor for the true
peak: on a machine shared with other work the probe sees what was available then, so its
text names the cores other processes kept busy while it ran. A window that outran its peak
(utilisation above 1.05) has its precision probed once more for that attempt alone
(:func:`reprobe`), the higher figure used and named in its notes.
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
from toolkit.runner.instruments.machine_load import OthersMeter

#: Square sizes probed, by device type.
SIZES = {"cpu": (256, 512), "cuda": (4096, 8192)}
#: Seconds each size is repeated for (at least two calls after one untimed call).
BUDGET_S = {"cpu": 0.05, "cuda": 0.08}
#: Bytes copied for the bandwidth probe, by device type.
COPY_BYTES = {"cpu": 32 * 2**20, "cuda": 2**30}
COPY_REPEATS = 5
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
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


#: The operand layouts probed: plain row-major ``a @ b`` and ``a @ b.T`` with ``b``
#: row-major, the product ``nn.Linear`` computes (``x @ W.T``). Some backends run one far
#: faster than the other (bf16 on an AVX2 CPU: about 1.4 against 10-18 GFLOP/s), and the
#: model's layers use the second: the peak is the best of both.
LAYOUTS = ("a @ b", "a @ b.T")


def matmul_rate(
    device: torch.device, dtype: torch.dtype, n: int, budget_s: float
) -> tuple[float, int, str]:
    """Best FLOP/s of n x n products within ``budget_s`` per layout (:data:`LAYOUTS`); the
    calls timed and the layout of the best."""
    sync = _sync(device)
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    best, calls, layout = float("inf"), 0, LAYOUTS[0]
    for name, right in zip(LAYOUTS, (b, b.t()), strict=True):
        torch.mm(a, right)  # first call: kernel choice, allocations
        sync()
        timed, began = 0, time.perf_counter()
        while timed < 2 or time.perf_counter() - began < budget_s:
            start = time.perf_counter()
            torch.mm(a, right)
            sync()
            seconds = time.perf_counter() - start
            if seconds < best:
                best, layout = seconds, name
            timed += 1
        calls += timed
    return 2 * n**3 / best, calls, layout


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


def _cache_file(device: torch.device, threads: int, campaign: str) -> Path:
    where = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else platform.processor() or platform.machine()
    )
    cpu = ""
    info = Path("/proc/cpuinfo")
    if info.exists():
        cpu = next(
            (
                line
                for line in info.read_text(errors="replace").splitlines()
                if line.lower().startswith("model name")
            ),
            "",
        )
    key = json.dumps(
        [
            campaign,
            socket.gethostname(),
            cpu,
            os.cpu_count(),
            torch.__version__,
            device.type,
            where,
            threads,
        ]
    )
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "iteralab-peaks" / f"{name}.json"


def _reuse(path: Path) -> Peak | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        return Peak(
            {str(k): float(v) for k, v in found["matmul"].items()},
            found["bandwidth"],
            str(found["text"]),
            float(found["seconds"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep(path: Path, found: Peak) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic: a reader sees the old file or the new one.
        write_text(path, json.dumps(asdict(found)))
    except OSError:
        pass  # no cache: the next process probes again


@functools.cache
def measure(device_name: str, precision: str, threads: int, campaign: str = "") -> Peak:
    """The peak of ``device_name`` (``cpu``, ``cuda``) in ``precision`` and fp32 for the
    campaign whose workbook is ``campaign``: the probe an earlier process of it made on this
    machine, completed with ``precision`` when that one lacked it, else a new probe. Without
    ``campaign``, this process's own probe."""
    device = torch.device(device_name)
    if not campaign or os.environ.get(CACHE_VARIABLE, "1") == "0":
        return probe(device, precision, threads)
    path = _cache_file(device, threads, campaign)
    found = _reuse(path)
    if found is not None and precision in found.matmul:
        return found
    if found is None:
        found = probe(device, precision, threads)
    else:  # fp32 and the copy stay as first probed: one peak per precision per campaign
        more = probe(device, precision, threads, with_fp32=False)
        found = Peak(
            {**found.matmul, **more.matmul},
            found.bandwidth,
            f"{found.text} | then {more.text}",
            found.seconds + more.seconds,
        )
    _keep(path, found)
    return found


def reprobe(device_name: str, precision: str, threads: int) -> Peak:
    """``precision`` alone probed again now, for a window that outran the campaign's peak
    (:class:`toolkit.runner.instruments.achieved.Reprobe`); the campaign's file is left as
    it was."""
    return probe(torch.device(device_name), precision, threads, with_fp32=False)


def probe(device: torch.device, precision: str, threads: int, with_fp32: bool = True) -> Peak:
    """Probe ``device`` in ``precision`` (and fp32 and the copy, ``with_fp32``) now. Raises
    what torch raises when a precision cannot run."""
    kind = device.type
    began = time.perf_counter()
    rates: dict[str, float] = {}
    parts = []
    copied = None
    with OthersMeter() as others:
        for name in dict.fromkeys((("fp32",) if with_fp32 else ()) + (precision,)):
            best, shown = 0.0, ""
            for n in SIZES[kind]:
                rate, calls, layout = matmul_rate(device, DTYPES[name], n, BUDGET_S[kind])
                if rate > best:
                    best, shown = rate, f"{n}x{n} {layout}, best of {calls}"
            rates[name] = best
            parts.append(f"torch.mm {name} {_rate_text(best, 'FLOP/s')} ({shown})")
        if with_fp32:
            copied = bandwidth(device, COPY_BYTES[kind])
            parts.append(
                f"copy {_rate_text(copied, 'B/s')} ({COPY_BYTES[kind] // 2**20} MiB, "
                f"best of {COPY_REPEATS})"
            )
    seconds = time.perf_counter() - began
    where = f"{threads} CPU thread(s)" if kind == "cpu" else torch.cuda.get_device_name(device)
    at = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    load = (
        "other processes' load not known (no /proc/stat)"
        if others.cores is None
        else f"other processes kept {others.cores:.2f} cores busy meanwhile"
    )
    text = (
        f"{'; '.join(parts)}; {where}; probed {at} in {seconds:.2f} s (pid {os.getpid()}; {load})"
    )
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
            dense = (
                f"{gpu.bf16_dense_tflops} TFLOP/s bf16 dense"
                if gpu.bf16_dense_tflops is not None
                else "no bf16 figure"
            )
            return (
                f"{gpu.slug} ({gpu.name}): {dense}, {gpu.bandwidth_gbps} GB/s "
                f"(tariffs/gpus.csv, {gpu.source_date})"
            )
    return f"not in the GPU catalog: {name or 'unnamed device'}"
