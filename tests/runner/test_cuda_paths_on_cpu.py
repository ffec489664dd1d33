"""What a line-by-line CUDA review asked of the runner (#21), checked on the CPU.

Compile shape and counts, cache folders per attempt, fp32 pinned and recorded, the
attention kernel seen, memory released, a CUDA error stopping a shared campaign, the
device and driver recorded. What needs a card is in tests/runner/test_gpu.py.
"""

from __future__ import annotations

import gc
import os
import signal
import warnings
import weakref
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, unexplained, variant
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

torch = pytest.importorskip("torch")

from toolkit.runner.driver import campaign  # noqa: E402
from toolkit.runner.engines import model  # noqa: E402
from toolkit.runner.instruments import (  # noqa: E402
    compilation,
    environment,
    precision,
    probes,
)
from toolkit.runner.tasks import classification, failures  # noqa: E402


def _run(book: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["run", str(book), *args])
    return result.exit_code, result.output


def _manifests(book: Path) -> dict[str, dict[str, Any]]:
    return {m["variant_id"]: m for m in store.read(book).tables["Manifest"]}


# ---------------------------------------------------------------- 1. the TF32 advice


def test_the_inductor_tf32_advice_is_ignored_on_purpose_and_nothing_else() -> None:
    """fp32 is pinned to full precision, so Inductor's advice to use TF32 is expected."""
    with compilation.expected_warnings():
        warnings.warn(
            "TensorFloat32 tensor cores for float32 matrix multiplication available "
            "but not enabled. Consider setting `torch.set_float32_matmul_precision"
            "('high')` for better performance.",
            UserWarning,
            stacklevel=1,
        )
        with pytest.raises(UserWarning, match="something else"):
            warnings.warn("something else", UserWarning, stacklevel=1)


# ---------------------------------------------------------------- 3, 7. the load phase's shapes


def test_the_load_phase_runs_the_shortest_longest_and_last_batch() -> None:
    """Batch 4 over 10 items in file order: the four shortest, the four longest, then the
    window's last batch of 2 (items 8 and 9); indexes shortest first."""
    lengths = [20, 3, 7, 9, 2, 15, 11, 4, 6, 5]
    assert classification.shape_batches(lengths, 4, None, sorted_order=False) == [
        ([4, 1, 7, 9], (4, 5)),
        ([3, 6, 5, 0], (4, 20)),
        ([8, 9], (2, 6)),
    ]
    # Length-sorted batches end on the two longest; padded to 32 every full batch is 4 x 32.
    assert classification.shape_batches(lengths, 4, 32, sorted_order=True) == [
        ([4, 1, 7, 9], (4, 32)),
        ([5, 0], (2, 32)),
    ]
    assert classification.shape_batches(lengths[:1], 1, None, sorted_order=False) == [
        ([0], (1, 20))
    ]


def test_on_a_gpu_the_load_phase_runs_every_shape_the_window_runs() -> None:
    """Issue 35, defect 6: on an H200 each bf16 variant's first window took 2.5-5x its
    second (cuDNN sets up its attention per new shape). Uncompiled on a GPU, the load phase
    runs the extremes first (the profiler names their kernels), then one window batch of
    each other shape."""
    lengths = [20, 3, 7, 9, 2, 15, 11, 4, 6, 5]
    assert classification.shape_batches(lengths, 4, None, sorted_order=False, every_shape=True) == [
        ([4, 1, 7, 9], (4, 5)),
        ([3, 6, 5, 0], (4, 20)),
        ([8, 9], (2, 6)),
        ([4, 5, 6, 7], (4, 15)),
    ]
    assert classification.shape_batches(lengths, 4, None, sorted_order=True, every_shape=True) == [
        ([4, 1, 7, 9], (4, 5)),
        ([3, 6, 5, 0], (4, 20)),
        ([5, 0], (2, 20)),
        ([8, 2, 3, 6], (4, 11)),
    ]
    window = {(4, 5), (4, 20), (4, 15), (2, 6)}  # file order: 0-3, 4-7, 8-9 and the extremes
    assert {
        shape
        for _, shape in classification.shape_batches(
            lengths, 4, None, sorted_order=False, every_shape=True
        )
    } == window


