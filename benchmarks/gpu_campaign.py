"""The GPU session's campaign, second edition: the sample campaign on the card, merged with a
CPU host's campaign of the same lock into one decision.

One command for a lent GPU machine (``gpu_session.sh`` runs it; about 5 minutes on an H200):

1. **Workbook**: the sample corpus (1,000 items), 5 repetitions, process policy ``fresh``;
   series 1 batch 1/4/8 fp32 on the card, series 2 the same in bf16; where the layout declares
   them, an ``overlapped`` input pipeline (Variants ``input_pipeline``) and bucketed padding
   (``padding`` = ``bucket-32``), each skipped with a printed line otherwise; onnxruntime's
   CUDA provider where the image has it; and ``c8-fp32``, batch 8 fp32 on this machine's CPU.
   Tariffs: the shipped catalog, with EXAMPLE prices for the card and the CPU host (typed for
   the session: not quotes).
2. **The card's campaign**: ``iteralab run --variant ...`` of the card's variants, through the
   real CLI (the fork server forks each attempt's worker: the breakdown says so).
3. **The CPU host's campaign**: a copy of the folder after it, ``iteralab run --variant
   c8-fp32``; then ``iteralab merge`` of that copy into the card's, and ``iteralab report``:
   one decision over both machines.
4. **What it prints**: how the workers started and the worker start per attempt; per variant
   the windows of repetition 1 and 2 (target: within 10 %), the first cold pass where the
   layout records it, the share of the window the GPU was busy (``forward_device_s /
   device_s``: CUDA events around the forward calls, over the window's own events); the
   prediction hashes of CPU fp32 against the card's fp32 (identity, or how many agree); the
   card's speed-up over the CPU host for batch 8 fp32 (overlapped where declared).

Exit codes: 0 every check passed and every target met (a dry run: every attempt completed), 1
otherwise, 3 no CUDA device.
``--cpu-dry-run`` runs the same plumbing on the CPU with a few items (the card's rows on the
CPU too): a check of this script, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import common
from gpu_common import ATTEMPT_TIMEOUT_S, match_card

CPU_HOST = "c8-fp32"
#: torch's switch for an availability check through NVML, which leaves the CUDA driver alone.
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
COLD_SHAPE_TOLERANCE = 0.10  # repetition 1's window / repetition 2's, less 1
EXAMPLE_SOURCE = "EXAMPLE price typed for the GPU session: not a quote, not a measurement"
CPU_SLUG = "example-cpu-host"
#: The card rows' slug in a CPU dry run (they run on the CPU too, priced apart).
DRY_RUN_SLUG = "example-dry-run-card"
#: An EXAMPLE schedule (the plan a decision prices needs one), ending at the deadline.
SCHEDULE = (
    {
        "phase": "install",
        "start": "2026-12-07T09:00+01:00",
        "end": "2026-12-07T11:00+01:00",
        "notes": "EXAMPLE schedule of the GPU session",
    },
    {"phase": "comparison", "start": "2026-12-07T11:00+01:00", "end": "2026-12-10T18:00+01:00"},
    {"phase": "export", "start": "2026-12-10T18:00+01:00", "end": "2026-12-11T09:00+01:00"},
)
#: Typed, labelled EXAMPLE prices (USD per 7-day lot of one card or host).
EXAMPLE_PRICES = {"card": Decimal("900.00"), "cpu": Decimal("35.00")}


def declared(column: str) -> bool:
    """Whether this layout declares the Variants column."""
    from toolkit import layout

    return any(c.name == column for c in layout.VARIANTS.columns)


def accepts_padding(value: str) -> bool:
    """Whether this toolkit locks a variant whose ``padding`` is ``value`` (a trial lock of
    one row, in memory)."""
    from toolkit.errors import ProtocolError
    from toolkit.evidence import locking
    from toolkit.workbook.model import WorkbookData

    data = WorkbookData.empty()
    data.forms["Protocol"].update(common.protocol("trial"))
    data.append("Variants", common.variant("trial", 8, padding=value))
    try:
        locking.lock(data)
    except ProtocolError as exc:
        return "padding" not in str(exc)
    return True


def ort_cuda_skipped() -> str | None:
    """Why onnxruntime's CUDA provider is not in the campaign; None when it is."""
    try:
        import onnxruntime
    except ImportError:
        return "onnxruntime is not installed (pip install onnxruntime-gpu)"
    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        return f"onnxruntime {onnxruntime.__version__} has no CUDA provider here (onnxruntime-gpu)"
    return None


