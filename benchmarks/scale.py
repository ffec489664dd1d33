"""Target 4: validate + report on 10,000 attempts cost at most a bare openpyxl load (1x).

Builds, in a temporary folder, the sample campaign (``iteralab demo``'s copy of
samples/example_campaign.xlsx with its corpus and head) holding ``--attempts``
attempts that went through the real bookkeeping: each is a real attempt row
of the recorded demo run (tests/fixtures/demo_campaign_rows.json) under a new
id, with its own predictions file (``--items-per-file`` lines of the corpus,
SHA-256 recorded), appended to the journal with :func:`toolkit.evidence.journal.append`
(fsync'd), then ingested by :func:`toolkit.editing.ingest` (rows sealed into
the hash chain, one save). The workbook validates without a finding.

Contestants, each in a fresh child process (so each has its own peak memory),
interleaved in rotated rounds (common.interleave), ``--runs`` each; the time is
taken inside the child around the work, after its imports:

- **report** (the verdict): what ``iteralab report`` does:
  :func:`toolkit.reporting.build`: read, validate (schemas, cross-sheet
  rules, protocol lock, hash chain against the journal, every predictions
  file hashed in a helper process), refresh, save when that changed the
  workbook, report.md (its archive list reuses those hashes), CSVs, PNG
  charts. The workbook was reported once before the timed runs, so the
  refresh finds it up to date and nothing is saved, as for a user who runs
  ``iteralab report`` again on the same evidence;
- **report, saving**: the same on the workbook as ingest left it (derived
  sheets not yet computed; the workbook, its chain.json anchor and its journal
  copied back together before each run, untimed), so the report saves it: the
  first report after new attempts;
- **validate, report**: ``iteralab validate`` then ``iteralab report`` run one
  after the other (``store.read`` + :func:`toolkit.evidence.validate.validate`, then
  ``build``): what a user who runs both commands waits for;
- **validate**: ``iteralab validate`` in the child (its modules imported first): its
  peak memory with its helper's;
- **openpyxl load**: ``openpyxl.load_workbook(path)`` (default mode) of the
  same workbook;
- **report, command**, **validate, command**, **openpyxl, command**: ``python -m toolkit
  report`` / ``validate`` and a bare openpyxl load as a user runs them, timed from outside
  the fresh interpreter (start-up and imports included: the fixed cost that dominates a
  small campaign), wall and CPU clock (the children's CPU seconds, helpers included).

Targets: median report / median openpyxl load <= 1 (in process); on the command line,
validate / openpyxl load <= 1.5 at 1,000 attempts and <= 1.0 at 10,000, report <= 2.0
and <= 1.2 (judged at those two sizes, shown at others); report, saving / openpyxl load is
printed beside them, and so is the peak of each command's process tree over the openpyxl
load's (target <= 1.5 at 50,000 attempts): the tree's resident memory summed at one moment,
sampled every 10 ms as it runs, with the bound beside it (its own peak plus its helpers': a
helper may be gone before the command peaks). Then
``--ingest`` more attempts are journaled and ingested into that workbook in
one child process, with ``store.save`` wrapped to count the saves: the check
is exactly 1 save. The peak memory (VmHWM) of every child and of its helper
processes is printed. A timed run that meets a finding stops the benchmark: it timed other
work than the report a user waits for.

    python benchmarks/scale.py                      # 10,000 attempts, 1,000 ingested, 3 runs
    python benchmarks/scale.py --attempts 200 --ingest 20 --items-per-file 10 --runs 1
    python benchmarks/scale.py --baseline /tmp/before   # also time /tmp/before/toolkit's report
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

from toolkit.runner.instruments import machine_load

TARGET = 1.0
#: The commands as a user runs them, timed beside the in-process contestants.
COMMANDS = ("report, command", "validate, command", "openpyxl, command")
COMMAND_PAIRS = [
    ("report, command", "openpyxl, command"),
    ("validate, command", "openpyxl, command"),
]
#: Command line (a fresh interpreter) / bare openpyxl load, (validate, report), by attempts:
#: the fixed cost of imports weighs on a small campaign, so its bound is looser.
COMMAND_TARGETS = {1_000: (1.5, 2.0), 10_000: (1.0, 1.2)}
#: Peak of a command's process tree / a bare openpyxl load's, at 50,000 attempts.
TREE_TARGET = 1.5
FIXTURE = common.ROOT / "tests" / "fixtures" / "demo_campaign_rows.json"
#: Distinct predictions contents written round-robin (each file is still hashed on its own).
CONTENTS = 16


def _maxrss_mib() -> float:
    """This process's own peak resident set (VmHWM on Linux), in MiB."""
    from toolkit.plumbing.rss import peak_rss_bytes

    return (peak_rss_bytes() or 0) / 2**20


