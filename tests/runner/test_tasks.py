"""Task kinds and their rows: every measured Attempts column a kind leaves empty must say
why, and a measured column that no kind fills stops the attempt before it is recorded.

The throwaway column ``tokenize_s`` is added to a fixture layout (the Attempts sheet of
:mod:`toolkit.layout` with one more measured column, as a newer layout would add it);
both task kinds run a real attempt whose model is missing (it fails at load, quickly,
and still writes a whole row).
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import (
    GENERATION_PROTOCOL,
    RUNNER_PROTOCOL,
    SERVING_PROTOCOL,
    gen_variant,
    make_campaign,
    make_generation_campaign,
    make_serving_campaign,
    serving_variant,
    variant,
)
from toolkit import layout
from toolkit.runner.attempt import run_attempt
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks import columns

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _spec(book: Path, protocol: dict[str, Any], row: dict[str, Any]) -> AttemptSpec:
    return AttemptSpec(
        workbook=str(book),
        attempt_id="a001-missing",
        variant=row,
        repetition=1,
        order_position=1,
        protocol=protocol,
        protocol_sha256="p",
        corpus_sha256="c",
        corpus_items=4,
    )


@pytest.fixture(params=["classification", "generation", "serving"])
def missing_model(request: pytest.FixtureRequest, tmp_path: Path) -> AttemptSpec:
    """An attempt of each task kind whose model folder (a serving one's endpoint) does not
    exist."""
    if request.param == "serving":
        if importlib.util.find_spec("httpx") is None:
            pytest.skip("the serving extra (httpx) is not installed: pip install '.[serving]'")
        row = serving_variant("r1", 1)  # port 9 on 127.0.0.1: nothing answers
        book = make_serving_campaign(tmp_path, 4, [row])
        return _spec(book, SERVING_PROTOCOL, row)
    if request.param == "classification":
        row = variant("b1-fp32", 4, model_path="no_such_model")
        return _spec(make_campaign(tmp_path, 4, [variant("b1-fp32", 4)]), RUNNER_PROTOCOL, row)
    row = gen_variant("b4-fp32", 4, model_path="no_such_model")
    book = make_generation_campaign(tmp_path, 4, [gen_variant("b4-fp32", 4)])
    return _spec(book, GENERATION_PROTOCOL, row)


@pytest.fixture
def throwaway_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixture layout: Attempts with one more measured column, owned by every kind, that
    no task kind fills."""
    extra = layout.Column(
        "tokenize_s",
        layout.SECONDS,
        "Throwaway: tokenizing time.",
        measurement=True,
        computed=True,
        since=layout.LAYOUT_VERSION + 1,
    )
    sheet = dataclasses.replace(layout.ATTEMPTS, columns=(*layout.ATTEMPTS.columns, extra))
    monkeypatch.setattr(layout, "ATTEMPTS", sheet)
    monkeypatch.setattr(columns, "EVERY_KIND", (*columns.EVERY_KIND, "tokenize_s"))


def test_a_failed_attempt_of_each_kind_explains_every_measured_column(
    missing_model: AttemptSpec,
) -> None:
    record = run_attempt(missing_model, lambda event: None)
    row = record["attempt"]
    assert row["status"] == "failed"
    assert [
        c.name for c in columns.measured_columns() if row[c.name] is None and not row[c.reason]
    ] == []
    own = columns.OWN["generation"]
    if missing_model.protocol.get("task") == "serving":
        assert row["notes"].startswith("failed during load: EndpointError: endpoint unreachable")
    if missing_model.protocol.get("task") is None:
        assert {row[f"{name}_reason"] for name in own} == {
            "classification attempt: measured for Protocol task generation only"
        }


def test_a_measured_column_a_task_kind_forgets_stops_the_attempt(
    missing_model: AttemptSpec, throwaway_column: None
) -> None:
    with pytest.raises(
        AssertionError, match="measured column\\(s\\) tokenize_s with neither a value nor a reason"
    ):
        run_attempt(missing_model, lambda event: None)
