"""A ``python:`` predictor that talks on the runner's channel, or tries to end the campaign.

The predictor's prints (a fake items event whose done is "NaN", a fake record event) must
never pass for the runner's events: every attempt completes with its own record, in a
forked worker, a spawned one and the campaign's own process. A KeyboardInterrupt no Ctrl-C
caused, sys.exit and os._exit fail their attempt, with the cause in its row, and the
campaign goes on.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, unexplained, variant
from toolkit.cli import cli
from toolkit.runner.driver import worker

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

PREDICTORS = """
import json, os, sys

FAKE_ITEMS = {"event": "items", "phase": "measured", "done": "NaN", "total": 8}
FAKE_RECORD = {"event": "record", "record": {"attempt": {"attempt_id": "forged"}}}

def _labels(records):
    return [{"id": r["id"], "label": "emma"} for r in records]

class Talks:
    def __init__(self, variant, folder):
        print(json.dumps(FAKE_ITEMS))
    def predict(self, records):
        print(json.dumps(FAKE_ITEMS))
        print(json.dumps(FAKE_RECORD), flush=True)
        os.write(1, (json.dumps(FAKE_RECORD) + "\\n").encode())  # past sys.stdout
        return _labels(records)

class Quiet:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        return _labels(records)

class Interrupts:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        raise KeyboardInterrupt("the predictor gave up")

class Exits:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        sys.exit(3)

class KillsServer:
    def __init__(self, variant, folder):
        parent = os.getppid()
        with open(f"/proc/{parent}/cmdline", "rb") as cmdline:
            if b"toolkit.runner.driver.forkserver" in cmdline.read():
                os.kill(parent, 9)
    def predict(self, records):
        return _labels(records)

class Blocks:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        import time
        time.sleep(3600)

class HangsInInit:
    def __init__(self, variant, folder):
        import time
        time.sleep(3600)
    def predict(self, records):
        return _labels(records)

class HardExits:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        os._exit(0)
"""


def _campaign(folder: Path, names: list[str], policy: str) -> Path:
    (folder / "hostile_predictors.py").write_text(PREDICTORS, encoding="utf-8")
    variants = [  # one series each: a series varies the batch size only
        variant(
            name.lower(),
            4,
            series=series,
            engine=f"python:hostile_predictors:{name}",
            model_path="head",
            head_path=None,
        )
        for series, name in enumerate(names, 1)
    ]
    return make_campaign(
        folder, 8, variants, reference_variant=names[0].lower(), process_policy=policy
    )


@pytest.mark.parametrize(
    ("policy", "fork_server"), [("fresh", "1"), ("fresh", "0"), ("shared", "1")]
)
def test_a_predictor_printing_fake_events_leaves_every_record_real(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, fork_server: str
) -> None:
    monkeypatch.setenv("ITERALAB_FORK_SERVER", fork_server)
    book = _campaign(tmp_path, ["Talks", "Quiet"], policy)
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "forged" not in result.stdout and '"NaN"' not in result.stdout
    rows = attempts(book)
    assert [(r["variant_id"], r["status"]) for r in rows] == [
        ("talks", "completed"),
        ("quiet", "completed"),
    ]
    assert all(r["attempt_id"].startswith(f"a00{n}-") for n, r in enumerate(rows, 1))
    assert all(r["items_completed"] == 8 and unexplained(r) == [] for r in rows)


@pytest.mark.usefixtures("no_preflight")
@pytest.mark.parametrize("policy", ["fresh", "shared"])
@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("Interrupts", "raised KeyboardInterrupt(the predictor gave up) with no Ctrl-C pressed"),
        ("Exits", "raised SystemExit(3)"),
        ("HardExits", "os._exit(0) was called in the campaign's own process"),
    ],
)
def test_a_predictor_ending_its_process_fails_its_attempt_only(
    tmp_path: Path, policy: str, name: str, cause: str
) -> None:
    book = _campaign(tmp_path, [name, "Quiet"], policy)
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "1"])
    assert result.exit_code == 0, result.output
    failed, completed = attempts(book)
    assert (failed["status"], completed["status"]) == ("failed", "completed")
    if name == "HardExits" and policy == "fresh":
        cause = "worker exited with code 0"  # its own process: exiting is all it can do
    assert cause in str(failed["notes"]), failed["notes"]
    assert unexplained(failed) == []


def test_a_malformed_event_is_skipped_with_a_note() -> None:
    notes: list[str] = []
    lines = [
        '{"event": "items", "phase": "measured", "done": "NaN", "total": 8}\n',
        '{"event": "items", "phase": "measured", "done": true, "total": 8}\n',
        '{"event": "record", "record": {"attempt_id": "a1"}}\n',
        '{"event": "forged"}\n',
        "[1, 2]\n",
        "not json\n",
        json.dumps({"event": "items", "phase": "measured", "done": 4, "total": 8}) + "\n",
    ]
    events = list(worker.read_events(lines, notes.append))
    assert events == [{"event": "items", "phase": "measured", "done": 4, "total": 8}]
    assert [n.split(": ", 1)[0] for n in notes] == [
        "skipped a malformed line on the runner's channel (items event's done is 'NaN', "
        "expected int)",
        "skipped a malformed line on the runner's channel (items event's done is True, "
        "expected int)",
        "skipped a malformed line on the runner's channel (record event without an attempt "
        "row and its status)",
        "skipped a malformed line on the runner's channel (unknown event 'forged')",
        "skipped a malformed line on the runner's channel (a JSON list, not an object)",
        "skipped a malformed line on the runner's channel (not JSON)",
    ]


@pytest.mark.parametrize("preflight", [True, False])
def test_a_predictor_killing_the_fork_server_leaves_the_campaign_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preflight: bool
) -> None:
    """The fork server dies under a worker (here the predictor kills it, in the pre-flight's
    fork or the first attempt's): the campaign spawns its later workers instead."""
    if not preflight:
        monkeypatch.setattr("toolkit.commands.check.before_run", lambda *args: [])
    book = _campaign(tmp_path, ["KillsServer", "Quiet"], "fresh")
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "1"])
    assert "Traceback" not in result.output
    assert result.exit_code == 0, "".join(traceback.format_exception(*result.exc_info))
    assert [r["status"] for r in attempts(book)] == ["completed", "completed"]