def _helper_peak_mib() -> float:
    """The peaks of the helper processes this process ran, added up, in MiB (0: none ran):
    with this process's own, a bound on the process tree's peak (they run side by side)."""
    from toolkit.plumbing.helper import HELPER_PEAKS

    return sum(HELPER_PEAKS) / 2**20


# ---------------------------------------------------------------- child processes


def child_validate_report(
    workbook: Path, pngs: bool, validate_first: bool, stale: Path | None = None
) -> dict[str, Any]:
    """report (after validate when ``validate_first``): times, findings, peak memory.

    ``stale``: the folder of :func:`keep_state`, put back in place first (untimed).
    """
    from toolkit.evidence.validate import validate
    from toolkit.reporting import build
    from toolkit.workbook import store

    if stale is not None:
        restore_state(workbook, stale)
    before = workbook.stat().st_mtime_ns

    if pngs:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401 - imported before the clock, like openpyxl

    cpu = machine_load.own_cpu_s()  # with the hashing helper process
    start = time.perf_counter()
    findings = []
    if validate_first:
        findings = validate(store.read(workbook), workbook)
    middle = time.perf_counter()
    result, _ = build(workbook, pngs=pngs)
    end = time.perf_counter()
    findings += getattr(result, "findings", [])  # a --baseline copy may predate it
    return {
        "seconds": end - start,
        "cpu_s": machine_load.own_cpu_s() - cpu,
        "validate_s": middle - start,
        "report_s": end - middle,
        "saved": workbook.stat().st_mtime_ns != before,
        "findings": len(findings),
        "first_finding": str(findings[0]) if findings else None,
        "maxrss_mib": _maxrss_mib(),
        "helper_maxrss_mib": _helper_peak_mib(),
    }


def child_validate(workbook: Path) -> dict[str, Any]:
    """``iteralab validate`` in this process (its modules imported before the clock)."""
    import toolkit.evidence.schemas  # noqa: F401 - imported before the clock, like openpyxl
    import toolkit.report.typed_over  # noqa: F401
    import toolkit.reporting  # noqa: F401
    from toolkit.cli import cli

    cpu = machine_load.own_cpu_s()
    start = time.perf_counter()
    try:
        cli.main(["validate", str(workbook)], prog_name="iteralab")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    return {
        "seconds": time.perf_counter() - start,
        "cpu_s": machine_load.own_cpu_s() - cpu,
        "findings": 0 if not code else 1,
        "first_finding": None if not code else f"iteralab validate exited {code}",
        "maxrss_mib": _maxrss_mib(),
        "helper_maxrss_mib": _helper_peak_mib(),
    }


def child_openpyxl(workbook: Path) -> dict[str, Any]:
    """A bare ``openpyxl.load_workbook`` (default, not read-only) of the workbook."""
    import openpyxl

    cpu = machine_load.own_cpu_s()
    start = time.perf_counter()
    book = openpyxl.load_workbook(workbook)
    seconds = time.perf_counter() - start
    cpu_s = machine_load.own_cpu_s() - cpu
    rows = book["Attempts"].max_row - 1
    book.close()
    return {"seconds": seconds, "cpu_s": cpu_s, "attempts": rows, "maxrss_mib": _maxrss_mib()}


