"""`iteralab demo --task serving --quick`: the sample causal LM served by `transformers serve`
on 127.0.0.1, a two-rate sweep recorded in a valid workbook, the server stopped with its log
beside the workbook, and the memo's answer per endpoint: the highest rate meeting the targets
and its cost per million output tokens, an EXAMPLE price's EXAMPLE cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.builders import iteralab
from toolkit.serving import local
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a server subprocess: not in `make test-fast`

if local.missing_packages():
    pytest.skip(
        f"the serving extra is not installed ({', '.join(local.missing_packages())} missing): "
        "pip install '.[serving]'",
        allow_module_level=True,
    )


def test_the_quick_serving_demo_answers_with_a_rate_and_its_cost(tmp_path: Path) -> None:
    result = iteralab("demo", "--task", "serving", "--quick", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    book = tmp_path / "example_serving.xlsx"
    log = (tmp_path / "transformers-serve.log").read_text(encoding="utf-8")
    assert "Loading" in log  # the server's own output, kept after it stopped
    data = store.read(book)
    assert [(a["variant_id"], a["requests_sent"]) for a in data.tables["Attempts"]] == [
        ("rate-0.5", 6),
        ("rate-2", 6),
    ]
    summary = data.tables["Summary"]
    rates = {r["highest_rate"] for r in summary}
    assert len(rates) == 1  # one endpoint on one card: one answer on every row
    (rate,) = rates
    memo = str(data.forms["Decision"]["load_handled"])
    if rate is None:  # a machine too busy to serve even 0.5 requests/s within the targets
        assert "no rate of this endpoint and card met every latency target" in memo
    else:
        met = [r["request_rate"] for r in summary if r["targets_met"] == "yes"]
        assert rate == max(met)
        assert f"highest rate meeting every latency target {rate:g} " in memo
        assert "cost per million output tokens at it: " in memo
        assert " USD EXAMPLE (demo-cpu-host at its price for the Schedule's span: " in memo
    validated = iteralab("validate", str(book), "--json")
    assert json.loads(validated.stdout)["findings"] == [], validated.stdout
