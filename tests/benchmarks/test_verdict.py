"""The benchmarks' one verdict helper: no verdict on a share of wall time on a busy machine,
and the wall ratio beside every verdict on a CPU clock."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest

from tests.support.benchmarks import import_benchmark


@pytest.fixture(scope="module")
def common() -> ModuleType:
    return import_benchmark("common")


def test_a_share_of_wall_time_is_not_judged_above_a_quarter_of_the_machine(
    common: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert common.verdict(0.116, 0.25, load=0.40, share_of_wall=True) is None
    assert capsys.readouterr().out == (
        "ratio 0.116 (target <= 0.25): not judged: other processes took 40% of the machine\n"
    )
    assert common.verdict(0.116, 0.25, load=0.25, share_of_wall=True) is True
    assert common.verdict(0.300, 0.25, load=0.10, share_of_wall=True) is False
    # A ratio that is not a share of wall time is judged however busy the machine.
    assert common.verdict(0.9, 1.0, load=0.9) is True
    assert capsys.readouterr().out.splitlines()[-1] == "ratio 0.900 (target <= 1): met"


def test_a_cpu_clock_verdict_prints_the_wall_ratio_and_flags_a_disagreement(
    common: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert common.verdict(1.008, 1.03, clock="cpu", wall=1.347) is True
    assert capsys.readouterr().out == (
        "ratio 1.008 (target <= 1.03, cpu clock; wall ratio 1.347, the clocks disagree by "
        "34%: read the verdict with care): met\n"
    )
    assert common.verdict(1.000, 1.03, clock="cpu", wall=1.05) is True
    assert capsys.readouterr().out == (
        "ratio 1.000 (target <= 1.03, cpu clock; wall ratio 1.050): met\n"
    )
    with pytest.raises(ValueError, match="needs the wall ratio"):
        common.verdict(1.0, 1.03, clock="cpu")


def test_judge_takes_the_wall_ratio_from_the_same_runs(
    common: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = common.Runs(
        wall={"a": [2.0, 2.2, 2.4], "b": [1.0, 1.0, 1.0]},
        cpu={"a": [1.0, 1.1, 1.2], "b": [1.0, 1.0, 1.0]},
        outside={"a": [None] * 3, "b": [None] * 3},
        others={"a": [0.1, None, 0.5], "b": [0.2, 0.3, 0.4]},
    )
    found = common.ratio(runs.cpu, "a", "b")
    assert common.judge(runs, found, "cpu", 1.2) is True
    assert "wall ratio 2.200, the clocks disagree by 100%" in capsys.readouterr().out
    assert runs.load == pytest.approx(min(1.0, 0.5 / common.MACHINE_CORES))


def test_the_exit_code_tells_missed_from_not_judged(common: ModuleType) -> None:
    assert common.exit_code([True, True]) == 0
    assert common.exit_code([True, None]) == 4
    assert common.exit_code([None, False]) == 1
    assert common.outcome(None) == "not judged"


def test_the_process_tree_counts_a_live_child_s_cpu_seconds(common: ModuleType) -> None:
    """A Ray node lives until the script stops it: its seconds are the script's own, not
    another process's load (OthersOfTree subtracts them from the machine's)."""
    import subprocess

    before = common.tree_cpu_s()
    busy = (
        "import sys, time\n"
        "while time.process_time() < 0.3: pass\n"
        "print('done', flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", busy], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "done\n"
        alive = common.tree_cpu_s()  # the child has not exited: /proc holds its seconds
    finally:
        child.communicate("")
    assert alive - before >= 0.25