@pytest.fixture
def eager_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamo traces and counts graphs as it would for Inductor, without generating code."""
    monkeypatch.setattr(compilation, "BACKEND", "eager")


def test_compiled_attempts_compile_their_batch_shapes_during_load_each_afresh(
    tmp_path: Path, eager_backend: None
) -> None:
    """Two attempts in one process: the second compiles again (dynamo was reset), and
    neither compiles inside its window, warm-up `none` notwithstanding."""
    book = make_campaign(
        tmp_path,
        25,
        [variant("b4-compiled", 4, compile="yes")],
        reference_variant="b4-compiled",
        warmup_rule="none",
        repetitions=2,
    )
    code, output = _run(book)
    assert code == 0, output
    rows = attempts(book)
    loads = []
    for row in rows:
        assert row["status"] == "completed", row["notes"]
        assert row["recompilations"] == 0
        load = row["notes"].split(" graph(s) compiled during load (batch shapes 4x")
        assert len(load) == 2, row["notes"]
        assert ", 1x" in load[1]  # the last batch of 25 % 4 = 1 item is a shape of its own
        loads.append(int(load[0].rsplit("; ", 1)[-1]))
    assert loads[0] == loads[1] >= 2
    # New Manifest fields are the same for every attempt of a variant; a row of its own only
    # where the campaign's peak rose between them (each row shows the peak its attempts used).
    manifests = store.read(book).tables["Manifest"]
    assert {m["compile_setup"] for m in manifests} == {compilation.SETUP}
    assert {r["manifest_id"] for r in rows} == {m["manifest_id"] for m in manifests}
    assert validate(store.read(book), book) == []


def test_a_compilation_inside_the_measured_window_is_counted_and_said(
    tmp_path: Path, eager_backend: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the load phase's shapes, the window compiles: never silently. (Repetition 1's
    cold pass compiles every shape of the corpus before its window; repetition 2, a fresh
    compilation session without a cold pass, compiles in the window.)"""
    monkeypatch.setattr(classification, "shape_batches", lambda *args, **kwargs: [])
    book = make_campaign(
        tmp_path,
        25,
        [variant("b4-compiled", 4, compile="yes")],
        reference_variant="b4-compiled",
        warmup_rule="none",
        repetitions=2,
    )
    code, output = _run(book)
    assert code == 0, output
    first, row = sorted(attempts(book), key=lambda r: r["repetition"])
    assert first["recompilations"] == 0 and isinstance(first["cold_pass_s"], float)
    assert row["recompilations"] >= 1
    assert (
        f"{row['recompilations']} graph(s) compiled inside the measured window: "
        "measured_s includes compile time"
    ) in row["notes"]


@pytest.mark.slow
def test_inductor_on_the_cpu_compiles_in_load_into_the_attempts_own_cache_folders(
    tmp_path: Path,
) -> None:
    """The real backend: its caches are written to the attempt's folders, then removed."""
    book = make_campaign(
        tmp_path, 8, [variant("b4-compiled", 4, compile="yes")], reference_variant="b4-compiled"
    )
    code, output = _run(book)
    assert code == 0, output
    (row,) = attempts(book)
    assert row["status"] == "completed", row["notes"]
    assert row["recompilations"] == 0
    assert "compile caches: fresh Inductor and Triton folders for this attempt" in row["notes"]
    assert (
        "compile caches: fresh Inductor and Triton folders for this attempt (0 files"
        not in row["notes"]
    )
    # The variables no longer name the attempt's folders (importing dynamo sets a default).
    assert not any(
        "iteralab-compile-" in os.environ.get(k, "") for k in compilation.CACHE_VARIABLES
    )


# ---------------------------------------------------------------- 4. caches per attempt


