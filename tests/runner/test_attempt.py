"""One attempt on the real model (CPU, small slices): rows, failures, quality checks.

Attempts run in-process (process policy ``shared``) to keep the file fast; the
fresh-process path is covered in tests/runner/test_campaign.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, unexplained, variant
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence import corpus
from toolkit.evidence.validate import validate
from toolkit.plumbing.digests import file_sha256
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _run(runner: CliRunner, workbook: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(cli, ["run", str(workbook), *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def completed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A campaign of one batch-4 attempt over the first 24 rows."""
    book = make_campaign(tmp_path_factory.mktemp("done"), 24, [variant("b1-fp32", 4)])
    code, output = _run(CliRunner(), book)
    assert code == 0, output
    return book


def test_a_completed_attempt_fills_or_explains_every_column(completed: Path) -> None:
    (row,) = attempts(completed)
    assert unexplained(row) == []
    tag = row["attempt_id"][-4:]  # the run's random tag
    expected = {
        "attempt_id": f"a001-b1-fp32-r1-{tag}",
        "variant_id": "b1-fp32",
        "repetition": 1,
        "order_position": 1,
        "status": "completed",
        "items_completed": 24,
        "expected_ids": 24,
        "observed_ids": 24,
        "ids_match": "yes",
        "metric_value": 0.541667,
        "quality_verdict": "pass",
        "corpus_accepted": "yes",
        "truncated": 2,
        "excluded": "no",
        "pre_amendment": "no",
        "exclusion_reason": None,
        "device_s": None,
        "device_s_reason": "cpu variant: no device span",
        "mem_allocated_peak_bytes": None,
        "mem_allocated_peak_bytes_reason": "cpu variant: torch.cuda memory counters do not apply",
        "mem_reserved_peak_bytes": None,
        "reference_agreement": None,
        "reference_agreement_reason": "this is the reference variant's first completed attempt",
        "predictions_path": f"campaign_predictions/a001-b1-fp32-r1-{tag}.jsonl",
    }
    assert {k: row[k] for k in expected} == expected
    for name in ("load_s", "warmup_s", "measured_s", "evaluation_s", "export_s"):
        assert isinstance(row[name], float) and row[name] > 0, name
    assert row["host_rss_peak_bytes"] > 100 * 2**20
    assert row["padded_tokens"] > 0 and 0 < row["padding_efficiency"] < 1
    assert row["subgroup_metrics"].startswith("stratum=short ")
    assert row["row_sha256"] and row["protocol_sha256"]
    # Other processes' CPU time in the window (issue 35, defect 3): a count, never a guess.
    # (0.0 on a quiet machine reads back from the xlsx as the integer 0)
    others = row["others_cpu_s"]
    assert isinstance(others, (int, float)) and not isinstance(others, bool) and others >= 0
    assert 0 <= row["others_cpu_share"] <= 1
    assert row["others_cpu_s_reason"] is None and row["others_cpu_share_reason"] is None


def test_the_predictions_file_holds_every_id_and_its_hash(completed: Path) -> None:
    (row,) = attempts(completed)
    path = completed.parent / row["predictions_path"]
    rows = corpus.read_predictions(path)
    assert file_sha256(path) == row["predictions_sha256"]
    assert [r["id"] for r in rows] == [
        i.id for i in corpus.read_corpus(completed.parent / "corpus.jsonl")
    ]
    assert sum(r["prediction"] == r["label"] for r in rows) == 13  # wrong ones are kept
    assert set(rows[0]) == {"id", "prediction", "label", "stratum"}


def test_the_manifest_row_says_what_ran(completed: Path) -> None:
    data = store.read(completed)
    (row,) = attempts(completed)
    (manifest,) = data.tables["Manifest"]
    assert manifest["manifest_id"] == row["manifest_id"]
    items = corpus.read_corpus(completed.parent / "corpus.jsonl")
    assert manifest["corpus_sha256"] == corpus.fingerprint(items)
    fixed = {
        k: manifest[k]
        for k in (
            "variant_id",
            "corpus_path",
            "corpus_items",
            "processing_order",
            "precision",
            "quantization",
            "compile",
            "attention_backend",
            "padding",
            "max_length",
            "process_policy",
            "truncated",
        )
    }
    assert fixed == {
        "variant_id": "b1-fp32",
        "corpus_path": "corpus.jsonl",
        "corpus_items": 24,
        "processing_order": "file order",
        "precision": "fp32",
        "quantization": "none",
        "compile": "no",
        "attention_backend": "sdpa",
        "padding": "dynamic",
        "max_length": 256,
        "process_policy": "shared",
        "truncated": 2,
    }
    # The machine's columns describe the host, whatever device the variant used.
    import torch

    assert manifest["gpu_name"] == (
        torch.cuda.get_device_name(torch.cuda.current_device())
        if torch.cuda.is_available()
        else "no GPU: torch sees no CUDA or ROCm device"
    )
    assert manifest["strata"].startswith("short ") and "(>=129 tokens)" in manifest["strata"]
    assert (
        manifest["model_revision"].startswith("encoder ")
        and "; head " in manifest["model_revision"]
    )
    assert len(manifest["tokenizer_revision"]) == 64
    assert manifest["seeds"] == "torch.manual_seed(0); protocol seeds 0"
    hip = getattr(torch.version, "hip", None)
    assert manifest["backend"].startswith(
        f"ROCm/HIP {hip} "
        if hip
        else f"CUDA {torch.version.cuda} (torch build)"
        if torch.version.cuda
        else "cpu only: this torch build has no CUDA or ROCm"
    )


