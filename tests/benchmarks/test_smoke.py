"""The benchmark scripts run end to end on a tiny slice and print their ratio lines.

These tests prove the scripts work; they never assert a performance target
(that is each script's own verdict and exit code). Each CPU script runs with a
few items and one run; gpu_check.py is run without CUDA (exit 3) and as a CPU
dry run of its plumbing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.benchmarks import import_benchmark
from tests.support.builders import make_campaign, variant
from tests.support.paths import BENCHMARKS, ROOT

RATIO_LINE = re.compile(
    r"^ratio \d+\.\d{3} \(target <= [\d.]+"
    r"(?:, \w+ clock; wall ratio \d+\.\d{3}(?:, the clocks disagree by \d+%: read the verdict "
    r"with care)?)?\): (met|missed|not judged)(?:: other processes took \d+% of the machine)?$",
    re.MULTILINE,
)

pytestmark = pytest.mark.slow


def _script(name: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _verdicts(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode in (0, 1, 4), done.stdout + done.stderr
    verdicts = RATIO_LINE.findall(done.stdout)
    expected = 1 if "missed" in verdicts else 4 if "not judged" in verdicts else 0
    assert done.returncode == expected
    return verdicts


@pytest.fixture(scope="module")
def gpu_common() -> ModuleType:
    return import_benchmark("gpu_common")


def test_runner_overhead_prints_one_ratio_line_and_identical_predictions() -> None:
    done = _script("runner_overhead.py", "--items", "8", "--runs", "1", "--batch", "4")
    assert len(_verdicts(done)) == 1
    assert "predictions runner vs hand loop: identical (8/8)" in done.stdout.splitlines()
    assert "results row: | " in done.stdout


def test_vs_pipeline_prints_a_ratio_line_per_grouping_and_the_grouping_effect() -> None:
    done = _script("vs_pipeline.py", "--items", "8", "--runs", "1", "--batch", "4")
    assert len(_verdicts(done)) == 2
    lines = done.stdout.splitlines()
    assert "predictions runner vs pipeline: identical (8/8)" in lines
    assert "predictions runner sorted vs pipeline sorted: identical (8/8)" in lines
    assert sum(line.startswith("grouping effect, ") for line in lines) == 2


def test_input_pipeline_prints_one_ratio_line_and_identical_predictions() -> None:
    done = _script("input_pipeline.py", "--items", "8", "--runs", "1", "--batch", "4")
    assert len(_verdicts(done)) == 1
    assert "predictions overlapped vs sequential: identical (8/8)" in done.stdout.splitlines()
    assert "results row: | " in done.stdout


def test_engines_interleaves_rounds_and_prints_both_clocks_with_the_load() -> None:
    done = _script("engines.py", "--items", "16", "--rounds", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    engines = ("t8-fp32", "ort-fp32", "ort-int8", "tfidf")
    for round_no in (1, 2):
        ran = [line.split()[2] for line in lines if line.startswith(f"  round {round_no}  ")]
        assert sorted(ran) == sorted(engines), round_no
    first = [line.split()[2] for line in lines if line.startswith("  round 1  ")]
    second = [line.split()[2] for line in lines if line.startswith("  round 2  ")]
    assert second == first[1:] + first[:1]  # rotated order
    assert any(line.startswith("other processes kept ") for line in lines)
    for clock in ("wall seconds:", "CPU seconds of this process (the verdict clock):"):
        at = lines.index(clock)
        assert [line.split()[0] for line in lines[at + 1 : at + 5]] == list(engines)
        assert all(" median " in line and " min " in line for line in lines[at + 1 : at + 5])
    assert any(line.startswith("measured window / torch fp32's, CPU clock: ") for line in lines)
    assert any(line.startswith("results row: | ") for line in lines)


def test_whole_campaign_runs_through_the_cli_and_prints_its_ratio_line() -> None:
    done = _script(
        "whole_campaign.py", "--items", "8", "--repetitions", "1", "--variant", "b8-fp32"
    )
    assert len(_verdicts(done)) == 1
    assert re.search(r"^a001-b8-fp32-r1-[0-9a-f]{4} ", done.stdout, re.MULTILINE)
    assert re.search(
        r"^wall time [\d.]+ s for 1 attempts = measured windows ", done.stdout, re.MULTILINE
    )


def test_overhead_replays_a_recorded_run_on_the_simulated_card(tmp_path: Path) -> None:
    """The simulated H200 from a run recorded here: every assumption printed, wall = windows
    + floor + overhead per attempt, each attempt of the torch engine on the card."""
    book = make_campaign(
        tmp_path,
        8,
        [variant("b1-fp32", 1), variant("b8-bf16", 8, series=2, precision="bf16")],
        process_policy="fresh",
    )
    ran = subprocess.run(
        [sys.executable, "-m", "toolkit", "run", str(book), "--quiet"],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    done = _script("overhead.py", "--replay", str(book), "--card", "h200")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for start in (
        "card h200: benchmarks/README.md",
        "  window per 1,000 items, fp32 b8: 1.20 s",
        "  variant b1-fp32: g1-fp32 median: ",
        "  variant b8-bf16: g8-bf16 repetition 2 (warm shapes): ",
        "  CUDA context per fresh worker (floor: load): 2.40 s",
        "  weights to the device (floor: load): ",
        "  shape warm-up setup, bf16 (floor: load): ",
        "  driver probe per fresh worker (overhead): ",
    ):
        assert any(line.startswith(start) for line in lines), start
    assert "its workers forked by the fork server" in done.stdout
    assert "(run of campaign.xlsx's run, 2 of 2 attempts on the card)" in done.stdout
    per = re.search(
        r"per attempt: wall ([\d.]+) s = windows ([\d.]+) \+ floor ([\d.]+) \+ overhead "
        r"([\d.]+);",
        done.stdout,
    )
    assert per is not None
    wall, windows, floor, overhead = map(float, per.groups())
    assert wall == pytest.approx(windows + floor + overhead, abs=0.02)
    # 2 attempts of 8 items each at the card's measured rate per 1,000 items.
    assert windows == pytest.approx((5.46 + 0.98) * 8 / 1000 / 2, abs=0.01)
    assert floor > 2.40  # at least a CUDA context per attempt
    found = re.search(
        r"overhead s per attempt: ratio ([\d.]+) \(target <= 0.5\): (met|missed)$",
        done.stdout,
        re.M,
    )
    assert found is not None and float(found[1]) == pytest.approx(overhead, abs=0.006)
    assert found[2] == ("met" if float(found[1]) <= 0.5 else "missed")
    assert done.returncode == (0 if found[2] == "met" else 1)


def test_gpu_check_without_cuda_says_so_and_exits_3() -> None:
    done = _script("gpu_check.py", CUDA_VISIBLE_DEVICES="")
    assert done.returncode == 3
    assert done.stdout.startswith("gpu_check needs a CUDA device: torch ")
    assert "--cpu-dry-run checks the script only." in done.stdout


def test_gpu_check_cpu_dry_run_runs_its_campaign_and_report() -> None:
    done = _script(
        "gpu_check.py",
        "--cpu-dry-run",
        "--items",
        "8",
        "--repetitions",
        "1",
        "--batches",
        "8",
        "--precisions",
        "bf16",
        "--groupings",
        "sorted",
        "--card",
        "h200",
        CUDA_VISIBLE_DEVICES="",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "catalog row: h200 (NVIDIA H200 SXM), 4800 GB/s, BF16 dense 989.5 TFLOP/s" in lines
    assert (
        "campaign: 1 variants x 1 repetitions, 8 items, shared process, through "
        "`iteralab run`" in lines
    )
    assert any(line.startswith("g8-bf16-sorted ") for line in lines)
    assert lines[-1] == "checks: all passed"


@pytest.mark.parametrize(
    ("name", "gib", "slug"),
    [
        ("NVIDIA H200", 140.4, "h200"),
        ("NVIDIA H100 80GB HBM3", 79.6, "h100-sxm"),
        ("NVIDIA A100-SXM4-80GB", 79.2, "a100-80gb-sxm"),
        ("NVIDIA GeForce RTX 4090", 23.6, "rtx-4090"),
    ],
)
def test_gpu_check_matches_a_device_name_to_its_catalog_row(
    gpu_common: ModuleType, name: str, gib: float, slug: str
) -> None:
    from toolkit.planner.gpus import load_catalog

    assert gpu_common.match_card(name, int(gib * 2**30), load_catalog()).slug == slug


@pytest.mark.parametrize(
    ("name", "gib"),
    [
        ("NVIDIA H100 PCIe", 79.6),  # another form factor, another bandwidth
        ("NVIDIA A100-SXM4-40GB", 39.4),  # half the catalog row's memory
        ("Tesla T4", 14.6),  # not in the catalog
    ],
)
def test_gpu_check_leaves_an_unknown_card_without_ceilings(
    gpu_common: ModuleType, name: str, gib: float
) -> None:
    from toolkit.planner.gpus import load_catalog

    assert gpu_common.match_card(name, int(gib * 2**30), load_catalog()) is None


def test_serving_without_guidellm_exits_2_and_says_where_to_install_it() -> None:
    """guidellm lives in a venv of its own (it needs torch and pins click): never here."""
    done = _script("serving.py", "--guidellm", str(ROOT / "no-such-guidellm"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "guidellm not found: install it in a venv of its own" in done.stdout