def test_each_compiled_attempt_gets_its_own_cache_folders_and_a_dynamo_reset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch._dynamo

    resets: list[int] = []
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(1))
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/shared")
    folders = []
    for _ in range(2):
        with compilation.session(True) as caches:
            assert caches.folder is not None and caches.folder.is_dir()
            folders.append(caches.folder)
            assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(caches.folder / "inductor")
            assert os.environ["TRITON_CACHE_DIR"] == str(caches.folder / "triton")
            assert compilation.fails_on_recompile_limit()
        assert not caches.folder.exists()
    assert folders[0] != folders[1]
    assert len(resets) == 4  # on entry and on exit, each attempt
    assert os.environ["TRITON_CACHE_DIR"] == "/somewhere/shared"
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ or os.environ[
        "TORCHINDUCTOR_CACHE_DIR"
    ] != str(folders[1] / "inductor")


def test_an_uncompiled_attempt_leaves_the_caches_alone() -> None:
    with compilation.session(False) as caches:
        assert caches.folder is None
    assert caches.note() is None


# ---------------------------------------------------------------- 5. fp32, kernels


def test_fp32_is_pinned_to_full_precision() -> None:
    torch.set_float32_matmul_precision("high")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    try:
        precision.pin_fp32()
        assert torch.get_float32_matmul_precision() == "highest"
        assert not torch.backends.cuda.matmul.allow_tf32
        assert not torch.backends.cudnn.allow_tf32
        assert precision.fp32_text({}) == (
            "float32 matmul precision highest; cuBLAS TF32 off; cuDNN TF32 off"
        )
    finally:
        torch.set_float32_matmul_precision("highest")
        torch.backends.cudnn.allow_tf32 = True  # torch's default


def test_the_variables_that_force_tf32_are_said() -> None:
    forced = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}
    assert precision.fp32_text(forced).endswith(
        "; cuBLAS TF32 forced on by TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"
    )
    assert precision.tf32_forced(forced) == (
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 makes cuBLAS run float32 products in TF32"
    )
    assert precision.tf32_forced({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "0"}) is None
    assert precision.fp32_text({"NVIDIA_TF32_OVERRIDE": "0"}).endswith(
        "; TF32 disabled by NVIDIA_TF32_OVERRIDE=0"
    )


def test_the_manifest_records_fp32_flags_variables_and_the_attention_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    book = make_campaign(
        tmp_path,
        8,
        [variant("b1-fp32", 1), variant("b4-eager", 4, series=2, attention_backend="eager")],
    )
    code, output = _run(book)
    assert code == 0, output
    rows = {r["variant_id"]: r for r in attempts(book)}
    manifest = _manifests(book)["b1-fp32"]
    assert manifest["fp32_matmul"] == (
        "float32 matmul precision highest; cuBLAS TF32 off; cuDNN TF32 off"
    )
    variables = manifest["environment_variables"].split("; ")
    assert "TOKENIZERS_PARALLELISM=false" in variables
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in variables
    assert "CUDA_VISIBLE_DEVICES unset" in variables
    assert {v.split("=")[0].split()[0] for v in variables} == set(environment.VARIABLES)
    assert manifest["compile_setup"] == "not compiled"
    # On the CPU without compilation the shortest batch alone names the kernel (torch's CPU
    # choice does not depend on the length); batch 1: no padding.
    kernels = rows["b1-fp32"]["attention_kernels"].split("; ")
    assert [k.split(": ")[1] for k in kernels] == ["flash (cpu)"]
    assert kernels[0].startswith("1x")
    assert rows["b4-eager"]["attention_kernels"].endswith(
        ": no SDPA kernel (attention as matrix products and softmax)"
    )
    assert rows["b1-fp32"]["recompilations"] is None  # not compiled
    assert validate(store.read(book), book) == []


def test_the_attention_kernel_is_named_from_the_operators_that_ran() -> None:
    query = torch.randn(1, 2, 5, 8)
    assert (
        probes.attention_kernel(
            lambda: torch.nn.functional.scaled_dot_product_attention(query, query, query)
        )
        == "flash (cpu)"
    )
    assert (
        probes.attention_kernel(lambda: query @ query.transpose(-1, -2))
        == "no SDPA kernel (attention as matrix products and softmax)"
    )


