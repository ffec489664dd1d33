"""The runner on a CUDA device: device span, memory peaks, precision, compile, OOM rows,
and what the CUDA review of #21 asked: fp32 without TF32, the attention kernel recorded,
no compilation inside the window, memory released between attempts of one process, the
device used named. Their CPU halves are in tests/runner/test_cuda_paths_on_cpu.py.

Skipped without CUDA. On a CUDA machine the whole file runs in a few minutes:
``pytest -m gpu tests/runner/test_gpu.py`` (the compile tests are the longest).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, unexplained, variant
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


def _run(book: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, ["run", str(book), *args])
    assert result.exit_code == code, result.output
    return result.output


def _baseline_allocated(row: dict[str, object]) -> int:
    """The allocated bytes the attempt's notes give for its released baseline."""
    found = re.search(
        r"CUDA memory when the peaks were reset: allocated ([\d,]+) B", str(row["notes"])
    )
    assert found, row["notes"]
    return int(found[1].replace(",", ""))


def test_a_cuda_attempt_records_device_time_and_both_memory_peaks(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 24, [_gpu("g4-fp32", 4)], reference_variant="g4-fp32")
    _run(book)
    (row,) = attempts(book)
    assert unexplained(row) == []
    assert (row["status"], row["items_completed"], row["ids_match"]) == ("completed", 24, "yes")
    assert 0 < row["device_s"] <= row["measured_s"]
    assert row["device_s_reason"] is None
    # R10: the forward calls alone, within the window they ran in
    assert 0 < row["forward_device_s"] <= row["device_s"]
    assert row["forward_device_s_reason"] is None
    allocated, reserved = row["mem_allocated_peak_bytes"], row["mem_reserved_peak_bytes"]
    assert isinstance(allocated, int) and isinstance(reserved, int)
    assert 0 < allocated <= reserved  # two counters, not to be added
    (manifest,) = store.read(book).tables["Manifest"]
    assert manifest["backend"].startswith(("CUDA ", "ROCm/HIP "))
    used = torch.cuda.current_device()  # what "cuda" means; not card 0 on every host
    assert manifest["gpu_name"] == torch.cuda.get_device_name(used)
    assert manifest["gpu_memory_bytes"] == torch.cuda.get_device_properties(used).total_memory
    assert not manifest["driver"].startswith("none found")
    assert validate(store.read(book), book) == []


def test_the_manifest_names_the_device_used_and_the_driver_it_asked_once(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [_gpu("g4-fp32", 4)], reference_variant="g4-fp32")
    _run(book)
    (manifest,) = store.read(book).tables["Manifest"]
    used = torch.cuda.current_device()
    uuid = str(torch.cuda.get_device_properties(used).uuid).lower().removeprefix("gpu-")
    assert manifest["gpu_device"].startswith(
        f"cuda:{used} of {torch.cuda.device_count()} visible; UUID "
    )
    assert uuid in manifest["gpu_device"].lower()
    assert re.fullmatch(r"\d+\.\d+", manifest["driver_cuda"]), manifest["driver_cuda"]
    # The loading mode is on record as this process has it (torch 2.11 no longer sets it).
    loading = os.environ.get("CUDA_MODULE_LOADING")
    assert (
        f"CUDA_MODULE_LOADING={loading}" if loading is not None else "CUDA_MODULE_LOADING unset"
    ) in manifest["environment_variables"]
    assert manifest["fp32_matmul"].startswith(
        "float32 matmul precision highest; cuBLAS TF32 off; cuDNN TF32 off"
    )