def child_ingest(workbook: Path) -> dict[str, Any]:
    """Ingest the journal into the workbook, counting ``store.save`` calls."""
    from toolkit import editing
    from toolkit.workbook import store

    saves = [0]
    real_save = store.save

    def counting_save(*args: Any, **kwargs: Any) -> None:
        saves[0] += 1
        real_save(*args, **kwargs)

    store.save = counting_save  # journal.ingest looks store.save up at call time
    start = time.perf_counter()
    result = editing.ingest(workbook, refresh_derived=False)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "saves": saves[0],
        "attempts_added": result.attempts_added,
        "already": result.already,
        "maxrss_mib": _maxrss_mib(),
    }


def run_child(
    mode: str, workbook: Path, *extra: str, toolkit_dir: Path | None = None
) -> dict[str, Any]:
    """Run this script in ``--child MODE`` and return the JSON it prints.

    ``toolkit_dir``: a folder holding another ``toolkit`` package to import instead.
    """
    env = dict(os.environ)
    if toolkit_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(toolkit_dir), env.get("PYTHONPATH", "")])
    done, tree = common.run_sampled(
        [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(workbook), *extra],
        cwd=common.ROOT,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"error: child {mode} failed ({done.returncode}):\n{done.stderr}")
    found = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    found["tree_sampled_mib"] = tree / 2**20
    return found


# ---------------------------------------------------------------- the synthetic campaign


def predictions_contents(items: int) -> list[tuple[bytes, str]]:
    """``CONTENTS`` distinct predictions files of the first ``items`` corpus items, with SHA-256.

    Lines as the runner writes them (id, prediction, label, stratum); content
    k predicts the true label for 6 items in 10, shifted by k.
    """
    from toolkit.evidence import corpus

    rows = corpus.read_corpus(common.CORPUS)[:items]
    labels = sorted({r.label for r in rows})
    out = []
    for k in range(CONTENTS):
        lines = []
        for i, row in enumerate(rows):
            right = (i + k) % 10 < 6
            guess = row.label if right else labels[(labels.index(row.label) + 1) % len(labels)]
            lines.append(
                json.dumps(
                    {
                        "id": row.id,
                        "prediction": guess,
                        "label": row.label,
                        "stratum": corpus.stratum(len(row.text.split())),
                    },
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                + "\n"
            )
        blob = "".join(lines).encode("utf-8")
        out.append((blob, hashlib.sha256(blob).hexdigest()))
    return out


def records(
    workbook: Path, start: int, count: int, contents: list[tuple[bytes, str]]
) -> list[dict[str, Any]]:
    """Journal records of attempts ``start+1 .. start+count``, their predictions files written.

    Each is a recorded demo attempt (cycling over the 15) under a new id, its
    durations varied by up to +-0.5 % so the rows differ, run under the demo
    workbook's protocol lock as it is now (the recorded rows name the lock of
    the sample they were recorded with, which a later sample may have changed).
    """
    from toolkit.evidence import journal, protocol
    from toolkit.workbook import store

    folder = workbook.parent
    lock = protocol.require_lock(store.read(workbook), workbook)

    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    manifests = {m["manifest_id"]: m for m in fixture["Manifest"]}
    base = fixture["Attempts"]
    began = dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.timezone.utc)
    stem = "example_campaign_predictions"
    (folder / stem).mkdir(exist_ok=True)
    out = []
    for n in range(start + 1, start + count + 1):
        original = base[(n - 1) % len(base)]
        row = dict(original)
        cycle = (n - 1) // len(base)
        attempt_id = f"a{n:05d}-{row['variant_id']}-r{cycle + 1}"
        blob, sha = contents[n % len(contents)]
        rel = f"{stem}/{attempt_id}.jsonl"
        (folder / rel).write_bytes(blob)
        jitter = 1 + ((n * 37) % 11 - 5) / 1000
        for name in ("load_s", "warmup_s", "measured_s", "evaluation_s", "export_s"):
            if isinstance(row.get(name), float):
                row[name] = round(row[name] * jitter, 6)
        row.update(
            {
                "attempt_id": attempt_id,
                "repetition": cycle + 1,
                "order_position": (n - 1) % len(base) + 1,
                "started_at": (began + dt.timedelta(minutes=2 * n)).isoformat(timespec="seconds"),
                "predictions_path": rel,
                "predictions_sha256": sha,
                "row_sha256": None,
                "protocol_sha256": lock,
                "notes": f"predictions: {rel}; synthetic copy of {original['attempt_id']} of the "
                "recorded demo run (benchmarks/scale.py)",
            }
        )
        out.append(journal.record(row, manifests[row["manifest_id"]]))
    return out


