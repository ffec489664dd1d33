"""Target 6: a whole campaign through the real CLI costs at most 1.5x its measured windows.

Runs the sample campaign as a user would, in a subprocess, and times it from
the outside: by default ``iteralab demo --quick DIR`` (series 1: batch 1, 4,
8; the first 100 items; 2 repetitions; one fresh worker process per attempt,
as the sample protocol says); ``--full`` runs ``iteralab demo DIR`` (1,000
items, 5 repetitions). Other sizes or a ``shared`` process policy are declared
as a protocol amendment of the demo copy (as ``--quick`` itself does), then
run with ``iteralab run``. The Attempts rows of the resulting workbook give
the measured windows, load and warm-up; the rest of the wall time (process
start-up and imports, evaluation, export, journal, workbook ingestion) is
reported as the remainder. Target: wall time / sum of measured windows <= 1.5.

    python benchmarks/whole_campaign.py                     # iteralab demo --quick
    python benchmarks/whole_campaign.py --full              # iteralab demo (~10 min here)
    python benchmarks/whole_campaign.py --items 300 --repetitions 2 --policy shared
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

TARGET = 1.5
QUICK = (100, 2)
FULL = (common.FULL_CORPUS_ITEMS, 5)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolkit", *args]


def _run(command: list[str]) -> float:
    """Run a CLI command from the repository root; return its wall time, exit on failure."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(common.ROOT), env.get("PYTHONPATH")) if p)
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=common.ROOT, env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    for line in done.stdout.strip().splitlines():
        print(f"  | {line}")
    if done.returncode != 0:
        print(done.stderr.strip()[-2000:], file=sys.stderr)
        raise SystemExit(f"error: `{' '.join(command[2:])}` exited with {done.returncode}")
    return seconds


def _amended_copy(folder: Path, items: int, repetitions: int, policy: str | None) -> Path:
    """The demo copy with a declared subset / policy, recorded as a protocol amendment."""
    from toolkit import editing
    from toolkit.commands import demo
    from toolkit.evidence import locking

    book = demo.prepare(folder)
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    subset = f"corpus_first{items}.jsonl"
    (folder / subset).write_text("".join(lines[:items]), encoding="utf-8")
    with editing.change(book, refresh_derived=False) as edit:
        data = edit.data
        form = data.forms["Protocol"]
        changed = [f"first {items} items", f"{repetitions} repetitions"]
        form["corpus_path"] = subset
        form["repetitions"] = repetitions
        if policy:
            form["process_policy"] = policy
            changed.append(f"process policy {policy}")
        locking.amend(
            data,
            f"benchmark: declared subset ({', '.join(changed)}) for benchmarks/whole_campaign.py",
        )
    return book


def campaign(
    folder: Path,
    items: int,
    repetitions: int,
    policy: str | None,
    variants: list[str],
    threads: int | None,
) -> tuple[float, Path]:
    """Run the campaign; return (wall seconds, workbook path)."""
    extra = ["--quiet"] + ([f"--threads={threads}"] if threads else [])
    if (items, repetitions) in (QUICK, FULL) and not policy and not variants:
        quick = ["--quick"] if (items, repetitions) == QUICK else []
        wall = _run(_cli("demo", str(folder), *quick, *extra))
        return wall, folder / "example_campaign.xlsx"
    start = time.perf_counter()
    book = _amended_copy(folder, items, repetitions, policy)
    prepared = time.perf_counter() - start
    chosen = [f"--variant={v}" for v in variants] or ["--series=1"]
    return prepared + _run(_cli("run", str(book), *chosen, *extra)), book


def attempts(book: Path) -> list[dict[str, Any]]:
    """The Attempts rows of the campaign's workbook."""
    from toolkit.workbook import store

    return list(store.read(book).tables["Attempts"])


def main(argv: list[str] | None = None) -> int:
    """Run the campaign, decompose its wall time, print the verdict; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--items",
        type=int,
        default=QUICK[0],
        help=f"first N corpus items (default {QUICK[0]}: the quick demo)",
    )
    parser.add_argument(
        "--repetitions",
        type=int,
        default=QUICK[1],
        help=f"repetitions of each variant (default {QUICK[1]})",
    )
    parser.add_argument(
        "--full", action="store_true", help="the whole demo: 1,000 items, 5 repetitions"
    )
    parser.add_argument(
        "--policy",
        choices=("fresh", "shared"),
        default=None,
        help="process policy (default: the sample protocol's, fresh)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="ID",
        help="run only this variant (repeatable; default: series 1)",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="run in DIR (must not hold a demo) and keep it",
    )
    args = parser.parse_args(argv)
    items, repetitions = FULL if args.full else (args.items, args.repetitions)
    if not 1 <= items <= common.FULL_CORPUS_ITEMS or repetitions < 1:
        raise SystemExit("error: --items must be 1..1000 and --repetitions at least 1")
    print(
        f"whole campaign: {items} items, {repetitions} repetitions, "
        f"{'variants ' + ', '.join(args.variant) if args.variant else 'series 1'}, "
        f"process policy {args.policy or 'fresh (sample protocol)'}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-campaign-") as tmp:
        folder = args.keep or Path(tmp) / "demo"
        with common.OthersMeter() as others:
            wall, book = campaign(
                folder, items, repetitions, args.policy, args.variant, args.threads
            )
        rows = attempts(book)
    bad = [r["attempt_id"] for r in rows if r["status"] != "completed"]
    if bad or not rows:
        print(f"error: attempts not completed: {', '.join(bad) or 'none recorded'}")
        return common.EXIT_MISSED

    def total(column: str) -> float:
        return sum(float(r[column] or 0) for r in rows)

    measured, load, warmup = total("measured_s"), total("load_s"), total("warmup_s")
    after = total("evaluation_s") + total("export_s")
    print(f"{'attempt':<22} {'load_s':>8} {'warmup_s':>9} {'measured_s':>11} {'eval+export':>12}")
    for r in rows:
        print(
            f"{r['attempt_id']:<22} {r['load_s']:8.3f} {r['warmup_s']:9.3f} "
            f"{r['measured_s']:11.3f} {r['evaluation_s'] + r['export_s']:12.3f}"
        )
    rest = wall - measured - load - warmup - after
    print(
        f"wall time {wall:.1f} s for {len(rows)} attempts = measured windows {measured:.1f} s "
        f"+ load {load:.1f} s + warm-up {warmup:.1f} s + evaluation and export {after:.1f} s "
        f"+ the rest {rest:.1f} s (process start-up and imports, journal, ingestion; "
        f"{rest / len(rows):.1f} s per attempt)"
    )
    if others.cores is not None:
        print(
            f"other processes kept {others.cores:.2f} cores busy on average meanwhile (both "
            "the wall time and the measured windows stretch with them)"
        )
    print(
        f"without load and warm-up: (wall - load - warm-up) / measured = "
        f"{(wall - load - warmup) / measured:.3f}"
    )
    value = wall / measured
    return common.single_target(
        value, TARGET, share_of_wall=True, load=others.share
    )  # a share of wall time in disguise: 1 / (1 - overhead share)


if __name__ == "__main__":
    sys.exit(main())
