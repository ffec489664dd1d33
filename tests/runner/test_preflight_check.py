"""The pre-flight (issue 38, item 3): `iteralab check` resolves every variant's model, head
and engine, loads each model once and runs a batch, and estimates hours and cost before
the rented clock starts; `run` runs it first, so a model that cannot load fails before any
attempt row; validate names a model or head path that names nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import make_campaign, variant
from tests.support.paths import SAMPLES
from toolkit.cli import cli
from toolkit.commands.check import load_failure_advice
from toolkit.evidence import journal
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

OFFLINE_ID = "example-org/not-in-the-cache"


def test_check_names_the_variant_and_the_fix_for_an_offline_hub_id(
    tmp_path: Path, runner: CliRunner
) -> None:
    book = make_campaign(
        tmp_path,
        8,
        [
            variant("b1-fp32", 1, model_path=OFFLINE_ID),
            variant("b4-fp32", 4, model_path=OFFLINE_ID),
        ],
    )
    result = runner.invoke(cli, ["check", str(book)])
    assert result.exit_code == 1, result.output
    assert "pre-flight: 1 problem(s); no attempt was run or recorded" in result.stderr
    assert (
        f"variant b1-fp32, b4-fp32: model_path '{OFFLINE_ID}': not in the local cache and not "
        "downloaded"
    ) in result.stderr
    assert (
        "fix: download it once online (unset HF_HUB_OFFLINE), or point model_path at a local folder"
    ) in result.stderr
    assert f"`iteralab amend {book} --reason ...`" in result.stderr  # the model is locked


def test_run_runs_the_check_first_so_no_attempt_row_is_written(
    tmp_path: Path, runner: CliRunner
) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 1, model_path=OFFLINE_ID)])
    result = runner.invoke(cli, ["run", str(book), "--quiet"])
    assert result.exit_code == 1, result.output
    assert "variant b1-fp32: model_path" in result.stderr
    assert not journal.journal_path(book).exists()
    assert store.read(book).tables["Attempts"] == []


def test_check_on_the_sample_prints_the_estimated_hours_and_cost(runner: CliRunner) -> None:
    result = runner.invoke(
        cli, ["check", str(SAMPLES / "example_campaign.xlsx"), "--variant", "b8-fp32"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(
        line.startswith(
            "  b8-fp32: encoder + linear head (transformers, mean "
            "pooling), cpu, fp32, attention sdpa; loaded in "
        )
        for line in lines
    )
    assert "estimate (rough: one batch each after its load, not a measurement):" in lines
    assert any(line.startswith("  b8-fp32: 5 attempt(s) x ~") for line in lines)
    assert any(
        line.startswith("  campaign: ~") and line.endswith(" h of attempts, one after another")
        for line in lines
    )
    (cost,) = [line for line in lines if line.startswith("  demo-cpu-host: ")]
    assert "-day plan (cheapest demo-cpu-host price for the " in cost
    assert "1 lot(s) (rental demo-rental) x " in cost
    assert cost.endswith(" USD (EXAMPLE price, not a quote)")  # the demo host's typed price
    assert lines[-1] == "ready: every variant resolves, loads and runs a batch"


def test_check_refuses_a_head_fitted_on_another_encoder(tmp_path: Path, runner: CliRunner) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 1)], lock=False)
    meta_path = tmp_path / "head" / "head.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    name = sorted(meta["encoder"]["files"])[0]
    meta["encoder"]["files"][name] = "0" * 64
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    result = runner.invoke(cli, ["check", str(book)])
    assert result.exit_code == 1, result.output
    assert "variant b1-fp32: head " in result.stderr
    assert f"was fitted on another encoder: files differ from head.json ({name})" in (result.stderr)
    assert "then check again" in result.stderr  # not locked: no amendment needed


def test_validate_names_a_model_folder_and_a_head_path_that_name_nothing(
    tmp_path: Path, runner: CliRunner
) -> None:
    book = make_campaign(
        tmp_path,
        8,
        [variant("b1-fp32", 1, model_path="models/enc/minilm", head_path="heads/missing")],
        lock=False,
    )
    shutil.rmtree(tmp_path / "head")
    result = runner.invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code == 1
    found = {(f["column"], f["check"]): f["message"] for f in json.loads(result.stdout)["findings"]}
    assert found[("model_path", "model-files")].startswith(
        "variant 'b1-fp32': model_path 'models/enc/minilm': no such folder"
    )
    assert found[("head_path", "model-files")].startswith(
        "variant 'b1-fp32': head_path 'heads/missing': no folder "
    )


def test_every_attempt_failed_during_load_says_to_fix_and_amend() -> None:
    def row(vid: str, status: str, reason: str | None) -> dict[str, object]:
        return {
            "variant_id": vid,
            "protocol_sha256": "s",
            "status": status,
            "load_s_reason": reason,
            "notes": "ModelError: model_path 'x': no such folder",
        }

    rows = [
        row("b1-fp32", "failed", "failed during load: an unfinished phase has no duration")
    ] * 2 + [
        row("b4-fp32", "failed", "failed during load: ..."),
        row("b4-fp32", "completed", None),
        row("b8-fp32", "failed", "not reached: ..."),
    ]
    (advice,) = load_failure_advice(Path("c.xlsx"), rows, "s")
    assert advice.startswith(
        "variant b1-fp32: all 2 attempt(s) failed during load "
        "(ModelError: model_path 'x': no such folder): the model never "
        "ran. Fix model_path/head_path (`iteralab check c.xlsx` says what "
        "is wrong), then `iteralab amend c.xlsx --reason ...`"
    )
    assert load_failure_advice(Path("c.xlsx"), rows, "other lock") == []
