"""The runner on a CUDA device: device span, memory peaks, precision, compile, OOM rows.

Skipped without CUDA. On a CUDA machine the whole file runs in a few minutes:
``pytest -m gpu tests/test_runner_gpu.py`` (the compile test is the longest).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import attempts, make_campaign, unexplained, variant
from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.workbook import store

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def _gpu(variant_id: str, batch: int, **overrides: object) -> dict[str, object]:
    return variant(variant_id, batch, device="cuda", **overrides)


def _run(book: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["run", str(book), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_cuda_attempt_records_device_time_and_both_memory_peaks(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 24, [_gpu("g4-fp32", 4)], reference_variant="g4-fp32")
    _run(book)
    (row,) = attempts(book)
    assert unexplained(row) == []
    assert (row["status"], row["items_completed"], row["ids_match"]) == ("completed", 24, "yes")
    assert 0 < row["device_s"] <= row["measured_s"]
    assert row["device_s_reason"] is None
    allocated, reserved = row["mem_allocated_peak_bytes"], row["mem_reserved_peak_bytes"]
    assert isinstance(allocated, int) and isinstance(reserved, int)
    assert 0 < allocated <= reserved  # two counters, not to be added
    (manifest,) = store.read(book).tables["Manifest"]
    assert manifest["backend"].startswith(("CUDA ", "ROCm/HIP "))
    assert manifest["gpu_name"] == torch.cuda.get_device_name(0)
    assert manifest["gpu_memory_bytes"] == torch.cuda.get_device_properties(0).total_memory
    assert not manifest["driver"].startswith("none found")
    assert validate(store.read(book), book) == []


def test_cuda_bf16_stays_within_tolerance_of_the_cuda_fp32_reference(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 100, [_gpu("g1-fp32", 1),
                                         _gpu("g8-bf16", 8, series=2, precision="bf16")],
                         reference_variant="g1-fp32")
    _run(book)
    reference, bf16 = attempts(book)
    assert reference["metric_value"] == 0.66
    assert bf16["quality_verdict"] == "pass", bf16["notes"]
    assert bf16["corpus_accepted"] == "yes"
    assert bf16["mem_allocated_peak_bytes"] < reference["mem_allocated_peak_bytes"] * 2


def test_fresh_workers_on_cuda_reset_the_peaks_per_attempt(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 24, [_gpu("g1-fp32", 1), _gpu("g8-fp32", 8)],
                         reference_variant="g1-fp32", process_policy="fresh", threshold=0.4)
    _run(book)
    rows = attempts(book)
    assert [r["status"] for r in rows] == ["completed", "completed"]
    assert all(r["mem_allocated_peak_bytes"] > 0 for r in rows)
    assert all(r["device_s"] > 0 for r in rows)


def test_an_injected_cuda_oom_is_a_failed_row_with_its_peaks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = make_campaign(tmp_path, 24, [_gpu("g8-fp32", 8)], reference_variant="g8-fp32")
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "oom@8")
    _run(book)
    (row,) = attempts(book)
    assert (row["status"], row["items_completed"]) == ("failed", 8)
    assert row["device_s"] is None and row["device_s_reason"] == (
        "failed: the measured window did not finish")
    assert row["mem_allocated_peak_bytes"] > 0
    assert row["notes"].startswith("out of memory after 8 of 24 items: OutOfMemoryError")


def test_a_compiled_variant_compiles_during_load(tmp_path: Path) -> None:
    """compile = yes: torch.compile and its first compiled call are in load_s (R8)."""
    book = make_campaign(tmp_path, 24, [_gpu("g8-fp32", 8),
                                        _gpu("g8-compiled", 8, series=2, compile="yes")],
                         reference_variant="g8-fp32", threshold=0.4)
    _run(book)
    plain, compiled = attempts(book)
    assert compiled["status"] == "completed", compiled["notes"]
    assert compiled["load_s"] > plain["load_s"]
    assert compiled["quality_verdict"] == "pass", compiled["notes"]


def test_env_lists_each_gpu() -> None:
    result = CliRunner().invoke(cli, ["env", "--json"])
    info = json.loads(result.output)
    assert len(info["gpus"]) == torch.cuda.device_count()
    assert info["gpus"][0]["name"] == torch.cuda.get_device_name(0)