def test_fp32_on_cuda_runs_in_full_precision_after_the_pin() -> None:
    """Relative error of a 1024 x 1024 product against float64: fp32 about 3e-7, TF32 (a
    10-bit mantissa) about 4e-4 (both estimated on the CPU, TF32 by rounding the inputs)."""
    from toolkit.runner.instruments import precision

    def error() -> float:
        gen = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(1024, 1024, device="cuda", generator=gen)
        b = torch.randn(1024, 1024, device="cuda", generator=gen)
        exact = a.double() @ b.double()
        return float(torch.linalg.norm((a @ b).double() - exact) / torch.linalg.norm(exact))

    precision.pin_fp32()
    assert error() < 1e-5
    if torch.cuda.get_device_capability() >= (8, 0):
        torch.backends.cuda.matmul.allow_tf32 = True  # the contrast: the check can fail
        try:
            assert error() > 1e-4
        finally:
            precision.pin_fp32()


def test_the_attention_kernel_is_recorded_per_shape_precision_and_padding(tmp_path: Path) -> None:
    from toolkit.runner.instruments import probes

    book = make_campaign(
        tmp_path,
        24,
        [_gpu("g1-fp32", 1), _gpu("g8-fp32", 8), _gpu("g8-bf16", 8, series=2, precision="bf16")],
        reference_variant="g1-fp32",
        threshold=0.4,
    )
    _run(book)
    known = set(probes.ATTENTION_OPS.values()) | {probes.NO_SDPA}
    for row in attempts(book):
        entries = row["attention_kernels"].split("; ")
        assert len(entries) == 2, row["attention_kernels"]
        for entry in entries:
            shape, kernel = entry.split(": ")
            assert re.fullmatch(r"\d+x\d+", shape)
            assert set(kernel.split(" + ")) <= known, entry


def test_cuda_bf16_stays_within_tolerance_of_the_cuda_fp32_reference(tmp_path: Path) -> None:
    book = make_campaign(
        tmp_path,
        100,
        [_gpu("g1-fp32", 1), _gpu("g8-bf16", 8, series=2, precision="bf16")],
        reference_variant="g1-fp32",
    )
    _run(book)
    reference, bf16 = attempts(book)
    assert reference["metric_value"] == 0.66
    assert bf16["quality_verdict"] == "pass", bf16["notes"]
    assert bf16["corpus_accepted"] == "yes"
    assert bf16["mem_allocated_peak_bytes"] < reference["mem_allocated_peak_bytes"] * 2
    # Every attempt probes on CUDA events; the campaign keeps the maximum, so the second
    # attempt's fp32 peak is at least the first's and at least its own probe; each
    # utilisation recorded is at most 1.05 of its precision's peak
    manifests = {m["manifest_id"]: m for m in store.read(book).tables["Manifest"]}
    first, second = (manifests[row["manifest_id"]] for row in (reference, bf16))
    assert second["fp32_matmul_peak_flops"] >= first["fp32_matmul_peak_flops"]
    assert second["fp32_matmul_peak_flops"] >= bf16["probe_fp32_peak_flops"]
    assert second["peak_probe"].startswith("maximum of 2 probe(s)"), second["peak_probe"]
    assert "CUDA events on " in first["peak_probe"]
    for row in (reference, bf16):
        assert row["probe_s"] > 0 and row["probe_others_share"] is not None
        assert 0 < row["utilisation"] <= 1.05, (row["utilisation"], row["utilisation_reason"])


def test_fresh_workers_on_cuda_reset_the_peaks_per_attempt(tmp_path: Path) -> None:
    book = make_campaign(
        tmp_path,
        24,
        [_gpu("g1-fp32", 1), _gpu("g8-fp32", 8)],
        reference_variant="g1-fp32",
        process_policy="fresh",
        threshold=0.4,
    )
    _run(book)
    rows = attempts(book)
    assert [r["status"] for r in rows] == ["completed", "completed"]
    assert all(r["mem_allocated_peak_bytes"] > 0 for r in rows)
    assert all(r["device_s"] > 0 for r in rows)