def journal_all(workbook: Path, entries: list[dict[str, Any]]) -> list[float]:
    """Append every record with the real (fsync'd) append; return each append's seconds."""
    from toolkit.evidence import journal

    times = []
    for entry in entries:
        start = time.perf_counter()
        journal.append(workbook, entry)
        times.append(time.perf_counter() - start)
    return times


def stale_copy(workbook: Path) -> Path:
    """Where the campaign's state as ingest left it (derived sheets not computed) is kept."""
    return workbook.with_name("as_ingested")


def state_files(workbook: Path) -> list[Path]:
    """What a save changes together: the workbook, its hash-chain anchor and its journal.
    Restoring the workbook alone leaves an anchor that a later save moved forward: the
    timed run would then meet an Audit-anchor finding and do other work."""
    from toolkit.plumbing import beside

    return [workbook, beside.anchor(workbook), beside.journal(workbook)]


def keep_state(workbook: Path, folder: Path) -> None:
    """Copy :func:`state_files` (those that exist) into ``folder``."""
    folder.mkdir(exist_ok=True)
    for path in state_files(workbook):
        if path.exists():
            shutil.copyfile(path, folder / path.name)


def restore_state(workbook: Path, folder: Path) -> None:
    """Put back every file :func:`keep_state` kept; remove one it did not have."""
    for path in state_files(workbook):
        kept = folder / path.name
        if kept.exists():
            shutil.copyfile(kept, path)
        else:
            path.unlink(missing_ok=True)


def build_campaign(folder: Path, attempts: int, items: int) -> tuple[Path, list[float]]:
    """The demo folder holding ``attempts`` journaled and ingested attempts.

    A copy of the workbook as ingested is kept at :func:`stale_copy`.
    """
    from toolkit.commands import demo

    workbook = demo.prepare(folder)
    contents = predictions_contents(items)
    start = time.perf_counter()
    entries = records(workbook, 0, attempts, contents)
    print(
        f"wrote {attempts:,} predictions files of {items:,} lines in "
        f"{time.perf_counter() - start:.1f} s"
    )
    appends = journal_all(workbook, entries)
    print(
        f"journaled {attempts:,} attempts: append median {1000 * statistics.median(appends):.2f}"
        f" ms (max {1000 * max(appends):.1f} ms)"
    )
    built = run_child("ingest", workbook)
    print(
        f"ingested them: {built['attempts_added']:,} attempts in {built['saves']} save(s), "
        f"{built['seconds']:.1f} s, peak memory {built['maxrss_mib']:.0f} MiB"
    )
    if built["saves"] != 1 or built["attempts_added"] != attempts:
        raise SystemExit("error: building the workbook did not ingest in one save")
    keep_state(workbook, stale_copy(workbook))
    return workbook, appends


def child_contestant(
    workbook: Path,
    mode: str,
    extra: tuple[str, ...],
    reports: list[Any],
    toolkit_dir: Path | None = None,
) -> Any:
    """A contestant for :func:`common.interleave`: one child run, its report kept."""

    def run() -> common.Timing:
        report = run_child(mode, workbook, *extra, toolkit_dir=toolkit_dir)
        reports.append(report)
        return common.Timing(report["seconds"], report["cpu_s"])

    return run


#: A bare openpyxl load as a user runs it: a fresh interpreter, its imports included.
OPENPYXL_COMMAND = ("-c", "import sys, openpyxl; openpyxl.load_workbook(sys.argv[1])")


