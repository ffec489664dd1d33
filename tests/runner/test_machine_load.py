"""Machine load (issue 35, defect 3): the one meter of other processes' CPU time, and the
verdicts that name a window taken under load. The Attempts row's columns are checked on
real attempts in tests/runner/test_attempt.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.benchmarks import import_benchmark
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence import chain
from toolkit.report import summary
from toolkit.report.refresh import refresh
from toolkit.runner.instruments import machine_load
from toolkit.workbook import store
from toolkit.workbook.model import Formula, WorkbookData


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux: /proc/stat")
def test_the_meter_counts_a_busy_process_beside_the_block() -> None:
    busy = subprocess.Popen(
        [sys.executable, "-c", "print(flush=True)\nwhile True: pass"], stdout=subprocess.PIPE
    )
    try:
        assert busy.stdout is not None and busy.stdout.readline()  # spinning from here on
        before = _cpu_seconds(busy.pid)
        with machine_load.OthersMeter() as meter:
            time.sleep(1.0)  # this process idles: what the machine did is the others'
        spun = _cpu_seconds(busy.pid) - before
    finally:
        busy.kill()
        busy.wait()  # after the block: a waited child's time would count as this process's
        if busy.stdout is not None:
            busy.stdout.close()
    assert spun > 0.1, spun  # the child ran (on a shared host it gets a slice of a core)
    assert meter.others_s is not None and meter.cores is not None and meter.share is not None
    # Every other process's time is in the count, the child's among it (two clock ticks of
    # rounding on either reading).
    assert meter.others_s >= spun - 2 / os.sysconf("SC_CLK_TCK")
    assert meter.wall_s is not None and meter.wall_s >= 1.0
    assert meter.cores == pytest.approx(meter.others_s / meter.wall_s)
    assert 0 < meter.share <= 1
    assert meter.share == pytest.approx(min(1.0, meter.cores / machine_load.MACHINE_CORES))


def test_without_proc_stat_the_meter_counts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """On an OS without /proc/stat the row's columns are empty with NOT_MEASURABLE, never 0."""
    monkeypatch.setattr(machine_load, "machine_busy_s", lambda: None)
    with machine_load.OthersMeter() as meter:
        pass
    assert (meter.others_s, meter.cores, meter.share) == (None, None, None)
    assert meter.wall_s is not None
    assert machine_load.NOT_MEASURABLE.startswith("not measurable on this OS")


def test_the_benchmarks_read_load_through_the_same_meter() -> None:
    """One implementation: the benchmarks' OthersMeter is the runner's."""
    common = import_benchmark("common")
    assert common.OthersMeter is machine_load.OthersMeter
    assert not hasattr(common, "machine_busy_s") and not hasattr(common, "own_cpu_s")


def _value(cell: object) -> object:
    return cell.value if isinstance(cell, Formula) else cell


def _loaded_campaign(shares: dict[str, float]) -> WorkbookData:
    """The report tests' campaign with others_cpu_share on the named attempts (sealed as
    the runner seals rows: the campaign validates clean)."""
    data = report_campaign.campaign()
    for row in data.tables["Attempts"]:
        if row["attempt_id"] in shares:
            row["others_cpu_share"] = shares[row["attempt_id"]]
            row["others_cpu_s"] = round(shares[row["attempt_id"]] * row["measured_s"] * 2, 3)
        row["row_sha256"] = None
    chain.seal_new_rows(data)
    return data


def test_a_variant_measured_under_load_says_so_and_keeps_its_numbers(tmp_path: Path) -> None:
    quiet = report_campaign.campaign()
    refresh(quiet, tmp_path)
    # b8-fp32: repetitions 1 and 2 under load, 3 just at the threshold (not above it);
    # b1-fp32: quiet windows; the rest of the campaign recorded before the columns existed.
    loaded = _loaded_campaign(
        {
            "b8-fp32-r1": 0.61,
            "b8-fp32-r2": 0.3,
            "b8-fp32-r3": summary.LOADED_SHARE,
            "b1-fp32-r1": 0.02,
        }
    )
    result = refresh(loaded, tmp_path)
    rows = {r["variant_id"]: r for r in loaded.tables["Summary"]}
    before = {r["variant_id"]: r for r in quiet.tables["Summary"]}
    note = rows["b8-fp32"]["notes"]
    assert (
        "UNDER LOAD: 2 of 4 success(es) measured while other processes took more than 25% of "
        "the machine's CPU (b8-fp32-r1 61%, b8-fp32-r2 30%; Attempts others_cpu_share)"
    ) in note
    assert "UNDER LOAD" not in rows["b1-fp32"]["notes"]
    assert "UNDER LOAD" not in (rows["b4-fp32"]["notes"] or "")
    for vid, row in rows.items():  # flagged, never changed
        for name in ("median_s", "min_s", "max_s", "throughput_items_s", "campaign_s"):
            assert _value(row[name]) == _value(before[vid][name]), (vid, name)
    uncertainty = loaded.forms["Decision"]["remaining_uncertainty"]
    assert (
        "b8-fp32's times rest on 2 of 4 window(s) taken under load (other processes above "
        "25% of the machine's CPU), so they may be stretched by it"
    ) in uncertainty
    assert result.decision.chosen is not None  # a flag, not a veto
    # The column's help states the threshold the verdicts apply.
    assert f"Above {summary.LOADED_SHARE}" in layout.ATTEMPTS.column("others_cpu_share").help


def test_report_md_names_the_windows_taken_under_load(tmp_path: Path) -> None:
    book = tmp_path / "campaign.xlsx"
    store.save(_loaded_campaign({"b8-fp32-r1": 0.61}), book)
    result = CliRunner().invoke(cli, ["report", str(book)])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "campaign_report" / "report.md").read_text(encoding="utf-8")
    durations = text.split("## Durations", 1)[1].split("\n## ", 1)[0]
    assert "- b8-fp32: " in durations and "UNDER LOAD: 1 of 4 success(es)" in durations