def session_variants(
    device: str, slug: str, encoder: Path | None, ort: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """The Variants rows and a line per variant family left out, saying why."""
    model = {"model_path": str(encoder.resolve())} if encoder else {}
    card = {"device": device, "gpu_slug": slug, "rental_id": "example-card", **model}
    rows = [
        common.variant(f"g{b}-{p}", b, p, **card, series=s)
        for s, p in ((1, "fp32"), (2, "bf16"))
        for b in (1, 4, 8)
    ]
    skipped = []
    extra: list[tuple[str, str, dict[str, Any]]] = []
    if declared("input_pipeline"):
        extra.append(("g8-fp32-overlapped", "fp32", {"input_pipeline": "overlapped"}))
    else:
        skipped.append(
            "overlapped input pipeline: skipped: this layout has no Variants input_pipeline column"
        )
    if accepts_padding("bucket-32"):
        for precision in ("fp32", "bf16"):
            extra.append((f"g8-{precision}-bucket32", precision, {"padding": "bucket-32"}))
    else:
        skipped.append(
            "bucketed padding: skipped: this layout's Variants padding does not accept bucket-32"
        )
    if ort:
        extra.append(("g8-ort-fp32", "fp32", {"engine": "onnxruntime"}))
    for series, (vid, precision, changed) in enumerate(extra, start=3):
        rows.append(common.variant(vid, 8, precision, **card, series=series, **changed))
    cpu = {"device": "cpu", "gpu_slug": CPU_SLUG, "rental_id": "example-cpu", **model}
    rows.append(common.variant(CPU_HOST, 8, "fp32", **cpu, series=len(extra) + 3))
    return declare_bases(rows), skipped


def declare_bases(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each later-series row's base (the series-1 row of its batch) and the columns it
    changes, as a person declares them (R6)."""
    from toolkit.evidence.validate import work_differences

    firsts = {r["batch_size"]: r for r in rows if r["series"] == 1}
    out = []
    for row in rows:
        if row["series"] != 1:
            base = firsts[row["batch_size"]]
            changes = ", ".join(work_differences(base, row))
            row = {**row, "base_variant": base["variant_id"], "changes": changes}
        out.append(row)
    return out


def example_money(slug: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tariffs and Rentals rows with the session's EXAMPLE prices, for the card and the host."""
    tariffs, rentals = [], []
    for key, (gpu, name, rental) in {
        "card": (slug, f"{slug} (EXAMPLE price)", "example-card"),
        "cpu": (CPU_SLUG, "CPU host of the GPU session (EXAMPLE price)", "example-cpu"),
    }.items():
        tariffs.append(
            {
                "catalog_date": "2026-12-05",
                "gpu_slug": gpu,
                "gpu_name": name,
                "cards_per_lot": 1,
                "plan_days": 7,
                "price_per_lot_usd": EXAMPLE_PRICES[key],
                "source": EXAMPLE_SOURCE,
            }
        )
        rentals.append(
            {
                "rental_id": rental,
                "provider": "example provider (GPU session)",
                "reference": f"EXAMPLE-{key.upper()}",
                "gpu_slug": gpu,
                "cards_per_lot": 1,
                "lots": 1,
                "billing": "flat-7d",
                "market": "on-demand",
                "currency": "USD",
                "source": EXAMPLE_SOURCE + " (priced from Tariffs)",
            }
        )
    return tariffs, rentals


def build(
    folder: Path,
    items: int,
    repetitions: int,
    rows: list[dict[str, Any]],
    slug: str,
    head: Path | None,
) -> Path:
    """The locked workbook in ``folder``: corpus slice, head, ``rows``, EXAMPLE prices."""
    from toolkit.evidence import locking
    from toolkit.money import tariffs as catalog
    from toolkit.workbook import store
    from toolkit.workbook.model import WorkbookData

    common.prepare_folder(folder, items)
    # The tuning data the Protocol names, apart from the corpus (R2): the workbook validates.
    shutil.copy(common.SAMPLES / "calibration.jsonl", folder / "calibration.jsonl")
    if head is not None:
        shutil.copytree(head, folder / "head", dirs_exist_ok=True)
    data = WorkbookData.empty()
    form = common.protocol("g1-fp32", repetitions, policy="fresh")
    form["tuning_data"] = "calibration.jsonl: chapters apart from the corpus"
    data.forms["Protocol"].update(form)
    for row in rows:
        data.append("Variants", row)
    examples, rentals = example_money(slug)
    for row in [*catalog.tariff_rows(catalog.load_catalog()), *examples]:
        data.append("Tariffs", row)
    for row in rentals:
        data.append("Rentals", row)
    for phase in SCHEDULE:
        data.append("Schedule", phase)
    book = folder / "session.xlsx"
    locking.lock(data)
    store.save(data, book)
    return book


def run_until(book: Path, deadline_s: float | None, *options: str) -> float:
    """``iteralab run BOOK OPTIONS``, stopped as Ctrl-C stops it once ``deadline_s`` passes
    (its attempts so far recorded); its wall time. Exit on another failure. Meanwhile
    nvidia-smi says which processes hold memory on the card: the campaign's own should not."""
    import os
    import signal
    import subprocess
    import time

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(common.ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "toolkit", "run", str(book), "--quiet"]
    command += [f"--timeout={ATTEMPT_TIMEOUT_S}", *options]
    start = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=common.ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    watch = CardWatch()
    watch.start()
    try:
        out, _ = proc.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate()
        print(
            f"  (stopped at the session's deadline, {deadline_s:g} s: `iteralab run --resume` "
            "finishes it)"
        )
    finally:
        watch.stop()
    for line in out.strip().splitlines():
        print(f"  | {line}")
    print(watch.said(proc.pid))
    if proc.returncode not in (0, 130):
        raise SystemExit(f"error: iteralab run exited with {proc.returncode}")
    return time.perf_counter() - start


class CardWatch:
    """Samples ``nvidia-smi --query-compute-apps`` every 2 s in a thread: the largest memory
    each process held on the card."""

    def __init__(self) -> None:
        import threading

        self.peaks: dict[int, int] = {}
        #: The pids seen that this machine's process table had at the time.
        self.ours: set[int] = set()
        self.samples = 0
        self.missing: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import os
        import subprocess

        query = ["nvidia-smi", "--query-compute-apps=pid,used_memory"]
        while not self._stop.is_set():
            try:
                out = subprocess.run(
                    [*query, "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=20,
                ).stdout
            except (OSError, subprocess.SubprocessError) as exc:
                self.missing = f"nvidia-smi did not answer ({exc})"
                return
            self.samples += 1
            for line in out.splitlines():
                pid, _, mib = line.partition(",")
                if pid.strip().isdigit() and mib.strip().isdigit():
                    key = int(pid)
                    self.peaks[key] = max(self.peaks.get(key, 0), int(mib))
                    if os.path.exists(f"/proc/{key}"):  # nvidia-smi's pids are this machine's
                        self.ours.add(key)
            self._stop.wait(2.0)

    def said(self, campaign_pid: int) -> str:
        """One line: the campaign process's memory on the card, and its workers'."""
        if self.missing:
            return f"CUDA memory by process: not watched: {self.missing}"
        if self.peaks and not self.ours:
            return (
                f"CUDA memory by process: {len(self.peaks)} process(es) seen, none of them in "
                "this machine's process table (another PID namespace): not attributable"
            )
        mine = self.peaks.get(campaign_pid)
        others = [m for pid, m in self.peaks.items() if pid != campaign_pid]
        return (
            f"CUDA memory by process ({self.samples} nvidia-smi samples): the campaign's own "
            f"process (pid {campaign_pid}) "
            + (f"held up to {mine} MiB on the card" if mine else "held none")
            + f"; {len(others)} other process(es) (workers, the pre-flight) up to "
            f"{max(others, default=0)} MiB"
        )


def cli(*args: str) -> str:
    """``iteralab ARGS`` through the real CLI; its output (exit on failure)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "toolkit", *args],
        cwd=common.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.strip().splitlines():
        print(f"  | {line}")
    if done.returncode != 0:
        print(done.stderr.strip()[-2000:], file=sys.stderr)
        raise SystemExit(f"error: iteralab {args[0]} exited with {done.returncode}")
    return done.stdout


# ---------------------------------------------------------------- what the session reads


def completed(book: Path) -> dict[str, list[dict[str, Any]]]:
    """The completed Attempts rows by variant, in repetition order."""
    from toolkit.workbook import store

    by: dict[str, list[dict[str, Any]]] = {}
    for row in store.read(book).tables["Attempts"]:
        if row.get("status") == "completed":
            by.setdefault(str(row["variant_id"]), []).append(row)
    return {v: sorted(rows, key=lambda r: int(r["repetition"])) for v, rows in by.items()}


def last_run(book: Path) -> dict[str, Any]:
    """The last run's breakdown recorded beside ``book``."""
    path = book.with_name(book.stem + ".runs.jsonl")
    return dict(json.loads(path.read_text(encoding="utf-8").splitlines()[-1]))


def worker_start(run: dict[str, Any]) -> float | None:
    """Seconds per attempt to start its worker and take its record."""
    attempts = int(run.get("attempts") or 0)
    return run["overhead"]["worker_start_s"] / attempts if attempts else None


def cold_shapes(rows: list[dict[str, Any]]) -> tuple[float, float, float] | None:
    """Repetition 1's window, repetition 2's, and their ratio; None with fewer than two."""
    first = [r for r in rows if int(r["repetition"]) == 1]
    second = [r for r in rows if int(r["repetition"]) == 2]
    if not first or not second or not second[0].get("measured_s"):
        return None
    a, b = float(first[0]["measured_s"]), float(second[0]["measured_s"])
    return a, b, a / b


def gpu_busy(rows: list[dict[str, Any]]) -> float | None:
    """The median share of the window the GPU spent in the model's forward calls."""
    shares = [
        float(r["forward_device_s"]) / float(r["device_s"])
        for r in rows
        if r.get("forward_device_s") is not None and r.get("device_s")
    ]
    return statistics.median(shares) if shares else None


def predictions(book: Path, row: dict[str, Any]) -> dict[str, str]:
    from toolkit.evidence import corpus

    path = book.parent / str(row["predictions_path"])
    return {str(p["id"]): str(p["prediction"]) for p in corpus.read_predictions(path)}


def median_window(rows: list[dict[str, Any]]) -> float | None:
    windows = [float(r["measured_s"]) for r in rows if r.get("measured_s")]
    return statistics.median(windows) if windows else None


def variant_lines(by: dict[str, list[dict[str, Any]]], card: list[str]) -> tuple[list[str], bool]:
    """Per card variant: repetition 1 vs 2, cold pass, GPU-busy share; whether every variant
    met the cold-shape target."""
    lines, met = [], True
    for vid in card:
        rows = by.get(vid, [])
        cold = cold_shapes(rows)
        busy = gpu_busy(rows)
        passes = [float(r["cold_pass_s"]) for r in rows if r.get("cold_pass_s") is not None]
        ok = cold is not None and cold[2] <= 1 + COLD_SHAPE_TOLERANCE
        met = met and ok
        lines.append(
            f"  {vid}: {len(rows)} completed, median window {median_window(rows) or 0:.3f} s; "
            + (
                f"repetition 1 {cold[0]:.3f} s / repetition 2 {cold[1]:.3f} s = {cold[2]:.3f} "
                f"({'met' if ok else 'missed'}: <= {1 + COLD_SHAPE_TOLERANCE:.2f})"
                if cold
                else "repetition 1 vs 2: not two completed repetitions (missed)"
            )
            + (f"; cold pass median {statistics.median(passes):.3f} s" if passes else "")
            + (
                f"; GPU busy {busy:.1%} of the window (forward_device_s / device_s)"
                if busy is not None
                else "; GPU busy: no CUDA events recorded (not a CUDA attempt)"
            )
        )
    return lines, met


def identity(book: Path, by: dict[str, list[dict[str, Any]]], card_fp32: str) -> tuple[str, bool]:
    """CPU fp32 against the card's fp32 at batch 8: prediction hashes, agreement."""
    cpu, card = by.get(CPU_HOST, []), by.get(card_fp32, [])
    if not cpu or not card:
        return f"identity {CPU_HOST} vs {card_fp32}: not both completed", False
    same = cpu[0]["predictions_sha256"] == card[0]["predictions_sha256"]
    agree = common.agreement(predictions(book, cpu[0]), predictions(book, card[0]))
    return (
        f"identity {CPU_HOST} (CPU) vs {card_fp32} (card), fp32: prediction hashes "
        f"{'identical' if same else 'differ'} ({str(cpu[0]['predictions_sha256'])[:12]} vs "
        f"{str(card[0]['predictions_sha256'])[:12]}); predictions {agree}",
        same,
    )


def speedup(by: dict[str, list[dict[str, Any]]], card_variant: str) -> str:
    cpu, card = median_window(by.get(CPU_HOST, [])), median_window(by.get(card_variant, []))
    if not cpu or not card:
        return f"speed-up {card_variant} over {CPU_HOST}: not measured (an attempt missing)"
    return (
        f"speed-up {card_variant} (card) over {CPU_HOST} (this machine's CPU): "
        f"{cpu / card:.2f}x (median windows {card:.3f} s vs {cpu:.3f} s)"
    )


# ---------------------------------------------------------------- the session


def cuda_here() -> tuple[bool, str]:
    """Whether torch sees a CUDA device, asked through NVML: this process starts the
    campaign and should hold no CUDA state (nor a context on the card) while it runs."""
    import os

    before = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        import torch

        return bool(torch.cuda.is_available()), str(torch.__version__)
    finally:
        if before is None:
            os.environ.pop(NVML_CHECK, None)
        else:
            os.environ[NVML_CHECK] = before


def card_slug() -> str | None:
    """The catalog slug of the first visible card, from nvidia-smi's name and memory (no
    CUDA in this process); None without nvidia-smi or a matching row."""
    import subprocess

    from toolkit.planner import gpus

    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    name, _, mib = out.splitlines()[0].rpartition(",") if out.strip() else ("", "", "")
    if not name or not mib.strip().isdigit():
        return None
    gpu = match_card(name.strip(), int(mib) * 2**20, gpus.load_catalog())
    return None if gpu is None else str(gpu.slug)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=common.FULL_CORPUS_ITEMS)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--encoder", type=Path, default=None, help="model folder to use")
    parser.add_argument("--head", type=Path, default=None, help="head folder over the sample's")
    parser.add_argument("--card", default=None, help="the card's catalog slug (default: matched)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    parser.add_argument("--cpu-dry-run", action="store_true", help="the plumbing, on the CPU")
    parser.add_argument(
        "--deadline-s",
        type=float,
        default=None,
        help="stop the card's campaign (Ctrl-C: the running attempt recorded as interrupted) "
        "after this many seconds, so the CPU host, the merge and the report still run",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    cuda, torch_version = cuda_here()
    if not cuda and not args.cpu_dry_run:
        print(
            f"gpu_campaign needs a CUDA device: torch {torch_version} sees none here; "
            "--cpu-dry-run checks the plumbing only."
        )
        return 3
    slug = args.card or (DRY_RUN_SLUG if not cuda else card_slug())
    if slug is None:
        print(
            "error: this card matches no catalog row (nvidia-smi's name and memory): name "
            "it with --card SLUG"
        )
        return 1
    rows, skipped = session_variants(
        "cuda" if cuda else "cpu", slug, args.encoder, cuda and ort_cuda_skipped() is None
    )
    for line in skipped:
        print(line)
    if cuda and (why := ort_cuda_skipped()):
        print(f"onnxruntime CUDA provider: skipped: {why}")
    card = [str(r["variant_id"]) for r in rows if r["variant_id"] != CPU_HOST]
    with tempfile.TemporaryDirectory(prefix="gpu-campaign-") as tmp:
        base = args.keep or Path(tmp)
        book = build(base / "card", args.items, args.repetitions, rows, slug, args.head)
        print(
            f"campaign: {len(card)} card variants + {CPU_HOST} x {args.repetitions} "
            f"repetitions, {args.items} items, process policy fresh; card {slug}"
        )
        wall = run_until(book, args.deadline_s, *(f"--variant={v}" for v in card))
        run = last_run(book)
        shutil.copytree(base / "card", base / "cpu-host")
        cpu_book = base / "cpu-host" / book.name
        run_until(cpu_book, None, f"--variant={CPU_HOST}")
        cli("merge", str(book), str(cpu_book))
        cli("report", str(book), "--no-png")
        return summary(book, run, wall, card, args.cpu_dry_run)


def summary(book: Path, run: dict[str, Any], wall: float, card: list[str], dry: bool) -> int:
    """Print what the session measured; the exit code (a dry run's timings are this shared
    CPU's: its targets are information, only its attempts must complete)."""
    by = completed(book)
    start = worker_start(run)
    print(
        f"card campaign: wall {wall:.1f} s, {run['attempts']} attempts; workers "
        f"{run.get('launcher')}"
    )
    start_ok = start is not None and start <= 0.2
    print(
        f"worker start per attempt: {start or 0:.3f} s ({'met' if start_ok else 'missed'}: "
        "<= 0.2 s)"
    )
    attempts = max(int(run["attempts"]), 1)
    parts = ", ".join(
        f"{k.removesuffix('_s')} {v / attempts:.3f}" for k, v in run["overhead"].items()
    )
    print(
        f"the card campaign's overhead per attempt (s): {parts}; in all "
        f"{run['overhead_s'] / attempts:.3f} (driver probe and peak probe: around_phases)"
    )
    lines, cold_ok = variant_lines(by, card)
    print("per variant (windows of repetition 1 vs 2, cold pass, GPU busy):")
    for line in lines:
        print(line)
    said, same = identity(book, by, "g8-fp32")
    print(said)
    overlapped = "g8-fp32-overlapped" if "g8-fp32-overlapped" in card else "g8-fp32"
    print(speedup(by, overlapped))
    missing = [v for v in [*card, CPU_HOST] if not by.get(v)]
    if missing:
        print(f"no completed attempt: {', '.join(missing)}")
    ok = not missing and (dry or (start_ok and cold_ok))
    if dry:
        print("dry run: the targets above are information (this CPU's timings), not checks")
    print(
        f"checks: {'all passed' if ok else 'some missed'}"
        + ("" if same else " (prediction hashes differ: information, see above)")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
