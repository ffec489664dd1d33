"""Target 5: ``iteralab --help`` answers within 0.5 s, and the CLI never imports torch.

Times ``iteralab --help`` in fresh processes (the console script, as a user
types it), ``--runs`` times after one untimed run that fills Python's bytecode
cache; the target is on the median, an absolute bound (the issue's
definition). ``python -c pass`` is timed alongside, interleaved, as the floor
of any Python command on this machine.

Then runs ``iteralab --help`` and ``iteralab validate`` (on the sample campaign
holding the recorded demo attempts, replayed through the journal) under
``python -X importtime`` and lists the modules they import: neither may import
torch or transformers (only ``toolkit/runner/`` may).

    python benchmarks/startup.py             # 7 runs
    python benchmarks/startup.py --runs 15
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

TARGET_S = 0.5
FORBIDDEN = ("torch", "transformers")
FIXTURE = common.ROOT / "tests" / "fixtures" / "demo_campaign_rows.json"


def iteralab() -> list[str]:
    """The command that starts the CLI: the console script beside this Python, if any."""
    script = Path(sys.executable).with_name("iteralab")
    if script.exists():
        return [sys.executable, str(script)]
    return [sys.executable, "-m", "toolkit"]


def timed(command: list[str]) -> float:
    """Wall seconds of one run of ``command`` (output discarded); exits on failure."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, cwd=common.ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"error: {' '.join(command)} exited {done.returncode}:\n"
            f"{done.stderr.decode(errors='replace')}"
        )
    return seconds


def imported_modules(args: list[str]) -> tuple[int, str, list[str]]:
    """Exit code, last output line and the modules ``iteralab ARGS`` imports.

    The modules come from ``python -X importtime``, in import order.
    """
    command = [sys.executable, "-X", "importtime", *iteralab()[1:], *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=common.ROOT)
    names = [
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    ]
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return done.returncode, last, names[1:]  # the first name is the column header


def forbidden(names: list[str]) -> list[str]:
    """The imported modules that belong to torch or transformers."""
    return [n for n in names if n.split(".")[0] in FORBIDDEN]


def demo_workbook(folder: Path) -> Path:
    """The sample campaign holding the recorded demo attempts, ingested from the journal."""
    from toolkit import editing
    from toolkit.commands import demo
    from toolkit.evidence import journal

    workbook = demo.prepare(folder)
    payload = json.loads(FIXTURE.read_text(encoding="utf-8"))
    manifests = {m["manifest_id"]: m for m in payload["Manifest"]}
    for attempt in payload["Attempts"]:
        row = dict(attempt, row_sha256=None)
        journal.append(workbook, journal.record(row, manifests[row["manifest_id"]]))
    editing.ingest(workbook, refresh_derived=False)
    return workbook


def main(argv: list[str] | None = None) -> int:
    """Time ``--help``, check the imports; 0 when every target is met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs (default 7)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    print(f"# {common.script_line()}")
    help_command = [*iteralab(), "--help"]
    bare = [sys.executable, "-c", "pass"]
    timed(help_command)  # fills the bytecode cache; not counted
    helps, bares = [], []
    for run in range(1, args.runs + 1):
        pair = [("iteralab --help", help_command, helps), ("python -c pass", bare, bares)]
        for name, command, into in pair if run % 2 else pair[::-1]:
            into.append(timed(command))
            print(f"  run {run}  {name:<15} {into[-1]:.3f} s")
    median = statistics.median(helps)
    print(
        f"iteralab --help: median {median:.3f} s, min {min(helps):.3f}, max {max(helps):.3f}; "
        f"python -c pass: median {statistics.median(bares):.3f} s"
    )
    met = [median <= TARGET_S]
    print(f"seconds {median:.3f} (target <= {TARGET_S:g}): {'met' if met[0] else 'missed'}")

    with tempfile.TemporaryDirectory(prefix="iteralab-startup-") as tmp:
        workbook = demo_workbook(Path(tmp) / "demo")
        for label, cli_args in (
            ("iteralab --help", ["--help"]),
            ("iteralab validate", ["validate", str(workbook)]),
        ):
            code, last, names = imported_modules(cli_args)
            bad = forbidden(names)
            if cli_args[0] == "validate":
                print(
                    f"iteralab validate said: {last[:160]} (exit {code}; the demo's "
                    "predictions files are not in this folder, so each is a finding)"
                )
            print(
                f"{label}: {len(names)} modules imported, torch/transformers: "
                f"{', '.join(bad[:3]) if bad else 'none'}: {'missed' if bad else 'met'}"
            )
            met.append(not bad)
        shutil.rmtree(Path(tmp) / "demo")
    print(
        "results row: "
        + common.results_row(
            "startup.py",
            median,
            TARGET_S,
            met[0],
            f"`iteralab --help` median seconds over {args.runs} runs; --help and validate "
            f"import torch: {'no' if all(met[1:]) else 'YES'}",
        )
    )
    return common.exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
