"""Seeds kept apart and determinism applied (R17).

Every declared seed runs each (variant, repetition) as its own attempt, recorded with its
seed; the Summary keeps each seed's median apart in its notes, and the variant's median
stays the one over all seeds. The Protocol's deterministic_algorithms and cudnn_benchmark
are set by the runner, read back into the Manifest, and a Manifest whose state differs
from its protocol's choice is a validate finding. Runner campaigns are 8-item slices.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from tests.support.builders import attempt, attempts, locked_with, make_campaign, variant
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence import determinism, locking
from toolkit.evidence.validate import validate
from toolkit.runner import plan
from toolkit.runner.instruments import reproducibility
from toolkit.runner.plan import Slot
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

# ------------------------------------------------------------------ the plan (pure)


def test_each_repetition_runs_its_rotation_once_per_seed() -> None:
    assert plan.rotation(["1", "4"], 2, seeds=[0, 7]) == [
        Slot(1, 1, "1", 0),
        Slot(1, 2, "4", 0),
        Slot(1, 1, "1", 7),
        Slot(1, 2, "4", 7),
        Slot(2, 1, "4", 0),
        Slot(2, 2, "1", 0),
        Slot(2, 1, "4", 7),
        Slot(2, 2, "1", 7),
    ]


def test_a_settled_attempt_settles_its_own_seed_only() -> None:
    slots = plan.rotation(["1"], 1, seeds=[0, 7])
    done = [{"variant_id": "1", "repetition": 1, "status": "completed", "seed": 0}]
    assert plan.pending(slots, done, unrecorded_seed=0) == [Slot(1, 1, "1", 7)]


def test_an_attempt_recorded_without_a_seed_ran_the_first_one() -> None:
    """Before layout 3 the runner applied the first declared seed without recording it."""
    slots = plan.rotation(["1"], 1, seeds=[0, 7])
    done = [{"variant_id": "1", "repetition": 1, "status": "completed"}]
    assert plan.pending(slots, done, unrecorded_seed=0) == [Slot(1, 1, "1", 7)]


def test_ids_name_the_seed_when_several_are_declared() -> None:
    assert plan.attempt_id(7, Slot(3, 1, "b8-fp32", 7), "5c1e", True) == "a007-b8-fp32-r3-s7-5c1e"
    assert plan.attempt_id(7, Slot(3, 1, "b8-fp32", 0), "5c1e") == "a007-b8-fp32-r3-5c1e"


def test_declared_seeds_are_read_in_order_each_once() -> None:
    assert plan.seeds("0, 7, 0") == [0, 7]
    assert plan.seeds(0) == [0]  # a seed typed as a number
    assert plan.seeds("none") == []


# ------------------------------------------------------------------ determinism (pure)


@pytest.fixture
def torch_flags() -> Iterator[None]:
    """Put torch's determinism flags back as they were: the campaigns here run in-process."""
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
    )
    yield
    torch.use_deterministic_algorithms(saved[0])
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved[1], saved[2]


def test_blank_choices_leave_torch_as_it_is(torch_flags: None) -> None:
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.benchmark = True
    environ: dict[str, str] = {}
    reproducibility.apply(
        {"deterministic_algorithms": None, "cudnn_benchmark": ""}, torch.device("cpu"), environ
    )
    assert (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.benchmark,
        environ,
    ) == (False, True, {})


def test_deterministic_on_cuda_also_fixes_the_cublas_workspace(torch_flags: None) -> None:
    """Set before any cuBLAS handle (a fresh worker); a value the user set is kept."""
    environ: dict[str, str] = {}
    reproducibility.apply({"deterministic_algorithms": "yes"}, torch.device("cuda"), environ)
    assert environ == {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    assert torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.deterministic
    kept = {"CUBLAS_WORKSPACE_CONFIG": ":16:8"}
    reproducibility.apply({"deterministic_algorithms": "yes"}, torch.device("cuda"), kept)
    assert kept == {"CUBLAS_WORKSPACE_CONFIG": ":16:8"}


# ------------------------------------------------------------------ a real campaign


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
    )
    book = make_campaign(
        tmp_path_factory.mktemp("seeds"),
        8,
        [variant("b1-fp32", 8)],
        seeds="0, 7",
        deterministic_algorithms="yes",
        cudnn_benchmark="no",
    )
    result = CliRunner().invoke(cli, ["run", str(book)])
    torch.use_deterministic_algorithms(saved[0])
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved[1], saved[2]
    assert result.exit_code == 0, result.output
    yield book


