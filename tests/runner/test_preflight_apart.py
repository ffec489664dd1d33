"""`run`'s pre-flight in a worker process (issue 34): its outcome travels back as JSON; a
worker that dies without one stops the run with its stderr, and nothing is recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, variant
from toolkit.cli import cli
from toolkit.runner.driver import forkserver, worker
from toolkit.runner.preflight.result import (
    PreflightError,
    Problem,
    VariantCheck,
    from_json,
    to_json,
)

#: A stand-in worker: reads its request, prints a library's line and a traceback's last
#: line, and dies without an outcome.
DYING_WORKER = (
    "import sys; sys.stdin.read(); print('a library printed this'); "
    "print('RuntimeError: the worker broke', file=sys.stderr); sys.exit(3)"
)


def test_a_pre_flight_worker_that_dies_without_an_outcome_stops_the_run_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = make_campaign(tmp_path, 4, [variant("b1-fp32", 1)], process_policy="fresh")

    def dying(env: dict[str, str], stderr: IO[Any]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", DYING_WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )

    monkeypatch.setenv(forkserver.DISABLE_ENV, "0")  # no fork server: spawn() starts it
    monkeypatch.setattr(forkserver, "spawn", dying)
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 1, result.output
    assert (
        f"error: {book}: the pre-flight's worker process exited with code 3 before saying its "
        "outcome; stderr: RuntimeError: the worker broke"
    ) in result.output
    assert f"`iteralab check {book}` to see the whole traceback" in result.output
    assert attempts(book) == []


def test_the_outcome_travels_as_json_checks_or_the_refusal() -> None:
    checks = [VariantCheck("b1", "torch", 1.5, 0.02, 1, None, 0.05, 0.0)]
    assert from_json(to_json(checks, []), True, "book.xlsx") == checks
    problems = [Problem(("b4", "b8"), "no such folder", "fix model_path")]
    with pytest.raises(PreflightError) as refused:
        from_json(to_json(None, problems), True, "book.xlsx")
    assert refused.value.problems == problems
    assert "variant b4, b8: no such folder\n      fix: fix model_path" in refused.value.message
    assert "iteralab amend book.xlsx" in str(refused.value.hint)


def test_a_workers_output_lines_that_are_not_events_are_skipped() -> None:
    lines = ['{"event": "line", "text": "loading"}\n', "[torch.onnx] exporting\n", "[1, 2]\n"]
    assert list(worker.read_events(lines)) == [{"event": "line", "text": "loading"}]
