"""Issue 34: the toolkit's own cost on the clock, beside the measured windows and the floor.

Runs ``iteralab demo --quick`` (and with ``--full`` the full demo, long here) through the
real CLI in a subprocess, as ``whole_campaign.py`` does, and reads the breakdown the run
records itself (``NAME.runs.jsonl``, each part timed inside the run: measured windows, the
protocol's floor of load + warm-up + evaluation + export and the engines' one-off
conversions, the toolkit's overhead of start-up, the pre-flight, starting workers, the work
around the phases, bookkeeping, saves). What follows the run in
the demo (the stand-in verification, the report and its pictures, the process's exit) is
timed from outside: the subprocess's wall time less the run's recorded wall time.

**Simulated card** (``--card h200``, :mod:`simulated_card`). No GPU here: the path a CUDA
campaign takes is replayed from the measured run (the full demo's with ``--full``, the quick
demo's otherwise): its workers forked by the fork server, as a CUDA campaign's are now; per
attempt of a variant the card runs, the card's measured window for it (benchmarks/README.md's
H200 rows, 4-10x this CPU for this workload) in place of this CPU's, plus a CUDA context, the
weights' copy to the device and the shape warm-up's setup in the floor, and a driver probe in
the overhead. Every figure is printed with its source, and wall = windows + floor + overhead
per attempt.

Targets: overhead <= 10 % of wall (full demo), <= 25 % (quick demo), <= 0.5 s per attempt
(simulated card on the full demo: all of the toolkit's overhead, start-up and report included,
/ attempts).

    python benchmarks/overhead.py                  # demo --quick (~1-3 min quiet, longer busy)
    python benchmarks/overhead.py --full           # also the full demo (~11 min quiet)
    python benchmarks/overhead.py --keep DIR       # keep the campaign folders
    python benchmarks/overhead.py --replay BOOK    # the simulated card from a run recorded before
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import common
import simulated_card
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
    return with_after(book, wall)


def with_after(book: Path, wall: float | None) -> dict[str, Any]:
    """The run's breakdown, what followed it (``wall``: the command's wall time from
    outside; None: not timed, 0), and the workbook it ran on."""
    run = recorded(book)
    after = max(0.0, wall - run["wall_s"]) if wall is not None else 0.0
    return {
        **run,
        "book": book,
        "outside_wall_s": wall if wall is not None else run["wall_s"],
        "after_run_s": after,
        "total_overhead_s": run["overhead_s"] + after,
    }


def card_replay(name: str, run: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The simulated card's replay of ``run`` and its printed assumptions."""
    from toolkit.planner.models import resolve_model_path
    from toolkit.workbook import store

    book = Path(run["book"])
    data = store.read(book)
    variants = {str(v["variant_id"]): v for v in data.tables["Variants"]}
    rows = [r for r in data.tables["Attempts"] if r.get("attempt_id") in run_attempt_ids(run, data)]
    torch_models = {str(v["model_path"]) for v in variants.values() if simulated_card.on_card(v)}
    weights = max(
        (simulated_card.weight_bytes(resolve_model_path(m, book.parent)[0]) for m in torch_models),
        default=0,
    )
    card = simulated_card.CARDS[name]
    result = simulated_card.replay(card, run, rows, variants, weights)
    return result, simulated_card.assumptions(card, weights, result)


def run_attempt_ids(run: dict[str, Any], data: Any) -> set[str]:
    """The last run's attempts: as many as it recorded, the last rows of Attempts."""
    rows = [r for r in data.tables["Attempts"] if r.get("attempt_id")]
    return {str(r["attempt_id"]) for r in rows[-int(run["attempts"]) :]}


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
    print(f"  workers: {run.get('launcher')}")
    print(f"  wall / measured windows {wall / run['measured_s']:.3f} (issue 20's figure)")


def show_card(name: str, card: str, run: dict[str, Any]) -> float:
    """Print the simulated card's replay of ``run``; its overhead per attempt."""
    result, said = card_replay(card, run)
    for line in said:
        print(line)
    per = result["per_attempt"]
    print(
        f"simulated {card} ({name}'s run, {result['card_attempts']} of {result['attempts']} "
        f"attempts on the card): wall {result['wall_s']:.1f} s = windows "
        f"{result['windows_s']:.2f} + floor {result['floor_s']:.2f} + overhead "
        f"{result['overhead_s']:.2f}"
    )
    print(
        f"  per attempt: wall {per['wall_s']:.2f} s = windows {per['windows_s']:.2f} + floor "
        f"{per['floor_s']:.2f} + overhead {per['overhead_s']:.2f}; overhead / wall "
        f"{result['overhead_s'] / result['wall_s']:.3f}"
    )
    return float(per["overhead_s"])


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="also the full demo (long)")
    parser.add_argument(
        "--card",
        choices=sorted(simulated_card.CARDS),
        default="h200",
        help="the card whose measured rows the simulated campaign replays (default h200)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="run in DIR (must not hold a demo) and keep it",
    )
    parser.add_argument(
        "--replay",
        type=Path,
        default=None,
        metavar="BOOK",
        help="no demo: the simulated card from the last run recorded beside BOOK",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the demos, print the ratios side by side and the results rows; the exit code."""
    args = parse(argv)
    if args.replay is not None:
        return report(args, {f"run of {args.replay.name}": with_after(args.replay, None)}, None)
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        base = args.keep or Path(tmp)
        runs: dict[str, dict[str, Any]] = {}
        with common.OthersMeter() as others:
            runs[QUICK] = measure(base / "quick", *whole_campaign.QUICK)
            if args.full:
                runs[FULL] = measure(base / "full", *whole_campaign.FULL)
        return report(args, runs, others.cores)  # the replay reads the kept workbooks


def report(args: argparse.Namespace, runs: dict[str, dict[str, Any]], cores: float | None) -> int:
    """Print each run, the simulated card on the largest, the verdicts; the exit code."""
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
        if name in (QUICK, FULL)
    ]
    # The simulated card replays the sample campaign (the full demo) when it was measured.
    name = FULL if FULL in runs else next(iter(runs))
    per_attempt = show_card(name, args.card, runs[name])
    checks.append(
        (f"simulated {args.card}, {name}", per_attempt, FAST_PER_ATTEMPT, "overhead s per attempt")
    )
    if cores is not None:
        print(f"other processes kept {cores:.2f} cores busy on average meanwhile")
    # Load stretches the measured windows more than the toolkit's own work, so a share of
    # wall time looks better on a busy machine: above a quarter of it, no verdict.
    load = None if cores is None else min(1.0, cores / common.MACHINE_CORES)
    met: list[bool | None] = []
    for label, value, target, measure_name in checks:
        print(f"{label}, {measure_name}: ", end="")
        met.append(
            common.verdict(value, target, load=load, share_of_wall=measure_name.endswith("wall"))
        )
    busy = f"; other processes {cores:.2f} cores" if cores is not None else ""
    for (label, value, target, measure_name), ok in zip(checks, met, strict=True):
        print(
            "results row:",
            common.results_row(
                common.script_line(), value, target, ok, f"{label}, toolkit {measure_name}{busy}"
            ),
        )
    return common.exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