@pytest.mark.usefixtures("no_preflight")
def test_a_blocking_predict_in_the_campaign_s_process_is_stopped_at_its_timeout(
    tmp_path: Path,
) -> None:
    """Process policy shared: a predict() that never returns checks no deadline; the
    campaign's alarm fails its attempt a few seconds past the timeout, and goes on."""
    book = _campaign(tmp_path, ["Blocks", "Quiet"], "shared")
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "1", "--timeout", "2"])
    assert result.exit_code == 0, result.output
    blocked, completed = attempts(book)
    assert (blocked["status"], completed["status"]) == ("failed", "completed")
    assert (
        "timed out during load: still running 7 s after it started, past the attempt timeout of 2 s"
        in str(blocked["notes"])
    ), blocked["notes"]
    assert unexplained(blocked) == []


@pytest.mark.parametrize("policy", ["fresh", "shared"])
def test_a_predictor_hanging_in_the_pre_flight_is_stopped_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    """A constructor that never returns: the pre-flight's worker is killed once that step
    runs past the attempts' timeout and its grace (in the campaign's own process an alarm
    makes it the variant's problem); `run` stops before any attempt."""
    monkeypatch.setattr("toolkit.runner.driver.campaign.KILL_GRACE_S", 1.0)
    book = _campaign(tmp_path, ["HangsInInit"], policy)
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "1", "--timeout", "2"])
    assert result.exit_code == 1, result.output
    said = {
        "fresh": "the pre-flight stopped: loading head for hangsininit took more than 3 s, and "
        "its worker process was killed; no attempt was run or recorded",
        "shared": "variant hangsininit: its load and first batch took more than 3 s: stopped",
    }
    assert said[policy] in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert attempts(book) == []


@pytest.mark.parametrize("policy", ["fresh", "shared"])
@pytest.mark.parametrize(
    ("name", "cause"),
    [
        (
            "Interrupts",
            "python:hostile_predictors:Interrupts raised KeyboardInterrupt with no Ctrl-C "
            "pressed: the predictor gave up (at hostile_predictors.py:29, in predict)",
        ),
        (
            "Exits",
            "python:hostile_predictors:Exits raised SystemExit: 3 (at hostile_predictors.py:35, "
            "in predict)",
        ),
    ],
)
def test_a_predictor_ending_the_pre_flight_is_named_as_its_cause(
    tmp_path: Path, policy: str, name: str, cause: str
) -> None:
    """No Ctrl-C pressed: the pre-flight refuses the run naming the predictor's code, as an
    attempt's row does, rather than stopping as a Ctrl-C or dying as the toolkit's fault."""
    book = _campaign(tmp_path, [name, "Quiet"], policy)
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "1"])
    assert result.exit_code == 1, result.output
    assert cause in result.stderr, result.stderr
    assert "toolkit's fault" not in result.stderr and "Traceback" not in result.output
    assert attempts(book) == []
