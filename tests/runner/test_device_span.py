"""Device time named honestly (R10): the measured window on the host clock (measured_s),
the same window on the device clock (device_s), and the model's forward calls alone
(forward_device_s, CUDA events around each call, summed).

Here, without CUDA: the columns and their help, the forward timer wrapped around each model
call and nothing else, and a CPU attempt that leaves forward_device_s empty with its
reason. The CUDA half (forward span within the window) is in tests/runner/test_gpu.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace, TracebackType
from typing import Any

import pytest
import torch
from click.testing import CliRunner

from tests.support.builders import (
    attempt,
    attempts,
    locked_with,
    make_campaign,
    unexplained,
    variant,
)
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence import corpus
from toolkit.evidence.validate import validate
from toolkit.runner.engines.torch_engine import TorchClassifier
from toolkit.runner.instruments import probes
from toolkit.runner.tasks.classification import Window, run_batches
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def test_each_timer_is_named_for_what_it_spans() -> None:
    measured, device = layout.ATTEMPTS.column("measured_s"), layout.ATTEMPTS.column("device_s")
    forward = layout.ATTEMPTS.column("forward_device_s")
    assert "host clock" in measured.help
    assert "same measured window on the device clock" in device.help
    assert "device work" not in device.help  # what it claimed before, and was not
    assert "forward calls" in forward.help and "at most device_s" in forward.help
    assert (forward.kind, forward.measurement, forward.since) == (layout.SECONDS, True, 3)
    assert "forward_device_s_reason" in layout.ATTEMPTS.names


class _Spans:
    """A forward timer that records whether the model ran inside it, and how often."""

    def __init__(self) -> None:
        self.inside = False
        self.entered = 0

    def __enter__(self) -> _Spans:
        self.inside, self.entered = True, self.entered + 1
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.inside = False


def test_the_forward_timer_wraps_each_model_call_and_nothing_around_it() -> None:
    spans = _Spans()
    calls: list[bool] = []

    def tokenizer(texts: list[str], **_: Any) -> dict[str, torch.Tensor]:
        assert not spans.inside  # tokenizing is outside the forward span
        return {
            "input_ids": torch.ones(len(texts), 3, dtype=torch.long),
            "attention_mask": torch.ones(len(texts), 3, dtype=torch.long),
        }

    def module(**inputs: torch.Tensor) -> torch.Tensor:
        calls.append(spans.inside)
        return torch.zeros(len(inputs["input_ids"]), 2)

    model = SimpleNamespace(
        tokenizer=tokenizer,
        module=module,
        labels=["a", "b"],
        device=torch.device("cpu"),
        model_revision="m",
        tokenizer_revision="t",
        attention_backend="sdpa",
    )
    window = Window()
    predictor = TorchClassifier(model, variant("b4", 4))  # type: ignore[arg-type]
    run_batches(
        predictor,
        variant("b4", 4),
        [corpus.Item(f"i{i}", f"text {i}") for i in range(10)],
        window,
        lambda done: None,
        spans,
    )  # type: ignore[arg-type]
    assert calls == [True, True, True]  # 4 + 4 + 2 items: three forward calls, each timed
    assert spans.entered == 3 and len(window.predictions) == 10


def test_a_forward_timer_that_timed_nothing_has_no_total() -> None:
    assert probes.ForwardSpans().total_s() is None


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = make_campaign(tmp_path_factory.mktemp("span"), 8, [variant("b1-fp32", 8)])
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    return book


def test_a_cpu_attempt_has_no_forward_span_and_says_why(cpu_run: Path) -> None:
    (row,) = attempts(cpu_run)
    assert unexplained(row) == []
    assert (row["forward_device_s"], row["forward_device_s_reason"]) == (
        None,
        "cpu variant: no device span",
    )
    assert (row["device_s"], row["device_s_reason"]) == (None, "cpu variant: no device span")
    assert isinstance(row["measured_s"], float) and row["measured_s"] > 0
    assert validate(store.read(cpu_run), cpu_run) == []


def test_a_recorded_forward_span_cell_emptied_by_hand_is_a_finding(cpu_run: Path) -> None:
    """A blank in the new column is let pass for older rows only: a row whose other cells say
    it was recorded under a newer layout is named for the blank, the chain catches the
    edit, and the memo no longer reflects the rows it quotes."""
    data = store.read(cpu_run)
    data.tables["Attempts"][0]["forward_device_s_reason"] = None
    assert [(f.sheet, f.row, f.column, f.check) for f in validate(data)] == [
        ("Attempts", 2, "forward_device_s", "missing-reason"),
        ("Attempts", 2, "row_sha256", "chain"),
        ("Decision", 8, "report_run", "stale-memo"),
    ]


def test_rows_recorded_before_the_column_existed_stay_valid() -> None:
    """A layout-2 attempt has neither forward_device_s nor its reason: not a finding."""
    row = attempt()
    assert "forward_device_s" not in row and "forward_device_s_reason" not in row
    assert validate(locked_with(row)) == []