def test_the_profiler_s_cycle_warning_is_expected_around_the_probe_and_nothing_else() -> None:
    """torch 2.11 warns at a process's first profiler that events are cleared each cycle;
    under ``filterwarnings = error`` that failed the first attempt of a test session."""
    import inspect
    import re

    from torch.profiler import profiler

    found = re.search(r'"((Warning: )?Profiler clears events[^"]*)"', inspect.getsource(profiler))
    assert found and re.match(probes.PROFILER_CYCLE, found[1])  # torch's own wording

    def warn(message: str) -> None:
        warnings.warn(message, UserWarning, stacklevel=2)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert probes.attention_kernel(lambda: warn(found[1])) == probes.NO_SDPA
        with pytest.raises(UserWarning, match="another warning"):
            probes.attention_kernel(lambda: warn("another warning"))


# ---------------------------------------------------------------- 6, 8. memory released


@pytest.mark.parametrize("fault", [None, "oom@8"])
def test_the_model_is_released_when_the_attempt_ends_without_waiting_for_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str | None
) -> None:
    """In a shared process the next attempt must not inherit this one's model or
    activations: the runner breaks the reference cycles itself (after an OOM, the traceback
    holding the activations first)."""
    if fault:
        monkeypatch.setenv("ITERALAB_INJECT_FAULT", fault)
    seen: list[weakref.ref[Any]] = []
    real_load = model.load

    def watched(*args: Any) -> Any:
        loaded = real_load(*args)
        seen.append(weakref.ref(loaded.module))
        return loaded

    # The torch engine loads through toolkit.runner.engines.model.load (runner/engines/torch_engine.py).
    monkeypatch.setattr(model, "load", watched)
    book = make_campaign(tmp_path, 24, [variant("b4-fp32", 4)], reference_variant="b4-fp32")
    gc.collect()
    gc.disable()
    try:
        code, output = _run(book)
        alive = [ref() is not None for ref in seen]
    finally:
        gc.enable()
    assert code == 0, output
    # Two loads: `run`'s pre-flight, then the attempt; neither model outlives its use.
    assert alive == [False, False]
    (row,) = attempts(book)
    assert row["status"] == ("failed" if fault else "completed")


def test_an_out_of_memory_error_is_not_a_broken_cuda_context() -> None:
    assert failures.breaks_cuda(
        RuntimeError("CUDA error: an illegal memory access was encountered")
    )
    assert failures.breaks_cuda(
        RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED when calling cublasSgemm")
    )
    assert not failures.breaks_cuda(torch.OutOfMemoryError("CUDA out of memory"))
    assert not failures.breaks_cuda(RuntimeError("simulated crash"))
    assert not failures.breaks_cuda(KeyboardInterrupt())


def test_a_cuda_error_stops_a_shared_campaign_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "cudaerror@4:b4-fp32")
    book = make_campaign(
        tmp_path, 8, [variant("b4-fp32", 4), variant("b8-fp32", 8)], reference_variant="b4-fp32"
    )
    code, output = _run(book)
    assert code == 1, output  # not a Ctrl-C (130): a tool stop with what to do
    (row,) = attempts(book)
    assert unexplained(row) == []
    assert row["status"] == "failed"
    assert row["notes"].split("; ")[0] == (
        "failed after 4 of 8 items: RuntimeError: CUDA error: an illegal memory access was "
        "encountered (injected by ITERALAB_INJECT_FAULT=cudaerror@4:b4-fp32), a CUDA error "
        "other than out-of-memory: this process's CUDA context cannot be trusted after it, so "
        "the shared campaign stops here (`--resume` continues in a new process)"
    )
    assert "stopped after a CUDA error other than out-of-memory" in output
    assert f"continue in a new process: `iteralab run {book} --resume`" in output
    assert "interrupted: continue" not in output


