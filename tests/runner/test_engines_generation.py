"""CTranslate2 generation on the CPU: the sample causal LM converted by CTranslate2's own
converter, run through the generation task's phases against the torch fp32 reference,
with TTFT, decode tokens/s and chrF recorded (a slice of samples/prompts.jsonl)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import (
    RUNNER_PROTOCOL,
    SAMPLES,
    attempts,
    declare_bases,
    gen_variant,
    unexplained,
)
from toolkit.cli import cli
from toolkit.evidence import corpus, locking
from toolkit.runner import decoding
from toolkit.runner.engines import cache, ctranslate
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

pytest.importorskip("ctranslate2")

PROTOCOL: dict[str, Any] = {
    **RUNNER_PROTOCOL,
    "scenario": "offline batch generation (ctranslate2 tests)",
    "corpus_path": "prompts.jsonl",
    "task": "generation",
    "metric": "chrf",
    "threshold": 0.01,
    "tolerance": 0.5,
    "reference_variant": "t4-fp32",
    "subgroups": "stratum",
    "stratum_bounds": "8, 16",
    "warmup_rule": "first 4 items once, not timed",
    "max_new_tokens": 8,
    "stop_rule": "max_new_tokens",
    "long_prompts": "truncate",
}


@pytest.fixture(scope="module")
def ct2_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """torch fp32 (reference), ctranslate2 float32 and int8, batch 4, 12 prompts: the
    workbook and what `run` printed."""
    folder = tmp_path_factory.mktemp("ct2")
    lines = (SAMPLES / "prompts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "prompts.jsonl").write_text("".join(lines[:12]), encoding="utf-8")
    shutil.copytree(SAMPLES / "causal_lm", folder / "causal_lm")
    data = WorkbookData.empty()
    data.forms["Protocol"].update(PROTOCOL)
    for row in declare_bases(
        [
            gen_variant("t4-fp32", 4),
            gen_variant("ct2-fp32", 4, series=2, engine="ctranslate2"),
            gen_variant("ct2-int8", 4, series=2, engine="ctranslate2", quantization="dynamic-int8"),
        ]
    ):
        data.append("Variants", row)
    locking.lock(data)
    book = folder / "campaign.xlsx"
    store.save(data, book)
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "2"])
    assert result.exit_code == 0, result.output
    return book, result.output


@pytest.fixture(scope="module")
def ct2_campaign(ct2_run: tuple[Path, str]) -> Path:
    return ct2_run[0]


def _rows(book: Path) -> dict[str, dict[str, Any]]:
    return {str(r["variant_id"]): r for r in attempts(book)}


def test_a_ctranslate2_attempt_records_ttft_decode_rate_and_chrf(
    ct2_run: tuple[Path, str],
) -> None:
    ct2_campaign, output = ct2_run
    row = _rows(ct2_campaign)["ct2-fp32"]
    assert unexplained(row) == []
    assert (row["status"], row["ids_match"], row["items_completed"]) == ("completed", "yes", 12)
    assert 0 < row["ttft_s"] < row["measured_s"]
    assert row["decode_tokens_per_s"] > 0
    assert 0 < row["metric_value"] <= 100  # chrF against the prompts' reference texts
    assert row["generated_tokens"] == 12 * 8  # max_new_tokens rule: 8 tokens each
    assert row["kv_cache_peak_bytes_reason"] == ctranslate.NO_KV_CACHE
    # `run`'s pre-flight loads the variant through its engine before any attempt, so the
    # conversion is built there and the attempt's load phase reuses it.
    assert any(
        line.startswith("  ct2-fp32: ctranslate2, cpu, fp32; loaded in ")
        for line in output.splitlines()
    )
    assert "ctranslate2 conversion reused from engine_cache/ctranslate2/" in row["notes"]


def test_a_conversion_built_at_load_says_so_in_the_notes(tmp_path: Path) -> None:
    """Where no pre-flight built the conversion (an attempt on a Ray cluster, a cache
    removed since), the load phase builds it and the notes say how long it took."""
    shutil.copytree(SAMPLES / "causal_lm", tmp_path / "causal_lm")
    generator = ctranslate.load(
        gen_variant("ct2-fp32", 4, series=2, engine="ctranslate2"),
        tmp_path,
        decoding.decoding_rule(PROTOCOL),
    )
    try:
        (note,) = generator.engine_notes
    finally:
        generator.close()
    assert re.fullmatch(
        r"ctranslate2 conversion built in \d+\.\d s \(first use, inside load_s\): "
        r"engine_cache/ctranslate2/[0-9a-f]{16}",
        note,
    ), note


def test_ctranslate2_float32_generates_the_torch_reference_tokens(ct2_campaign: Path) -> None:
    rows = _rows(ct2_campaign)
    ours = corpus.read_predictions(ct2_campaign.parent / rows["ct2-fp32"]["predictions_path"])
    theirs = corpus.read_predictions(ct2_campaign.parent / rows["t4-fp32"]["predictions_path"])
    same = sum(a["token_ids"] == b["token_ids"] for a, b in zip(ours, theirs, strict=True))
    assert same >= 11  # greedy in float32 on both: at most a near-tie may flip
    assert rows["ct2-fp32"]["quality_verdict"] == "pass"


def test_the_manifest_names_the_converted_model_and_compute_type(ct2_campaign: Path) -> None:
    import ctranslate2

    data = store.read(ct2_campaign)
    by_variant = {m["variant_id"]: m for m in data.tables["Manifest"]}
    converted = list((ct2_campaign.parent / cache.CACHE_FOLDER / "ctranslate2").glob("*/model.bin"))
    assert len(converted) == 1  # one conversion; the compute type is chosen at load
    for vid, kind in (("ct2-fp32", "float32"), ("ct2-int8", "int8")):
        manifest = by_variant[vid]
        assert manifest["engine"] == f"ctranslate2 {ctranslate2.__version__}"
        assert manifest["engine_artifact"].startswith(
            f"converted model.bin sha256 {cache.sha256_of(converted[0])}; compute type {kind};"
        )


def test_ctranslate2_int8_is_gated_by_the_protocol_tolerance(ct2_campaign: Path) -> None:
    """int8 weights change some greedy tokens; the verdict follows the Protocol's rule
    (token agreement and chrF within the tolerance of the reference), whichever way."""
    int8 = _rows(ct2_campaign)["ct2-int8"]
    assert (int8["status"], int8["ids_match"]) == ("completed", "yes")
    assert int8["token_agreement"] is not None
    failures = "below" in str(int8["notes"])
    assert int8["quality_verdict"] == ("fail" if failures else "pass")
    assert int8["corpus_accepted"] == ("no" if failures else "yes")
