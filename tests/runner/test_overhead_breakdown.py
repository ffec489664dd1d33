"""Issue 34: every run says where its wall time went; no workbook save waits between attempts."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import ENV, attempts, make_campaign, variant
from toolkit import editing
from toolkit.cli import cli
from toolkit.commands import display
from toolkit.evidence.validate import validate
from toolkit.plumbing import beside
from toolkit.report import run_time
from toolkit.runner.driver import campaign, forkserver
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

SERIES = [variant("b1-fp32", 1), variant("b4-fp32", 4)]
FLOOR = ("load_s", "warmup_s", "evaluation_s", "export_s")


def test_a_run_prints_records_and_reports_where_its_wall_time_went(tmp_path: Path) -> None:
    """wall = measured windows + the protocol's floor + the toolkit's overhead, each part
    summed from what was timed; the same document in the JSON summary, beside the workbook
    and in report.md."""
    book = make_campaign(
        tmp_path, 6, SERIES, repetitions=2, warmup_rule="first 4 items once, not timed"
    )
    result = CliRunner().invoke(cli, ["run", str(book), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.splitlines()[-1])
    time_ = summary["time"]
    rows = attempts(book)
    assert time_["attempts"] == len(rows) == 4
    assert time_["measured_s"] == pytest.approx(sum(r["measured_s"] for r in rows), abs=2e-3)
    for column in FLOOR:
        assert time_["floor"][column] == pytest.approx(sum(r[column] for r in rows), abs=2e-3)
    assert time_["floor"]["warmup_s"] > 0  # the protocol's warm-up pass is floor, not overhead
    parts = time_["measured_s"] + time_["floor_s"] + time_["overhead_s"]
    assert parts == pytest.approx(time_["wall_s"], abs=0.01)
    assert time_["overhead_s"] == pytest.approx(sum(time_["overhead"].values()), abs=0.01)
    assert all(v >= 0 for v in time_["overhead"].values())
    assert time_["overhead"]["preflight_s"] > 0  # a model loaded, its batches run
    # Not from pytest's own start: the run and the pre-flight before it.
    assert time_["wall_s"] <= summary["elapsed_s"] + time_["overhead"]["preflight_s"] + 0.01
    assert time_["from_process_start"] is False
    assert run_time.last(book) == time_
    # report.md restates the last run's breakdown, each part named.
    result = CliRunner().invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    md = (beside.report_folder(book) / "report.md").read_text(encoding="utf-8")
    section = md.split("## Where the last run's time went", 1)[1].split("\n## ", 1)[0]
    assert f"wall {time_['wall_s']:.1f} s" in section
    for name in run_time.OVERHEAD_NAMES.values():
        assert name in section


#: Run `iteralab run BOOK` in a fresh interpreter, then write the torch and transformers
#: modules it imported to OUT, whatever the run's end.
MODULES_AFTER_RUN = """
import sys
from toolkit.cli import cli
try:
    cli.main(["run", sys.argv[1]])
finally:
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers"))
    open(sys.argv[2], "w").write(" ".join(heavy))
"""


@pytest.mark.parametrize("fork_server", ["1", "0"], ids=["fork-server", "python-m-worker"])
def test_the_pre_flight_runs_in_a_worker_so_the_campaign_process_never_imports_torch(
    tmp_path: Path, fork_server: str
) -> None:
    """Process policy fresh: the pre-flight runs where the attempts run (forked by the fork
    server, or its own interpreter); the campaign's process says its lines and its estimate,
    and holds neither torch nor a model while the attempts run."""
    book = make_campaign(
        tmp_path, 4, SERIES, repetitions=1, warmup_rule="none", process_policy="fresh"
    )
    modules = tmp_path / "modules.txt"
    run = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER_RUN, str(book), str(modules)],
        env={**ENV, forkserver.DISABLE_ENV: fork_server},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert modules.read_text(encoding="utf-8") == ""
    assert "pre-flight of 2 variant(s)" in run.stdout
    for vid, size in (("b1-fp32", 1), ("b4-fp32", 4)):
        assert f"  {vid}: encoder + linear head" in run.stdout
        assert f"one batch of {size} in " in run.stdout
    assert "estimate (rough: one batch each after its load, not a measurement):" in run.stdout
    assert [r["status"] for r in attempts(book)] == ["completed", "completed"]
    time_ = run_time.last(book)
    assert time_ is not None
    # The pre-flight's batches, timed in the worker: a part of the pre-flight's time.
    assert 0 < time_["preflight_work_s"] < time_["overhead"]["preflight_s"]


def test_the_text_output_says_the_breakdown_in_two_lines(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 4, SERIES[:1], repetitions=1, warmup_rule="none")
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    time_ = run_time.last(book)
    assert time_ is not None
    lines = [line for line in result.output.splitlines() if line.startswith("time: ")]
    assert lines == [f"time: {line}" for line in run_time.short(time_)]
    assert lines[0].startswith(f"time: wall {time_['wall_s']:.1f} s = measured windows ")


def test_workbook_saves_run_beside_the_next_attempt_not_between_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh workers, an ingestion due after every attempt: each save during the run is
    made by the background thread while a worker runs; only the final one waits."""
    if not forkserver.available():
        pytest.skip("no fork server on this platform")
    book = make_campaign(
        tmp_path, 8, SERIES, repetitions=2, process_policy="fresh", warmup_rule="none"
    )
    saves: list[tuple[str, float, float]] = []
    forks: list[float] = []
    real_ingest, real_start = editing.ingest, campaign.Workers.start

    def timed_ingest(*args: Any, **kwargs: Any) -> Any:
        began = time.monotonic()
        try:
            return real_ingest(*args, **kwargs)
        finally:
            saves.append((threading.current_thread().name, began, time.monotonic()))

    def timed_start(self: campaign.Workers) -> Any:
        forks.append(time.monotonic())
        return real_start(self)

    monkeypatch.setattr(editing, "ingest", timed_ingest)
    monkeypatch.setattr(campaign.Workers, "start", timed_start)
    options = campaign.Options(ingest_every_s=0)
    prepared = campaign.prepare(book, options)
    result = campaign.run(prepared, options, display.make(True))
    assert [r["attempt"]["status"] for r in result.records] == ["completed"] * 4
    during, final = saves[:-1], saves[-1]
    assert during and all(name == "iteralab-ingest" for name, _, _ in during)
    assert final[0] == threading.main_thread().name
    # A save in the background overlapped an attempt's start (taking the worker forked
    # ahead): the next attempt did not wait.
    assert any(began <= fork <= ended for _, began, ended in during for fork in forks)
    assert result.time is not None and result.time["saves_beside_attempts_s"] > 0
    data = store.read(book)
    assert len(data.tables["Attempts"]) == 4
    assert validate(data, book) == []
