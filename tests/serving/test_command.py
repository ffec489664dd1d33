"""`iteralab serve-bench` refuses a wrong declaration before sending anything, with the
usage exit code and a message saying what to do."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.paths import SAMPLES
from toolkit.cli import cli
from toolkit.serving import local

ENDPOINT = ["--endpoint", "http://127.0.0.1:9", "--model", "m"]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["serve-bench", *args])
    return result.exit_code, result.output


def test_a_folder_holding_a_run_is_refused_before_any_request(tmp_path: Path) -> None:
    earlier = tmp_path / "rate-2" / "requests.jsonl"
    earlier.parent.mkdir()
    earlier.write_text("evidence\n", encoding="utf-8")
    code, output = _invoke(
        *ENDPOINT, "--rate", "2", "--rate", "3", "--requests", "3", "--out", str(tmp_path)
    )
    assert code == 2
    assert f"error: {tmp_path}: already holds the runs rate-2" in output
    assert "give another output folder (a run never overwrites its evidence)" in output
    assert earlier.read_text(encoding="utf-8") == "evidence\n"
    assert not (tmp_path / "rate-3").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--endpoint", "127.0.0.1:8000", "--model", "m", "--rate", "1", "--requests", "1"],
            "error: endpoint '127.0.0.1:8000' is not an http(s) URL",
        ),
        (
            [*ENDPOINT, "--rate", "1", "--requests", "1", "--target", "ttft_p99=500"],
            "error: target 'ttft_p99=500' is not METRIC_pNN_ms=LIMIT",
        ),
        ([*ENDPOINT, "--requests", "1"], "declare at least one --rate or --concurrency"),
        ([*ENDPOINT, "--rate", "1"], "declare either a request count or a duration"),
        (["--rate", "1", "--requests", "1"], "name the endpoint and its model"),
        (
            [*ENDPOINT, "--rate", "1", "--rate", "1", "--requests", "1"],
            "declare each rate or concurrency once (got rate-1, rate-1)",
        ),
        (
            [*ENDPOINT, "--rate", "1", "--requests", "1", "--max-tokens", "0"],
            "max new tokens must be at least 1, not 0",
        ),
    ],
)
def test_a_wrong_declaration_exits_2_and_says_why(
    tmp_path: Path, args: list[str], message: str
) -> None:
    code, output = _invoke(*args, "--out", str(tmp_path / "out"))
    assert code == 2, output
    assert message in output
    assert not (tmp_path / "out").exists()


def test_a_local_server_without_its_packages_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "NEEDS", (*local.NEEDS, "no_such_serving_package"))
    code, output = _invoke(
        "--start-local",
        str(SAMPLES / "causal_lm"),
        "--rate",
        "1",
        "--requests",
        "1",
        "--out",
        str(tmp_path),
    )
    assert code == 1
    assert "transformers serve cannot start: no_such_serving_package not installed" in output
    assert "what to do: pip install 'iteragpu-lab[serving]'" in output


def test_without_the_serving_extra_the_command_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base install (the wheel's runner extra) lacks httpx: an error naming the extra,
    never an ImportError traceback."""
    import toolkit

    monkeypatch.delattr(toolkit, "serving")
    monkeypatch.setitem(sys.modules, "toolkit.serving", None)  # as if httpx were missing
    code, output = _invoke(
        "--endpoint", "http://127.0.0.1:9", "--model", "m", "--rate", "1", "--out", str(tmp_path)
    )
    assert code == 1
    assert "serve-bench needs the serving extra" in output
    assert "what to do: pip install 'iteragpu-lab[serving]'" in output


def test_the_help_points_at_the_workbook_s_serving_task_and_the_protocol_s_api() -> None:
    code, output = _invoke("--help")
    assert code == 0
    text = " ".join(output.split())
    assert "A campaign workbook records the same measurement as Protocol task serving" in text
    assert "A campaign's Protocol api field takes the same words." in text
