"""Layout 4's generation figures on the sample causal LM (CPU, a small slice): the Summary's
TTFT, decode rate and ceiling fraction (medians over the successes, live formulas that
LibreOffice and Gnumeric compute as iteralab did) and the Memory sheet's KV cache (the
planner's estimate at the run's batch and lengths beside the largest observed); a
classification campaign leaves them empty with the reason.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.builders import SAMPLES, gen_variant, make_generation_campaign
from tests.support.recalc import differences, formula_cells
from toolkit import layout
from toolkit.cli import cli
from toolkit.report.generation import NOT_GENERATION, SUMMARY_COLUMNS
from toolkit.reporting import build
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

MAX_LENGTH, NEW_TOKENS = 64, 8  # test_generation's variant and protocol
BYTES = {"fp32": 4, "bf16": 2}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two repetitions of b4-fp32 and b4-bf16 over 6 prompts, run and reported."""
    book = make_generation_campaign(
        tmp_path_factory.mktemp("generation"),
        6,
        [gen_variant("b4-fp32", 4), gen_variant("b4-bf16", 4, series=2, precision="bf16")],
        repetitions=2,
    )
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    return book


def _kv_estimate(precision: str) -> int:
    """The KV cache of batch 4 at max_length + max_new_tokens, from the model's config."""
    config = json.loads((SAMPLES / "causal_lm" / "config.json").read_text(encoding="utf-8"))
    per_token = (
        2
        * config["num_hidden_layers"]
        * config["num_key_value_heads"]
        * config["head_dim"]
        * BYTES[precision]
    )
    return per_token * (MAX_LENGTH + NEW_TOKENS) * 4


def test_the_summary_shows_the_generation_medians_of_the_successes(campaign: Path) -> None:
    data = store.read(campaign)
    summary = {r["variant_id"]: r for r in data.tables["Summary"]}
    assert set(summary) == {"b4-fp32", "b4-bf16"}
    for vid, row in summary.items():
        wins = [
            a
            for a in data.tables["Attempts"]
            if a["variant_id"] == vid and a["status"] == "completed"
        ]
        assert len(wins) == row["successes"] == 2
        for col in SUMMARY_COLUMNS:
            values = [a[col] for a in wins if a[col] is not None]
            if values:
                assert row[col] == pytest.approx(statistics.median(values), rel=1e-12)
                assert row[f"{col}_reason"] is None
            else:  # e.g. no copy bandwidth measured: the attempts' reason, never 0
                assert row[col] is None
                assert row[f"{col}_reason"] == "; ".join(sorted({a[f"{col}_reason"] for a in wins}))
        assert row["ttft_s"] > 0 and row["decode_tokens_per_s"] > 0


def test_the_memory_sheet_shows_the_kv_estimate_beside_the_observed_peak(campaign: Path) -> None:
    data = store.read(campaign)
    memory = {r["variant_id"]: r for r in data.tables["Memory"]}
    for vid, precision in (("b4-fp32", "fp32"), ("b4-bf16", "bf16")):
        row = memory[vid]
        estimate = row["estimate_kv_cache_bytes"]
        assert estimate == _kv_estimate(precision)
        # The KV cache is one of the terms of the total estimate (weights + KV + ...).
        assert f"kv_cache {estimate:,} = " in row["estimate_basis"]
        assert "seq_len 72, batch 4" in row["estimate_basis"]
        assert estimate < row["estimate_tensors_bytes"] < row["estimate_bytes"]
        peaks = [
            a["kv_cache_peak_bytes"] for a in data.tables["Attempts"] if a["variant_id"] == vid
        ]
        assert row["observed_kv_cache_bytes"] == max(peaks) > 0
        assert row["observed_kv_cache_bytes_reason"] is None
        # Prompts shorter than max_length: the peak stays under the upper bound.
        assert row["observed_kv_cache_bytes"] <= estimate
        assert row["flag"] == "KV cache within estimate; device memory not measured"
    report = (campaign.parent / "campaign_report" / "report.md").read_text(encoding="utf-8")
    section = report.split("## Generation: decode speed against the bandwidth ceiling")[1]
    for vid, row in memory.items():
        assert (
            f"| {row['observed_kv_cache_bytes']:,} | {row['estimate_kv_cache_bytes']:,} |"
            in next(line for line in section.splitlines() if line.startswith(f"| {vid} |"))
        )


@pytest.mark.libreoffice
@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_the_generation_formulas_recalculate_to_their_cached_values(
    campaign: Path, tmp_path: Path, engine: str
) -> None:
    formulas = formula_cells(campaign)
    letters = {
        layout.column_letter(layout.SUMMARY, c)
        for col in SUMMARY_COLUMNS
        for c in (col, f"{col}_reason")
    }
    mine = {k for k in formulas if k[0] == "Summary" and k[1].rstrip("0123456789") in letters}
    assert len(mine) == 2 * 2 * len(SUMMARY_COLUMNS)  # each variant's value and reason
    assert differences(campaign, engine, tmp_path / engine, formulas) == []


def test_a_classification_campaign_leaves_the_generation_columns_empty_with_the_reason(
    tmp_path: Path,
) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    build(book, pngs=False)
    data = store.read(book)
    assert data.tables["Summary"] and data.tables["Memory"]
    for row in data.tables["Summary"]:
        cells: dict[str, Any] = {c: row[c] for c in SUMMARY_COLUMNS}
        assert cells == dict.fromkeys(SUMMARY_COLUMNS)
        assert {row[f"{c}_reason"] for c in SUMMARY_COLUMNS} == {NOT_GENERATION}
    for row in data.tables["Memory"]:
        for col in ("estimate_kv_cache_bytes", "observed_kv_cache_bytes"):
            assert (row[col], row[f"{col}_reason"]) == (None, NOT_GENERATION)
