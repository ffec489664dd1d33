"""The machine's peak, measured by a short probe beside every attempt: matrix products and
memory bandwidth.

What "utilisation" divides by. Run in each attempt's process after its timed phases, so it
never disturbs them:

* **matrix multiply**: ``torch.mm`` of square matrices in the variant's precision (and in
  fp32 beside it), a few sizes (CPU 256 and 512, GPU 4096 and 8192) and both operand layouts
  a linear layer can meet (:data:`LAYOUTS`), each repeated for a short time budget; the best
  rate of any size and layout, ``2*n**3 / seconds``, is the probe's peak;
* **memory bandwidth**: a tensor copied into another (32 MiB on the CPU, 1 GiB on a GPU),
  best of a few: ``2 * bytes / seconds`` (read and written).

**Which clock.** On a GPU each product is timed by a pair of CUDA events (the device's own
span, whatever the host was doing). On the CPU a wall clock measures the machine's load as
much as the product: beside other jobs one probe read fp32 at 197 GFLOP/s and the next at
4.2. The process CPU clock alone does not fix it with several threads: ``process_time`` sums
the threads, and dividing by the thread count misreads both ways (measured on this project's
2-core host under load: a bf16 product that ran on one thread while the other slept read 2x
too fast; an fp32 one whose threads spun at a barrier waiting for a core read 10x too slow).
So the rule is: **one thread, its own CPU clock** (``time.thread_time``, torch set to one
intra-op thread for the probe), which counts only the time that thread held a core (stable
under the same load: 148-150 GFLOP/s fp32, 860 bf16), **times the cores the attempt's
threads can occupy** (``min(threads, physical cores)``, :func:`cores_for`). That is the
ceiling of the attempt's threads if each ran as fast as one alone: a turbo clock a lone core
reaches and imperfect scaling only make it higher, so utilisation errs low, never above 1.
The copy keeps the attempt's threads on the wall clock (memory bandwidth does not scale
with cores, so one thread's copy would not stand for the machine's); the campaign keeps its
best copy, as for the products.

**Beside every attempt, the campaign's maximum.** Each attempt's probe is short (about
0.2-0.5 s on this project's 2-core CPU, more under load; under half a second on a GPU;
:attr:`Peak.seconds` is its cost, recorded on the attempt's row with the load it saw) and
merged into a small file of the campaign in the temporary folder (``iteralab-peaks/``,
keyed by the campaign's workbook, host, CPU, torch version, device and threads) that keeps
the best rate per precision and operand layout and the best copy seen by any of its attempts. An attempt
divides by that maximum (its own probe included): a probe is a floor for the true peak,
since other load can only slow it, so the highest of many short probes is the closest to
the machine's. ``ITERALAB_PEAK_CACHE=0`` keeps no file: each attempt divides by its own
probe. A window that outran its peak (utilisation above 1.05) has its precision probed once
more for that attempt alone (:func:`reprobe`), the higher figure used and named in its notes.
On a GPU the catalog's figures (``tariffs/gpus.csv``) go beside the measurement, never in
its place.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from toolkit.planner.gpus import load_catalog
from toolkit.plumbing.atomic import write_text
from toolkit.runner.instruments.machine_load import OthersMeter

#: Square sizes probed, by device type.
SIZES = {"cpu": (256, 512), "cuda": (4096, 8192)}
#: Seconds each size and layout is repeated for (at least two calls after one untimed call):
#: short, since every attempt probes and the campaign keeps the best.
BUDGET_S = {"cpu": 0.02, "cuda": 0.03}
#: Bytes copied for the bandwidth probe, by device type.
COPY_BYTES = {"cpu": 32 * 2**20, "cuda": 2**30}
COPY_REPEATS = 5
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CACHE_VARIABLE = "ITERALAB_PEAK_CACHE"
#: The operand layouts probed: plain row-major ``a @ b`` and ``a @ b.T`` with ``b``
#: row-major, the product ``nn.Linear`` computes (``x @ W.T``). Some backends run one far
#: faster than the other (bf16 on an AVX2 CPU: about 1.4 against 10-18 GFLOP/s), and the
#: model's layers use the second: the peak is the best of both.
LAYOUTS = ("a @ b", "a @ b.T")


@dataclass(frozen=True, kw_only=True)
class Peak:
    """A peak: FLOP/s per precision, bytes/s and how they were measured.

    For one probe, ``seconds`` is what it took and ``others_share`` the part of the machine
    other processes took meanwhile (None where the OS does not say). For a campaign's
    maximum (:func:`measure`), ``this`` is the probe the attempt just ran, merged into it."""

    matmul: dict[str, float]
    bandwidth: float | None
    text: str
    seconds: float
    others_share: float | None = None
    this: Peak | None = None
    #: Best FLOP/s per precision and operand layout (:data:`LAYOUTS`).
    layouts: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def probe(self) -> Peak:
        """The attempt's own probe: ``this``, or the peak itself when it is one probe."""
        return self.this or self