def compile_bytecode(*packages: Path) -> None:
    """Write the byte code of each package's modules (``__pycache__``, ignored by git), as
    installing it does: the openpyxl load's modules have theirs, while a checkout run with
    PYTHONDONTWRITEBYTECODE set (as here) compiles about a hundred toolkit modules on every
    command, 0.3 CPU-seconds at 1,000 attempts that no installed iteralab spends."""
    import compileall

    for package in packages:
        if not compileall.compile_dir(package, quiet=1):
            raise SystemExit(f"error: could not compile the modules of {package}")


def command_contestant(argv: tuple[str, ...], reports: list[Any]) -> Any:
    """A contestant for :func:`common.interleave`: ``python ARGV`` as a user runs it.

    Timed from outside, start-up and imports included (the in-process contestants start
    their clock after them); CPU seconds are those of the finished children, the report's
    hashing helper with them. A non-zero exit (a finding, a failure) stops the benchmark.
    """

    def run() -> common.Timing:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, *argv], capture_output=True, text=True, check=False, cwd=common.ROOT
        )
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(
                f"error: `python {' '.join(argv)}` exited {done.returncode}: the timed run "
                f"met a finding or failed:\n{done.stdout}{done.stderr}"
            )
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        reports.append({"seconds": seconds, "cpu_s": cpu})
        return common.Timing(seconds, cpu)

    return run


def print_peaks(reports: dict[str, list[Any]]) -> tuple[float, float]:
    """Print the children's peak memory; return the process-tree peaks of validate and of
    report over the openpyxl load's: the tree sampled as it ran (or a process's own peak,
    if larger), with the bound beside it (each command's own peak plus its helpers')."""
    both = reports["validate, report"]
    reporting = reports["report"] + reports["report, saving"]
    peak = max(p["maxrss_mib"] for p in reporting)
    peak_load = max(p["maxrss_mib"] for p in reports["openpyxl load"])
    helper = max(p.get("helper_maxrss_mib", 0) for p in reporting + both)

    def tree(runs: list[Any]) -> float:
        return max(max(p["tree_sampled_mib"], p["maxrss_mib"]) for p in runs)

    def bound(runs: list[Any]) -> float:
        return max(p["maxrss_mib"] + p.get("helper_maxrss_mib", 0) for p in runs)

    validate_tree, report_tree = tree(reports["validate"]), tree(reporting)
    print(
        f"peak of the process tree (command + its helpers, sampled every 10 ms) / bare "
        f"openpyxl load: validate {validate_tree / peak_load:.2f} ({validate_tree:.0f} MiB), "
        f"report {report_tree / peak_load:.2f} ({report_tree:.0f} MiB) (target <= "
        f"{TREE_TARGET:g} at 50,000 attempts; shown); the bound, own peak plus the helpers' "
        f"peaks: validate {bound(reports['validate']) / peak_load:.2f}, report "
        f"{bound(reporting) / peak_load:.2f}"
    )
    print(
        f"peak memory (VmHWM): report {peak:.0f}"
        f" MiB, validate then report {max(p['maxrss_mib'] for p in both):.0f} MiB, openpyxl "
        f"load {peak_load:.0f} MiB; helper processes of one command together {helper:.0f} MiB"
    )
    return validate_tree / peak_load, report_tree / peak_load