def test_each_seed_is_its_own_attempt_with_its_seed_recorded(two_seeds: Path) -> None:
    rows = attempts(two_seeds)
    assert [(r["seed"], r["repetition"], r["status"]) for r in rows] == [
        (0, 1, "completed"),
        (7, 1, "completed"),
    ]
    assert re.fullmatch(r"a001-b1-fp32-r1-s0-[0-9a-f]{4}", rows[0]["attempt_id"])
    assert re.fullmatch(r"a002-b1-fp32-r1-s7-[0-9a-f]{4}", rows[1]["attempt_id"])
    manifests = {m["manifest_id"]: m for m in store.read(two_seeds).tables["Manifest"]}
    assert [manifests[r["manifest_id"]]["seeds"] for r in rows] == [
        "torch.manual_seed(0); protocol seeds 0, 7",
        "torch.manual_seed(7); protocol seeds 0, 7",
    ]
    # Inference in eval mode draws nothing at random: both seeds give the same outputs.
    assert rows[0]["predictions_sha256"] == rows[1]["predictions_sha256"]


def test_the_manifest_records_the_determinism_applied(two_seeds: Path) -> None:
    (first, _) = attempts(two_seeds)
    manifest = next(
        m
        for m in store.read(two_seeds).tables["Manifest"]
        if m["manifest_id"] == first["manifest_id"]
    )
    assert re.fullmatch(
        r"torch\.use_deterministic_algorithms\(True\); cudnn\.benchmark=False; "
        r"cudnn\.deterministic=True; CUBLAS_WORKSPACE_CONFIG=unset; torch threads \d+; "
        r"inference only \(eval mode, no sampling\); protocol: deterministic_algorithms yes, "
        r"cudnn_benchmark no",
        manifest["determinism"],
    ), manifest["determinism"]
    assert validate(store.read(two_seeds), two_seeds) == []


def test_the_summary_keeps_each_seeds_median_apart(two_seeds: Path) -> None:
    first, second = attempts(two_seeds)
    (summary,) = store.read(two_seeds).tables["Summary"]
    assert summary["successes"] == 2
    assert summary["median_s"] == pytest.approx((first["measured_s"] + second["measured_s"]) / 2)
    assert (
        f"per seed: seed 0: median {first['measured_s']:.3f} s over 1 run(s); "
        f"seed 7: median {second['measured_s']:.3f} s over 1 run(s); median_s is over all "
        "2 seeds"
    ) in summary["notes"]


def test_resume_finds_every_seed_done(two_seeds: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(two_seeds), "--resume"])
    assert result.exit_code == 0, result.output
    assert len(attempts(two_seeds)) == 2


# ------------------------------------------------------------------ validate


def _recorded_under(choice: str | None, state: str) -> WorkbookData:
    """A locked workbook whose Protocol chooses ``choice`` and whose one attempt's Manifest
    recorded ``state``."""
    return locked_with(
        attempt(), protocol={"deterministic_algorithms": choice}, manifest={"determinism": state}
    )


OFF = (
    "torch.use_deterministic_algorithms(False); cudnn.benchmark=False; "
    "cudnn.deterministic=False; torch threads 2; inference only (eval mode, no sampling)"
)


def test_a_manifest_that_did_not_run_the_protocols_choice_is_a_finding() -> None:
    (finding,) = validate(_recorded_under("yes", OFF))
    row = layout.PROTOCOL.names.index("deterministic_algorithms") + 2
    assert (finding.sheet, finding.row, finding.column, finding.check) == (
        "Manifest",
        2,
        "determinism",
        "determinism",
    )
    assert finding.message == (
        "attempt(s) a1 recorded torch.use_deterministic_algorithms(False), but the Protocol's "
        f"deterministic_algorithms (row {row}) is yes: they did not run under the locked "
        "protocol's determinism; run them again with an iteralab that applies it, or amend the "
        "Protocol to the state they ran under (`iteralab amend`)"
    )


def test_matching_or_blank_choices_are_not_findings() -> None:
    assert validate(_recorded_under("no", OFF)) == []
    assert validate(_recorded_under(None, OFF)) == []  # a workbook from before layout 3


def test_an_amended_choice_does_not_judge_the_attempts_before_it() -> None:
    data = _recorded_under("no", OFF)
    data.forms["Protocol"]["deterministic_algorithms"] = "yes"
    locking.amend(data, "deterministic kernels from now on")
    assert data.tables["Attempts"][0]["pre_amendment"] == "yes"
    assert validate(data) == []


def test_the_recorded_state_reads_back_from_either_text() -> None:
    assert determinism.recorded(OFF) == {
        "deterministic_algorithms": False,
        "cudnn_benchmark": False,
    }
    assert determinism.recorded(None) == {}