def physical_cores() -> int:
    """Physical cores among the CPUs this process may run on (SMT siblings counted once),
    from ``/sys``; the logical CPU count where that cannot be read."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
    seen = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            seen.add(
                (
                    (topology / "physical_package_id").read_text().strip(),
                    (topology / "core_id").read_text().strip(),
                )
            )
        except OSError:
            return len(cpus)
    return max(1, len(seen))


def cores_for(threads: int) -> int:
    """The cores ``threads`` torch threads can occupy: the factor one thread's rate is
    multiplied by to stand for the attempt's threads."""
    return max(1, min(threads, physical_cores()))


def _timer(device: torch.device) -> Callable[[Callable[[], object]], float]:
    """Seconds of one call: CUDA events on a GPU; this thread's CPU clock on the CPU."""
    if device.type == "cuda":

        def on_device(call: Callable[[], object]) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / 1000.0

        return on_device

    def on_thread(call: Callable[[], object]) -> float:
        began = time.thread_time()
        call()
        return time.thread_time() - began

    return on_thread


@contextmanager
def _one_thread(device: torch.device) -> Iterator[None]:
    """On the CPU, torch on one intra-op thread for the block (the caller's thread does the
    work, so its CPU clock covers it); the attempt's setting restored after."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def matmul_rate(
    device: torch.device, dtype: torch.dtype, n: int, budget_s: float
) -> tuple[dict[str, float], int]:
    """Best FLOP/s of n x n products per layout (:data:`LAYOUTS`), each repeated for
    ``budget_s`` of wall time, timed by :func:`_timer`; and the calls timed."""
    timed_call = _timer(device)
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    rates: dict[str, float] = {}
    calls = 0
    for name, right in zip(LAYOUTS, (b, b.t()), strict=True):

        def product(right: torch.Tensor = right) -> torch.Tensor:
            return torch.mm(a, right)

        product()  # first call: kernel choice, allocations
        if device.type == "cuda":
            torch.cuda.synchronize()
        best, timed, began = float("inf"), 0, time.perf_counter()
        while timed < 2 or time.perf_counter() - began < budget_s:
            best = min(best, timed_call(product))
            timed += 1
        rates[name] = 2 * n**3 / max(best, 1e-9)
        calls += timed
    return rates, calls


def bandwidth(device: torch.device, size: int) -> float:
    """Best bytes/s of copying ``size`` bytes into another buffer (read + write): CUDA
    events on a GPU, the wall clock with the attempt's threads on the CPU."""
    source = torch.ones(size // 4, device=device)
    target = torch.empty_like(source)
    target.copy_(source)
    timed_call = _timer(device) if device.type == "cuda" else _wall
    best = min(timed_call(lambda: target.copy_(source)) for _ in range(COPY_REPEATS))
    return 2 * source.numel() * 4 / max(best, 1e-9)


def _wall(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def _rate_text(value: float, unit: str) -> str:
    return f"{value / 1e12:.3g} T{unit}" if value >= 1e12 else f"{value / 1e9:.3g} G{unit}"


def _load_text(share: float | None, cores: float | None) -> str:
    if share is None or cores is None:
        return "other processes' load not known (no /proc/stat)"
    return f"other processes took {share:.0%} of the machine ({cores:.2f} cores) meanwhile"


def probe(device: torch.device, precision: str, threads: int, with_fp32: bool = True) -> Peak:
    """Probe ``device`` in ``precision`` (and fp32 and the copy, ``with_fp32``) now, counting
    the other processes' load meanwhile. Raises what torch raises when a precision cannot
    run."""
    kind = device.type
    scale = cores_for(threads) if kind == "cpu" else 1
    began = time.perf_counter()
    rates: dict[str, float] = {}
    layouts: dict[str, dict[str, float]] = {}
    parts = []
    copied = None
    with OthersMeter() as others:
        with _one_thread(device):
            for name in dict.fromkeys((("fp32",) if with_fp32 else ()) + (precision,)):
                layouts[name], shown = _best_of_sizes(device, name, scale)
                rates[name] = max(layouts[name].values())
                parts.append(f"torch.mm {name} {_rate_text(rates[name], 'FLOP/s')} ({shown})")
        if with_fp32:
            copied = bandwidth(device, COPY_BYTES[kind])
            parts.append(
                f"copy {_rate_text(copied, 'B/s')} ({COPY_BYTES[kind] // 2**20} MiB, "
                f"best of {COPY_REPEATS}, wall clock)"
            )
    seconds = time.perf_counter() - began
    clock = (
        f"one thread's CPU clock x {scale} core(s) for {threads} CPU thread(s)"
        if kind == "cpu"
        else f"CUDA events on {torch.cuda.get_device_name(device)}"
    )
    at = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    text = (
        f"{'; '.join(parts)}; {clock}; probed {at} in {seconds:.2f} s (pid {os.getpid()}; "
        f"{_load_text(others.share, others.cores)})"
    )
    return Peak(
        matmul=rates,
        bandwidth=copied,
        text=text,
        seconds=seconds,
        others_share=others.share,
        layouts=layouts,
    )


def _best_of_sizes(
    device: torch.device, precision: str, scale: int
) -> tuple[dict[str, float], str]:
    """Best FLOP/s per layout over the device's sizes, times ``scale``; and how the best of
    all was found (size, layout, calls)."""
    kind = device.type
    best: dict[str, float] = {}
    shown, top = "", 0.0
    for n in SIZES[kind]:
        found, calls = matmul_rate(device, DTYPES[precision], n, BUDGET_S[kind])
        for layout, rate in found.items():
            best[layout] = max(best.get(layout, 0.0), rate * scale)
            if rate * scale > top:
                top, shown = rate * scale, f"{n}x{n} {layout}, best of {calls}"
    return best, shown


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
            "campaign maximum",
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


@dataclass
class Maxima:
    """A campaign's best figures so far on one machine: FLOP/s per precision and operand
    layout, the copy's bytes/s, the text of the probe that set each (by precision, and
    ``copy``), and how many probes were merged."""

    layouts: dict[str, dict[str, float]] = field(default_factory=dict)
    bandwidth: float | None = None
    sources: dict[str, str] = field(default_factory=dict)
    probes: int = 0

    def merged(self, this: Peak) -> Maxima:
        """These maxima with ``this`` probe added: the higher rate per precision and layout,
        the higher copy, and the text of the probe that set each."""
        layouts = {p: dict(by) for p, by in self.layouts.items()}
        sources = dict(self.sources)
        copy = self.bandwidth
        for precision, by_layout in this.layouts.items():
            kept = layouts.setdefault(precision, {})
            before = max(kept.values(), default=0.0)
            for layout, rate in by_layout.items():
                kept[layout] = max(kept.get(layout, 0.0), rate)
            if this.matmul[precision] > before:
                sources[precision] = this.text
        if this.bandwidth is not None and this.bandwidth > (copy or 0.0):
            copy, sources["copy"] = this.bandwidth, this.text
        return Maxima(layouts, copy, sources, self.probes + 1)

    def peak(self, this: Peak) -> Peak:
        """The maxima as a :class:`Peak` whose text says which probe set each figure."""
        matmul = {p: max(by.values()) for p, by in self.layouts.items() if by}
        figures = [f"{p} {_rate_text(rate, 'FLOP/s')}" for p, rate in matmul.items()]
        if self.bandwidth is not None:
            figures.append(f"copy {_rate_text(self.bandwidth, 'B/s')}")
        by_source: dict[str, list[str]] = {}
        for name, source in self.sources.items():
            by_source.setdefault(source, []).append(name)
        origins = "; ".join(f"{' and '.join(names)} from: {s}" for s, names in by_source.items())
        text = (
            f"maximum of {self.probes} probe(s) of this campaign on this machine: "
            f"{', '.join(figures)}. {origins}"
        )
        return Peak(
            matmul=matmul,
            bandwidth=self.bandwidth,
            text=text,
            seconds=this.seconds,
            others_share=this.others_share,
            this=this,
            layouts=self.layouts,
        )


def _reuse(path: Path) -> Maxima:
    """The campaign's maxima so far: none when there is no file yet or it cannot be read."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        copy = found["bandwidth"]
        return Maxima(
            {
                str(p): {str(k): float(v) for k, v in by.items()}
                for p, by in found["layouts"].items()
            },
            None if copy is None else float(copy),
            {str(k): str(v) for k, v in found["sources"].items()},
            int(found["probes"]),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Maxima()


def _keep(path: Path, merged: Maxima) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic: a reader sees the old file or the new one.
        write_text(path, json.dumps(asdict(merged)))
    except OSError:
        pass  # no file: the next attempt's maximum starts from its own probe


def measure(device_name: str, precision: str, threads: int, campaign: str = "") -> Peak:
    """Probe ``device_name`` (``cpu``, ``cuda``) in ``precision``, fp32 and the copy now, and
    merge the probe into the maxima of the campaign whose workbook is ``campaign``: the
    campaign's maximum so far, this probe included (its ``this``). Without ``campaign``, or
    with ``ITERALAB_PEAK_CACHE=0``, the probe alone."""
    device = torch.device(device_name)
    this = probe(device, precision, threads)
    if not campaign or os.environ.get(CACHE_VARIABLE, "1") == "0":
        return this
    path = _cache_file(device, threads, campaign)
    merged = _reuse(path).merged(this)
    _keep(path, merged)
    return merged.peak(this)


def reprobe(device_name: str, precision: str, threads: int) -> Peak:
    """``precision`` alone probed again now, for a window that outran the campaign's peak
    (:class:`toolkit.runner.instruments.achieved.Reprobe`); the campaign's file is left as
    it was."""
    return probe(torch.device(device_name), precision, threads, with_fp32=False)


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