def test_the_workbook_stays_valid_and_the_journal_holds_the_record(completed: Path) -> None:
    assert validate(store.read(completed), completed) == []
    lines = (completed.parent / "campaign.journal.jsonl").read_text().splitlines()
    start, record = (json.loads(line) for line in lines)  # the start, then the record
    assert (start["format"], start["attempt_id"][:-5]) == (
        "iteralab-attempt-start/1",
        "a001-b1-fp32-r1",
    )
    assert (record["format"], record["attempt"]["attempt_id"]) == (
        "iteralab-attempt/1",
        start["attempt_id"],
    )


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (
            "oom",
            "out of memory after 8 of 24 items: OutOfMemoryError: CUDA out of memory "
            "(injected by ITERALAB_INJECT_FAULT=oom@8)",
        ),
        (
            "crash",
            "failed after 8 of 24 items: RuntimeError: simulated crash (injected by "
            "ITERALAB_INJECT_FAULT=crash@8)",
        ),
    ],
)
def test_a_fault_mid_corpus_leaves_a_failed_row_with_items_completed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, error: str
) -> None:
    book = make_campaign(tmp_path, 24, [variant("b1-fp32", 4)])
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", f"{fault}@8")
    code, output = _run(CliRunner(), book)
    assert code == 0, output
    assert any(
        re.fullmatch(r"a001-b1-fp32-r1-[0-9a-f]{4} +failed +" + re.escape(error), line)
        for line in output.splitlines()
    ), output
    (row,) = attempts(book)
    assert unexplained(row) == []
    assert {
        k: row[k]
        for k in (
            "status",
            "items_completed",
            "expected_ids",
            "observed_ids",
            "ids_match",
            "quality_verdict",
            "corpus_accepted",
            "measured_s",
            "measured_s_reason",
            "metric_value_reason",
            "padded_tokens_reason",
        )
    } == {
        "status": "failed",
        "items_completed": 8,
        "expected_ids": 24,
        "observed_ids": 8,
        "ids_match": "no",
        "quality_verdict": "not evaluated",
        "corpus_accepted": "no",
        "measured_s": None,
        "measured_s_reason": "failed during measured: an unfinished phase has no duration",
        "metric_value_reason": "attempt did not finish: a metric needs the whole corpus",
        "padded_tokens_reason": "failed after 8 items: token counts cover a whole corpus only",
    }
    assert (row["others_cpu_s"], row["others_cpu_s_reason"]) == (
        None,
        "failed: the measured window did not finish",
    )
    assert row["notes"].startswith(error + "; 16 missing id(s): ")
    assert isinstance(row["load_s"], float) and isinstance(row["warmup_s"], float)
    assert len(corpus.read_predictions(book.parent / row["predictions_path"])) == 8
    assert validate(store.read(book), book) == []


def test_a_busy_process_beside_the_window_shows_in_its_others_share(tmp_path: Path) -> None:
    """Issue 35, defect 3: other jobs stretched a 3.7 s window to 13-17 s and nothing showed
    it. A child process spinning through the whole attempt is one such job: its CPU time is
    on the row (the attempt's own process, threads included, is not)."""
    book = make_campaign(tmp_path, 12, [variant("b1-fp32", 4)])
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        code, output = _run(CliRunner(), book)
        spun = _cpu_seconds(busy.pid)
    finally:
        busy.kill()
        busy.wait()
    assert code == 0, output
    (row,) = attempts(book)
    assert row["status"] == "completed"
    assert spun > 0.5, spun  # the child did run beside the attempt
    assert row["others_cpu_s"] > 0 and row["others_cpu_share"] > 0, row
    assert row["others_cpu_s"] <= row["measured_s"] * os.cpu_count() + 0.05


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_timeout_is_a_failed_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The timeout covers the whole attempt, repetition 1's cold pass over the corpus included.
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4)])
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "hang@4")
    code, output = _run(CliRunner(), book, "--timeout", "12")
    assert code == 0, output
    (row,) = attempts(book)
    assert (row["status"], row["items_completed"]) == ("failed", 4)
    assert row["notes"].startswith(
        "timed out after 4 of 8 items: ran past the attempt timeout of 12 s"
    )


