"""Issue 34: the toolkit's own cost on the clock, beside the measured windows and the floor.

Runs ``iteralab demo --quick`` (and with ``--full`` the full demo, long here) through the
real CLI in a subprocess, as ``whole_campaign.py`` does, and reads the breakdown the run
records itself (``NAME.runs.jsonl``, each part timed inside the run: measured windows, the
protocol's floor of load + warm-up + evaluation + export and the engines' one-off
conversions, the toolkit's overhead of start-up, the pre-flight, starting workers, the work
around the phases, bookkeeping, saves). What follows the run in
the demo (the stand-in verification, the report and its pictures, the process's exit) is
timed from outside: the subprocess's wall time less the run's recorded wall time.

**Simulated fast card.** No GPU here: the full demo's own breakdown (the sample campaign,
30 attempts of 1,000 items; the quick demo's with only the quick demo run) with its measured
windows, its warm-up and the pre-flight's batches (``preflight_work_s``) divided by
``--speedup`` (50: a card 50x this CPU; a 1,000-text MiniLM pass well under a second on an
H200) and everything else as measured here: the model load and conversions (disk and CPU
work), evaluation and export (CPU work on the predictions) and every part of the toolkit's
overhead. Nothing runs faster for real; the toolkit's parts are this CPU's.

Targets: overhead <= 10 % of wall (full demo), <= 25 % (quick demo), <= 0.5 s per attempt
(simulated fast card: all of the toolkit's overhead, start-up and report included, / attempts).

    python benchmarks/overhead.py                  # demo --quick (~1-3 min quiet, longer busy)
    python benchmarks/overhead.py --full           # also the full demo (~11 min quiet)
    python benchmarks/overhead.py --keep DIR       # keep the campaign folders
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import common
import whole_campaign

QUICK_SHARE, FULL_SHARE, FAST_PER_ATTEMPT = 0.25, 0.10, 0.5
QUICK, FULL = "demo --quick", "demo (full)"


def recorded(book: Path) -> dict[str, Any]:
    """The run's own breakdown, the last line of ``NAME.runs.jsonl``."""
    path = book.with_name(book.stem + ".runs.jsonl")
    return json.loads(path.read_text(encoding="utf-8").splitlines()[-1])


def measure(folder: Path, items: int, repetitions: int) -> dict[str, Any]:
    """Run one demo; its breakdown with what followed the run (timed from outside)."""
    wall, book = whole_campaign.campaign(folder, items, repetitions, None, [], None)
    run = recorded(book)
    after = max(0.0, wall - run["wall_s"])
    return {
        **run,
        "outside_wall_s": wall,
        "after_run_s": after,
        "total_overhead_s": run["overhead_s"] + after,
    }


def fast_card(run: dict[str, Any], speedup: float) -> dict[str, float]:
    """The simulated fast card's wall time and its parts (see the module's text)."""
    windows = run["measured_s"] / speedup
    floor = run["floor_s"] - run["floor"]["warmup_s"] + run["floor"]["warmup_s"] / speedup
    # The pre-flight's batches are model work too (a run that predates the figure: none).
    work = run.get("preflight_work_s", 0.0)
    overhead = run["total_overhead_s"] - work + work / speedup
    return {
        "wall_s": windows + floor + overhead,
        "measured_s": windows,
        "floor_s": floor,
        "overhead_s": overhead,
        "per_attempt_s": overhead / run["attempts"],
    }


def show(name: str, run: dict[str, Any]) -> None:
    wall = run["outside_wall_s"]
    print(f"{name}: wall {wall:.1f} s (outside), {run['attempts']} attempts")
    rows = [
        ("measured windows", run["measured_s"]),
        ("protocol floor (load, warm-up, evaluation, export)", run["floor_s"]),
        *[
            (f"overhead: {k.removesuffix('_s').replace('_', ' ')}", v)
            for k, v in run["overhead"].items()
        ],
        ("overhead: after the run (stand-in verification, report, exit)", run["after_run_s"]),
    ]
    for label, seconds in rows:
        print(f"  {seconds:8.2f} s {seconds / wall:6.1%}  {label}")
    print(
        f"  workbook saves beside the attempts (not on the clock): "
        f"{run['saves_beside_attempts_s']:.2f} s"
    )
    print(f"  wall / measured windows {wall / run['measured_s']:.3f} (issue 20's figure)")


def main(argv: list[str] | None = None) -> int:
    """Run the demos, print the ratios side by side and the results rows; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="also the full demo (long)")
    parser.add_argument(
        "--speedup",
        type=float,
        default=50.0,
        help="the simulated card's speed over this CPU (default 50)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="run in DIR (must not hold a demo) and keep it",
    )
    args = parser.parse_args(argv)
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        base = args.keep or Path(tmp)
        with common.OthersMeter() as others:
            runs[QUICK] = measure(base / "quick", *whole_campaign.QUICK)
            if args.full:
                runs[FULL] = measure(base / "full", *whole_campaign.FULL)
    for name, run in runs.items():
        show(name, run)
    checks = [
        (
            name,
            run["total_overhead_s"] / run["outside_wall_s"],
            FULL_SHARE if name == FULL else QUICK_SHARE,
            "overhead / wall",
        )
        for name, run in runs.items()
    ]
    # The simulated card runs the sample campaign (the full demo) when it was measured, the
    # quick demo otherwise; both are printed.
    for name, run in runs.items():
        fast = fast_card(run, args.speedup)
        once = run["overhead"]["startup_s"] + run["overhead"]["preflight_s"]
        recurring = (run["overhead_s"] - once) / run["attempts"]
        print(
            f"simulated fast card ({name}'s breakdown, windows, warm-up and the pre-flight's "
            f"batches / {args.speedup:g}): wall {fast['wall_s']:.1f} s = windows "
            f"{fast['measured_s']:.2f} + floor {fast['floor_s']:.2f} + overhead "
            f"{fast['overhead_s']:.2f}"
        )
        print(
            f"  its overhead per attempt {fast['per_attempt_s']:.2f} s over {run['attempts']} "
            f"attempts; without the one-off start-up and pre-flight ({once:.1f} s) and what "
            f"follows the run ({run['after_run_s']:.1f} s): {recurring:.2f} s"
        )
        if name == (FULL if FULL in runs else QUICK):
            checks.append(
                (
                    f"simulated fast card, {name} (x{args.speedup:g})",
                    fast["per_attempt_s"],
                    FAST_PER_ATTEMPT,
                    "overhead s per attempt",
                )
            )
    if others.cores is not None:
        print(f"other processes kept {others.cores:.2f} cores busy on average meanwhile")
    print(f"{'campaign':<32} {'measure':<24} {'value':>7}  target")
    met = []
    for name, value, target, measure_name in checks:
        ok = value <= target
        met.append(ok)
        print(
            f"{name:<32} {measure_name:<24} {value:7.3f}  <= {target:g}  "
            f"{'met' if ok else 'missed'}"
        )
    busy = f"; other processes {others.cores:.2f} cores" if others.cores is not None else ""
    for name, value, target, measure_name in checks:
        print(
            "results row:",
            common.results_row(
                common.script_line(),
                value,
                target,
                value <= target,
                f"issue 34: {name}, toolkit {measure_name}{busy}",
            ),
        )
    return common.exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
