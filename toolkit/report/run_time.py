"""A campaign run's time breakdown in words: what `run` prints and report.md restates.

The driver measures it (:mod:`toolkit.runner.driver.breakdown`) and appends it to
``NAME.runs.jsonl`` beside the workbook; this module reads the last one and says it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolkit.plumbing import beside
from toolkit.plumbing.plain import not_plain

#: The toolkit's own parts, as the user reads them.
OVERHEAD_NAMES = {
    "startup_s": "start-up (process start, imports, checks, the fork server's imports)",
    "preflight_s": "the pre-flight (each model loaded once, a batch per variant: `iteralab check`)",
    "worker_start_s": "starting each attempt and taking its record (a fork, or the imports "
    "in this process; the worker's exit)",
    "around_phases_s": "inside each worker around the phases (environment, peak probe, record)",
    "bookkeeping_s": "between attempts (ids, journal start lines, progress)",
    "closing_s": "closing (the workers' fork server stopped, the display closed)",
    "saves_s": "workbook saves waited for (the last background save, the final ingestion "
    "with its refresh)",
}


def last(workbook: Path) -> dict[str, Any] | None:
    """The last run's breakdown recorded beside ``workbook``; None when there is none (or
    its last line is unreadable: a run killed while writing it)."""
    path = beside.run_times(workbook)
    if not_plain(path) is not None:  # a named pipe would wait for a writer
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and "wall_s" in document:
            return document
    return None


def launcher(time: dict[str, Any]) -> str | None:
    """How the attempts' workers started, in words; None for a run recorded before it was
    said."""
    if "launcher" not in time:
        return None
    how = time["launcher"]
    if how is None:
        return "attempts ran in the campaign's own process (process policy shared)"
    forked, spawned = int(how["forked"]), int(how["spawned"])
    parts = [f"{forked} forked by the fork server"] if forked else []
    if spawned:
        parts.append(
            f"{spawned} started as new interpreters (`python -m toolkit.runner.driver.worker`, "
            f"each importing torch): {how.get('why_spawned') or 'reason not recorded'}"
        )
    return "workers: " + ("; ".join(parts) or "none started")


def short(time: dict[str, Any]) -> list[str]:
    """Two lines: the three parts of the wall time, then the overhead's parts; a third
    when workers were spawned rather than forked."""
    wall = float(time["wall_s"]) or 1e-9
    per = time.get("overhead_per_attempt_s")
    parts = ", ".join(
        f"{k.removesuffix('_s').replace('_', ' ')} {time['overhead'][k]:.2f}"
        for k in OVERHEAD_NAMES
        if k in time["overhead"]  # a run recorded before the part was timed apart
    )
    started = launcher(time)
    spawned = bool(time.get("launcher") and time["launcher"]["spawned"])
    return [
        f"wall {time['wall_s']:.1f} s = measured windows {time['measured_s']:.1f} s "
        f"({time['measured_s'] / wall:.0%}) + the protocol's floor {time['floor_s']:.1f} s "
        f"({time['floor_s'] / wall:.0%}) + the toolkit's overhead "
        f"{time['overhead_s']:.1f} s ({time['overhead_s'] / wall:.0%}"
        + (f", {per:.2f} s per attempt" if per is not None else "")
        + ")",
        f"overhead (s): {parts}",
    ] + ([started] if started and spawned else [])


def lines(time: dict[str, Any]) -> list[str]:
    """The breakdown as lines of text (no Markdown beyond a leading ``- ``)."""
    wall = float(time["wall_s"]) or 1e-9
    start = (
        "from the iteralab process's start"
        if time.get("from_process_start")
        else "from the campaign's start (run from another program)"
    )
    out = [f"wall {time['wall_s']:.1f} s ({start}), {time['attempts']} attempt(s):"]

    def part(seconds: float, name: str) -> str:
        return f"- {seconds:7.2f} s {seconds / wall:6.1%}  {name}"

    out.append(part(time["measured_s"], "measured windows"))
    floor = time["floor"]
    out.append(
        part(
            time["floor_s"],
            "the protocol's floor: load "
            f"{floor['load_s']:.2f} s, warm-up {floor['warmup_s']:.2f} s, evaluation "
            f"{floor['evaluation_s']:.2f} s, export {floor['export_s']:.2f} s"
            + (
                f", cold passes {floor['cold_pass_s']:.2f} s (repetition 1 of each variant)"
                if floor.get("cold_pass_s")
                else ""
            )
            + (
                f", the engines' conversions {floor['conversion_s']:.2f} s (built once, by the "
                "pre-flight)"
                if floor.get("conversion_s")
                else ""
            ),
        )
    )
    out.append(
        part(
            time["overhead_s"],
            "the toolkit's overhead"
            + (
                f", {time['overhead_per_attempt_s']:.2f} s per attempt"
                if time.get("overhead_per_attempt_s") is not None
                else ""
            )
            + ":",
        )
    )
    for key, name in OVERHEAD_NAMES.items():
        if key in time["overhead"]:  # a run recorded before the part was timed apart
            out.append("  " + part(time["overhead"][key], name))
    started = launcher(time)
    if started:
        out.append(f"- {started}")
    if time.get("saves_beside_attempts_s"):
        out.append(
            f"- workbook saves beside the attempts (not on the clock): "
            f"{time['saves_beside_attempts_s']:.2f} s"
        )
    return out