def command_verdicts(attempts: int, report: Any, validate: Any) -> list[bool | None]:
    """The command-line targets at the sizes they are set for (:data:`COMMAND_TARGETS`):
    printed as verdicts there, as figures elsewhere."""
    targets = COMMAND_TARGETS.get(attempts)
    if targets is None:
        print(
            f"command-line targets are set at {' and '.join(f'{n:,}' for n in COMMAND_TARGETS)} "
            f"attempts; at {attempts:,} the ratios above are shown, not judged"
        )
        return []
    validate_target, report_target = targets
    print(f"validate on the command line / openpyxl load at {attempts:,} attempts:")
    met = [common.verdict(validate.of_medians, validate_target)]
    print(f"report on the command line / openpyxl load at {attempts:,} attempts:")
    met.append(common.verdict(report.of_medians, report_target))
    return met


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    """Build the campaign, time the contestants, ingest more; print the verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--attempts", type=int, default=10_000, help="attempts in the workbook (default 10000)"
    )
    parser.add_argument(
        "--ingest",
        type=int,
        default=1_000,
        help="attempts then journaled and ingested into it (default 1000)",
    )
    parser.add_argument(
        "--items-per-file",
        type=int,
        default=common.FULL_CORPUS_ITEMS,
        help="lines of each predictions file (default 1000: the whole corpus, as in the demo)",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument("--no-png", action="store_true", help="report without PNG charts")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="also time the report (which validates) with the toolkit package "
        "in this folder (e.g. a copy from before a change), interleaved with the "
        "others",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="build in this (new) folder and keep it, instead of a temporary one",
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "WORKBOOK"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        mode, path = args.child[0], Path(args.child[1])
        found = {
            "report": lambda: child_validate_report(path, not args.no_png, False),
            "report-saving": lambda: child_validate_report(
                path, not args.no_png, False, stale_copy(path)
            ),
            "validate-report": lambda: child_validate_report(path, not args.no_png, True),
            "openpyxl": lambda: child_openpyxl(path),
            "validate": lambda: child_validate(path),
            "ingest": lambda: child_ingest(path),
        }[mode]()
        print(json.dumps(found))
        return 0
    if (
        args.attempts < 1
        or args.ingest < 1
        or not 1 <= args.items_per_file <= common.FULL_CORPUS_ITEMS
    ):
        parser.error("--attempts and --ingest must be >= 1, --items-per-file 1..1000")

    with tempfile.TemporaryDirectory(prefix="iteralab-scale-") as tmp:
        folder = args.keep or Path(tmp) / "campaign"
        return measure(folder, args)


def measure(folder: Path, args: argparse.Namespace) -> int:
    """Everything after parsing: build, compare, ingest, report."""
    print(f"# {common.script_line()}")
    workbook, appends = build_campaign(folder, args.attempts, args.items_per_file)
    extra = ("--no-png",) if args.no_png else ()
    settle = run_child("report", workbook, *extra)  # the first report adds the derived rows
    print(
        f"first report (not timed; fills the derived sheets): {settle['seconds']:.1f} s, "
        f"{settle['findings']} finding(s)"
    )
    if settle["findings"]:
        raise SystemExit(f"error: the synthetic workbook is not valid: {settle['first_finding']}")
    size = workbook.stat().st_size
    print(f"workbook: {args.attempts:,} attempts, {size / 2**20:.1f} MiB")

    reports: dict[str, list[Any]] = {
        name: []
        for name in (
            "report",
            "report, saving",
            "validate, report",
            "validate",
            "openpyxl load",
            "baseline",
            *COMMANDS,
        )
    }
    contestants = {
        "report": child_contestant(workbook, "report", extra, reports["report"]),
        "report, saving": child_contestant(
            workbook, "report-saving", extra, reports["report, saving"]
        ),
        "validate, report": child_contestant(
            workbook, "validate-report", extra, reports["validate, report"]
        ),
        "validate": child_contestant(workbook, "validate", (), reports["validate"]),
        "openpyxl load": child_contestant(workbook, "openpyxl", (), reports["openpyxl load"]),
    }
    commands = {
        "report, command": ("-m", "toolkit", "report", str(workbook), *extra),
        "validate, command": ("-m", "toolkit", "validate", str(workbook)),
        "openpyxl, command": (*OPENPYXL_COMMAND, str(workbook)),
    }
    contestants.update(
        (name, command_contestant(argv, reports[name])) for name, argv in commands.items()
    )
    pairs = [
        ("report", "openpyxl load"),
        ("report, saving", "openpyxl load"),
        ("validate, report", "openpyxl load"),
        *COMMAND_PAIRS,
    ]
    if args.baseline is not None:
        # The other copy's report (which validates first too), on the same workbook.
        contestants["baseline"] = child_contestant(
            workbook, "report", extra, reports["baseline"], toolkit_dir=args.baseline.resolve()
        )
        pairs += [
            ("baseline", "openpyxl load"),
            ("report", "baseline"),
            ("report, saving", "baseline"),
        ]
    compile_bytecode(
        common.ROOT / "toolkit",
        *([args.baseline.resolve() / "toolkit"] if args.baseline is not None else []),
    )
    print("byte code of the toolkit's modules written before the timed runs, as an install does")
    runs = common.interleave(contestants, args.runs)
    found, saving, _, report_command, validate_command = common.compare(runs, "wall", pairs)[:5]
    print(
        "end to end on the command line (a fresh interpreter, imports included): report / "
        f"openpyxl load {report_command.of_medians:.3f}, validate / openpyxl load "
        f"{validate_command.of_medians:.3f}; in process (after the imports): report / "
        f"openpyxl load {found.of_medians:.3f}; {runs.others_text()}"
    )
    report_cpu, validate_cpu = (common.ratio(runs.cpu, *pair) for pair in COMMAND_PAIRS)
    print(
        "the same on the CPU clock (the commands' and their helpers' CPU seconds): report / "
        f"openpyxl load {report_cpu.of_medians:.3f}, validate / openpyxl load "
        f"{validate_cpu.of_medians:.3f} (shown: a helper's seconds on the other core count)"
    )
    command_met = command_verdicts(args.attempts, report_command, validate_command)
    both = reports["validate, report"]
    print(
        f"validate, report split: validate median "
        f"{statistics.median(p['validate_s'] for p in both):.2f} s, report median "
        f"{statistics.median(p['report_s'] for p in both):.2f} s; findings "
        f"{sorted({p['findings'] for p in both + reports['report']})}"
    )
    met_findings = [p for name in reports for p in reports[name] if p.get("findings")]
    if met_findings:  # a timed run that met a finding did other work than a clean report
        raise SystemExit(
            f"error: {len(met_findings)} timed run(s) met a finding, first: "
            f"{met_findings[0]['first_finding']}"
        )
    saved = {
        name: sorted({p.get("saved") for p in reports[name]})
        for name in ("report", "report, saving", "validate, report")
    }
    print(
        f"saved the workbook: {saved} (report: nothing to save, the workbook is up to "
        "date; report, saving: the first report after ingest)"
    )
    trees = print_peaks(reports)
    met = [common.verdict(found.of_medians, TARGET), *command_met]
    print(f"report, saving / openpyxl load: {saving.of_medians:.3f} (shown, not a verdict)")

    more = records(workbook, args.attempts, args.ingest, predictions_contents(args.items_per_file))
    appends += journal_all(workbook, more)
    ingested = run_child("ingest", workbook)
    print(
        f"ingest of {args.ingest:,} journaled attempts into the {args.attempts:,}-attempt "
        f"workbook: {ingested['attempts_added']:,} added, {ingested['already']:,} already "
        f"there, {ingested['saves']} save(s) (target: 1), {ingested['seconds']:.1f} s, peak "
        f"memory {ingested['maxrss_mib']:.0f} MiB"
    )
    one_save = ingested["saves"] == 1 and ingested["attempts_added"] == args.ingest
    print(f"saves per ingest: {ingested['saves']} (target: 1): {'met' if one_save else 'missed'}")
    met.append(one_save)
    print(
        f"journal append over {len(appends):,} appends: median "
        f"{1000 * statistics.median(appends):.2f} ms"
    )
    print(
        "results row: "
        + common.results_row(
            "scale.py",
            found.of_medians,
            TARGET,
            met[0],
            f"{args.attempts:,} attempts, {args.items_per_file} lines per predictions file; "
            f"report, saving: {saving.of_medians:.3f}; on the command line report "
            f"{report_command.of_medians:.3f}, validate {validate_command.of_medians:.3f} "
            f"x openpyxl; process tree / openpyxl load: validate {trees[0]:.2f}, report "
            f"{trees[1]:.2f}; "
            f"{runs.others_text()}; ingest of {args.ingest:,}: {ingested['saves']} save",
        )
    )
    return common.exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