def test_a_sigterm_into_a_shared_campaign_is_an_interrupted_row_and_exit_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the first GPU session showed (issue 35): the session's step limit (`timeout`
    sends SIGTERM) fell inside the CUDA twin of the test above, whose only row then read
    "interrupted during load (KeyboardInterrupt: SIGTERM)". The runner is right to do so (the
    limit was too short): a real SIGTERM, sent when the attempt enters its load phase."""
    shown = campaign._show

    def sigterm_at_load(event: dict[str, Any], display: Any) -> None:
        shown(event, display)
        if event == {"event": "phase", "phase": "load"}:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(campaign, "_show", sigterm_at_load)
    before = signal.getsignal(signal.SIGTERM)
    book = make_campaign(
        tmp_path, 8, [variant("b4-fp32", 4), variant("b8-fp32", 8)], reference_variant="b4-fp32"
    )
    code, output = _run(book)
    assert code == 130, output
    assert f"interrupted: continue with `iteralab run {book} --resume`" in output
    (row,) = attempts(book)  # the campaign stopped: b8-fp32 never started
    assert row["status"] == "interrupted"
    assert row["notes"].startswith("interrupted during load (KeyboardInterrupt: SIGTERM)")
    assert signal.getsignal(signal.SIGTERM) == before  # restored after the campaign


# ---------------------------------------------------------------- 9. device and driver


def test_the_driver_is_probed_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_run(command: list[str]) -> str | None:
        calls.append(command)
        if command[0] == "nvidia-smi":
            return (
                "GPU-8f3a0c1e-0000-1111-2222-333344445555, 550.54.15, Disabled\n"
                "GPU-aaaa0c1e-0000-1111-2222-333344445555, 550.54.15, Enabled"
            )
        return None

    monkeypatch.setattr(environment, "_run", fake_run)
    environment.probe_driver.cache_clear()
    environment.nvidia_smi_reading.cache_clear()
    try:
        first = environment.probe_driver()
        assert environment.probe_driver() is first
        assert [c[0] for c in calls].count("nvidia-smi") == 1
        assert first.driver == "NVIDIA 550.54.15 (nvidia-smi)"
        assert first.mig == {
            "8f3a0c1e-0000-1111-2222-333344445555": "Disabled",
            "aaaa0c1e-0000-1111-2222-333344445555": "Enabled",
        }
    finally:
        environment.probe_driver.cache_clear()
        environment.nvidia_smi_reading.cache_clear()


def test_the_device_used_is_named_with_its_index_uuid_and_mig_mode() -> None:
    assert environment.device_text(
        1,
        2,
        "GPU-aaaa0c1e-0000-1111-2222-333344445555",
        {"aaaa0c1e-0000-1111-2222-333344445555": "Enabled"},
    ) == ("cuda:1 of 2 visible; UUID GPU-aaaa0c1e-0000-1111-2222-333344445555; MIG Enabled")
    assert environment.device_text(0, 1, "aaaa0c1e-0000-1111-2222-333344445555", {}) == (
        "cuda:0 of 1 visible; UUID GPU-aaaa0c1e-0000-1111-2222-333344445555; MIG mode not "
        "read (nvidia-smi does not list this UUID)"
    )


def test_a_cpu_manifest_says_there_is_no_gpu_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a GPU host, seen as none
    fields = environment.manifest_fields()
    assert fields["gpu_device"] == "n/a: no GPU"
    assert fields["gpu_name"] == "no GPU: torch sees no CUDA or ROCm device"
    assert fields["driver_cuda"] == (
        environment.probe_driver().cuda or "none: no CUDA driver library (libcuda)"
    )
    assert set(fields) >= {"fp32_matmul", "environment_variables", "gpu_packages"}


def test_gpu_packages_are_triton_and_the_nvidia_wheels(monkeypatch: pytest.MonkeyPatch) -> None:
    class Dist:
        def __init__(self, name: str, version: str) -> None:
            self.metadata = {"Name": name}
            self.version = version

    fakes = [
        Dist("numpy", "2.0"),
        Dist("nvidia-cublas-cu12", "12.4.5.8"),
        Dist("triton", "3.1.0"),
        Dist("nvidia-cudnn-cu12", "9.1.0.70"),
    ]
    monkeypatch.setattr(metadata, "distributions", lambda: iter(fakes))
    assert environment.gpu_packages() == (
        "nvidia-cublas-cu12 12.4.5.8, nvidia-cudnn-cu12 9.1.0.70, triton 3.1.0"
    )
    monkeypatch.setattr(metadata, "distributions", lambda: iter(fakes[:1]))
    assert environment.gpu_packages() == "none installed (no triton or nvidia-* package)"


def test_load_s_says_cuda_context_creation_comes_before_its_timer() -> None:
    assert "CUDA context" in layout.ATTEMPTS.column("load_s").help