def test_an_injected_cuda_oom_is_a_failed_row_with_its_peaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = make_campaign(tmp_path, 24, [_gpu("g8-fp32", 8)], reference_variant="g8-fp32")
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "oom@8")
    _run(book)
    (row,) = attempts(book)
    assert (row["status"], row["items_completed"]) == ("failed", 8)
    assert row["device_s"] is None and row["device_s_reason"] == (
        "failed: the measured window did not finish"
    )
    assert row["mem_allocated_peak_bytes"] > 0
    assert row["notes"].startswith("out of memory after 8 of 24 items: OutOfMemoryError")


def test_a_compiled_variant_compiles_during_load(tmp_path: Path) -> None:
    """compile = yes: torch.compile and its compiled shapes are in load_s (R8); fp32 on a
    TF32-capable card gives Inductor's TF32 advice, which pytest's `error` filter would turn
    into a failed compile if the runner did not expect it."""
    book = make_campaign(
        tmp_path,
        24,
        [_gpu("g8-fp32", 8), _gpu("g8-compiled", 8, series=2, compile="yes")],
        reference_variant="g8-fp32",
        threshold=0.4,
    )
    _run(book)
    plain, compiled = attempts(book)
    assert compiled["status"] == "completed", compiled["notes"]
    assert compiled["load_s"] > plain["load_s"]
    assert compiled["quality_verdict"] == "pass", compiled["notes"]
    assert compiled["recompilations"] == 0
    files = re.search(
        r"fresh Inductor and Triton folders for this attempt \((\d+) files", compiled["notes"]
    )
    assert files and int(files[1]) > 0, compiled["notes"]


def test_a_compiled_variant_without_warm_up_compiles_nothing_in_the_window(tmp_path: Path) -> None:
    """The case the review saw: warm-up `none`, a recompile at the first batch of 8. The
    load phase now compiles the window's shapes (25 items: a last batch of 1 too)."""
    book = make_campaign(
        tmp_path,
        25,
        [_gpu("g8-compiled", 8, compile="yes")],
        reference_variant="g8-compiled",
        warmup_rule="none",
        threshold=0.4,
    )
    _run(book)
    (row,) = attempts(book)
    assert row["status"] == "completed", row["notes"]
    assert row["recompilations"] == 0, row["notes"]
    assert "graph(s) compiled during load (batch shapes 8x" in row["notes"]
    assert "compiled inside the measured window" not in row["notes"]


def test_a_shared_process_releases_each_attempt_before_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second attempt starts from a baseline without the first one's model, even after
    an out-of-memory error whose traceback held the activations."""
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "oom@8:g8-fp32")
    book = make_campaign(
        tmp_path,
        24,
        [_gpu("g8-fp32", 8), _gpu("g4-fp32", 4)],
        reference_variant="g4-fp32",
        threshold=0.4,
    )
    _run(book)
    first, second = attempts(book)
    assert first["status"] == "failed" and second["status"] == "completed"
    assert _baseline_allocated(second) < first["mem_allocated_peak_bytes"] / 4


def test_a_cuda_error_stops_a_shared_cuda_campaign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "cudaerror@8:g8-fp32")
    book = make_campaign(
        tmp_path,
        24,
        [_gpu("g8-fp32", 8), _gpu("g4-fp32", 4)],
        reference_variant="g4-fp32",
        threshold=0.4,
    )
    output = _run(book, code=1)  # a tool stop with what to do, not a Ctrl-C (130): the CPU
    (row,) = attempts(book)  # half in tests/runner/test_cuda_paths_on_cpu.py says the same
    assert row["status"] == "failed"
    assert "so the shared campaign stops here" in row["notes"]
    assert "stopped after a CUDA error other than out-of-memory" in output
    assert f"continue in a new process: `iteralab run {book} --resume`" in output
    assert "interrupted: continue" not in output


def test_env_lists_each_gpu() -> None:
    result = CliRunner().invoke(cli, ["env", "--json"])
    info = json.loads(result.output)
    assert len(info["gpus"]) == torch.cuda.device_count()
    assert info["gpus"][0]["name"] == torch.cuda.get_device_name(0)