def test_precision_and_grouping_are_checked_against_the_fp32_reference(tmp_path: Path) -> None:
    """bf16 and length-sorted batches restart from the same inputs and reference (R16, R6).

    On the first 48 rows, fp32 scores 30/48 whatever the batching; bf16 and sorted
    batches keep every subgroup within the 0.01 tolerance.
    """
    book = make_campaign(
        tmp_path,
        48,
        [
            variant("b8-fp32", 8),
            variant("b8-bf16", 8, series=2, precision="bf16"),
            variant("b8-sorted", 8, series=3, length_grouping="sorted"),
        ],
        reference_variant="b8-fp32",
    )
    code, output = _run(CliRunner(), book)
    assert code == 0, output
    rows = {r["variant_id"]: r for r in attempts(book)}
    reference, bf16, grouped = rows["b8-fp32"], rows["b8-bf16"], rows["b8-sorted"]
    assert reference["metric_value"] == 0.625
    assert grouped["metric_value"] == 0.625 and grouped["reference_agreement"] == 1
    # Sorting by length is the only change: far less padding for the same real tokens.
    assert grouped["padded_tokens"] < reference["padded_tokens"]
    assert grouped["padding_efficiency"] > 2 * reference["padding_efficiency"]
    for row in (bf16, grouped):
        assert row["quality_verdict"] == "pass", row["notes"]
        assert row["corpus_accepted"] == "yes"
        agreeing = round(row["reference_agreement"] * 48)
        assert re.search(
            rf"reference a001-b8-fp32-r1-[0-9a-f]{{4}}: {agreeing}/48 predictions "
            "agree",
            row["notes"],
        ), row["notes"]
    assert bf16["reference_agreement"] >= 0.97
    assert abs(bf16["metric_value"] - 0.625) <= 0.01
    manifests = {m["variant_id"]: m for m in store.read(book).tables["Manifest"]}
    assert manifests["b8-sorted"]["processing_order"] == (
        "sorted by token length, ties in file order"
    )
    assert manifests["b8-bf16"]["precision"] == "bf16"
    assert len({m["corpus_sha256"] for m in manifests.values()}) == 1
    assert {m["truncated"] for m in manifests.values()} == {4}


def test_a_variant_outside_tolerance_fails_quality(tmp_path: Path) -> None:
    """max length 16 cuts the long texts: accuracy drops below the reference's."""
    book = make_campaign(
        tmp_path, 24, [variant("b1-fp32", 8), variant("b8-short", 8, series=2, max_length=16)]
    )
    code, output = _run(CliRunner(), book)
    assert code == 0, output
    row = attempts(book)[1]
    assert (row["variant_id"], row["quality_verdict"], row["corpus_accepted"]) == (
        "b8-short",
        "fail",
        "no",
    )
    assert "below reference 0.5417 - tolerance 0.0100" in row["notes"]
    assert row["truncated"] > 0


@pytest.mark.usefixtures("no_preflight")
def test_a_missing_model_folder_is_a_failed_row_during_load(tmp_path: Path) -> None:
    """Past the pre-flight (a Ray node runs none), an attempt whose model cannot load is a
    failed row with every reason."""
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 8, model_path="no-such-folder")])
    code, output = _run(CliRunner(), book)
    assert code == 0, output
    (row,) = attempts(book)
    assert unexplained(row) == []
    assert (row["status"], row["items_completed"], row["load_s"]) == ("failed", 0, None)
    assert row["load_s_reason"] == "failed during load: an unfinished phase has no duration"
    assert row["measured_s_reason"] == "not reached: failed during load"
    assert row["notes"].startswith(
        "failed during load: ModelError: model_path 'no-such-folder': no such folder"
    )
    assert row["observed_ids_reason"] == (
        "no predictions file: the measured window was not reached"
    )
    assert layout.ATTEMPTS.names == list(row)


def test_predictions_that_cannot_be_written_fail_the_attempt(tmp_path: Path) -> None:
    """A file where the predictions folder belongs: the window ran, but no output reached
    its file, so there is no result to accept (the generation task does the same,
    tests/runner/test_generation.py)."""
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 8)], warmup_rule="none")
    (tmp_path / "campaign_predictions").write_text("in the way\n", encoding="utf-8")
    code, output = _run(CliRunner(), book)
    assert code == 0, output
    (row,) = attempts(book)
    assert unexplained(row) == []
    assert (row["status"], row["items_completed"], row["export_s"]) == ("failed", 8, None)
    assert isinstance(row["measured_s"], float)
    assert row["export_s_reason"] == "export failed (see notes)"
    assert "export failed: FileExistsError" in row["notes"]
    assert (row["predictions_path"], row["corpus_accepted"]) == (None, "no")


def test_an_attempt_without_declared_threads_does_not_inherit_the_previous_attempts() -> None:
    """In a shared campaign process torch.set_num_threads outlives the attempt: a variant that
    declares no threads runs with the process's starting count, not its predecessor's."""
    from types import SimpleNamespace

    import torch

    from toolkit.runner.tasks.process_state import STARTING_THREADS, start_process

    declared = STARTING_THREADS + 1
    try:
        first = start_process(
            SimpleNamespace(threads=declared, protocol={}, seed=None), torch.device("cpu")
        )
        assert first[0] == declared == torch.get_num_threads()
        second = start_process(
            SimpleNamespace(threads=None, protocol={}, seed=None), torch.device("cpu")
        )
        assert second[0] == STARTING_THREADS == torch.get_num_threads()
    finally:
        torch.set_num_threads(STARTING_THREADS)
