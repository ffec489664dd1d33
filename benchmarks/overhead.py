"""Issue 20: the fixed costs of a short campaign, and where the wall time goes.

Runs ``iteralab demo --quick`` (or what ``whole_campaign.py``'s options choose) through the
real CLI in a subprocess, as ``whole_campaign.py`` does, then splits its wall time with the
workbook's Attempts rows and the journal's records (``elapsed_s``: one attempt inside its
worker, from the start of the load to its record):

* **measured windows** (the figure's denominator), **load** (model load and the load
  phase's first calls), **warm-up** (the protocol's rule), **evaluation + export**;
* **inside the worker, around the phases**: environment reading, the peak probe,
  the record;
* **outside the workers**: the campaign's start-up and imports, the fork server's start,
  forking, the journal, ingesting each attempt into the workbook (one save each), the
  closing report.

Target: whole-campaign wall time / sum of measured windows <= 1.5. The script also prints
the floor the measurement rules set (a fresh process, a model load and the protocol's warm-up
per attempt): for the quick demo's 1.5-2 s windows that floor alone is about 1.4.

    python benchmarks/overhead.py                  # iteralab demo --quick (~1-3 min here)
    python benchmarks/overhead.py --keep DIR       # keep the campaign folder
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import common
import whole_campaign

TARGET = 1.5
PHASES = ("load_s", "warmup_s", "measured_s", "evaluation_s", "export_s")


def elapsed(book: Path) -> dict[str, float]:
    """Each finished attempt's seconds inside its worker, from the journal."""
    found = {}
    journal = book.with_name(book.stem + ".journal.jsonl")
    for line in journal.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("elapsed_s") is not None:
            found[str(record["attempt"]["attempt_id"])] = float(record["elapsed_s"])
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the campaign, split its wall time, print the verdict; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=whole_campaign.QUICK[0])
    parser.add_argument("--repetitions", type=int, default=whole_campaign.QUICK[1])
    parser.add_argument("--policy", choices=("fresh", "shared"), default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="run in DIR (must not hold a demo) and keep it")
    args = parser.parse_args(argv)
    print(f"overhead: {args.items} items, {args.repetitions} repetitions, series 1")
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        folder = args.keep or Path(tmp) / "demo"
        with common.OthersMeter() as others:
            wall, book = whole_campaign.campaign(folder, args.items, args.repetitions,
                                                 args.policy, [], args.threads)
        rows = whole_campaign.attempts(book)
        inside = elapsed(book)
    if not rows or any(r["status"] != "completed" for r in rows):
        print("error: not every attempt completed")
        return common.EXIT_MISSED
    totals = {p: sum(float(r[p] or 0) for r in rows) for p in PHASES}
    in_workers = sum(inside.get(str(r["attempt_id"]), 0.0) for r in rows)
    around = in_workers - sum(totals.values())
    outside = wall - in_workers
    print(f"{'attempt':<22} {'load_s':>7} {'warmup_s':>8} {'measured_s':>10} {'eval+exp':>8} "
          f"{'worker_s':>8} {'around':>7}")
    for r in rows:
        own = inside.get(str(r["attempt_id"]), 0.0)
        phases = sum(float(r[p] or 0) for p in PHASES)
        print(f"{r['attempt_id']:<22} {r['load_s']:7.2f} {r['warmup_s']:8.2f} "
              f"{r['measured_s']:10.2f} {r['evaluation_s'] + r['export_s']:8.2f} "
              f"{own:8.2f} {own - phases:7.2f}")
    measured = totals["measured_s"]
    parts = [("measured windows", measured), ("load phase", totals["load_s"]),
             ("warm-up", totals["warmup_s"]),
             ("evaluation + export", totals["evaluation_s"] + totals["export_s"]),
             ("inside workers, around the phases (environment, peak probe, record)", around),
             ("outside the workers (start-up, fork server, journal, ingestion saves, "
              "closing report)", outside)]
    print(f"wall time {wall:.1f} s:")
    for name, seconds in parts:
        print(f"  {seconds:7.2f} s  {seconds / wall:6.1%}  {name}")
    if others.cores is not None:
        print(f"other processes kept {others.cores:.2f} cores busy on average meanwhile")
    value = wall / measured
    # What no cut outside the measurement rules removes: each attempt's own process loads
    # the model and runs the protocol's warm-up before its window, then evaluates.
    floor = sum(totals.values()) / measured
    print(f"floor of the rules: (load + warm-up + windows + evaluation + export) / windows = "
          f"{floor:.3f}, with nothing else at all (no start-up, no imports, no report); "
          f"the workers alone {in_workers / measured:.3f}")
    return common.single_target(value, TARGET)


if __name__ == "__main__":
    sys.exit(main())
