"""The generation task end to end on the sample causal LM (CPU, small slices).

A campaign of the real sample model (samples/causal_lm/) over a slice of
samples/prompts.jsonl: ids, outputs and token counts exported and checked; TTFT,
decode rate, KV cache and the bandwidth ceiling recorded, or empty with their reason;
bf16 against the fp32 reference compared token by token; a prompt past the prompt
budget counted as truncated or refused, per the Protocol.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import (
    attempts,
    gen_variant,
    make_generation_campaign,
    without_preflight,
)
from toolkit.cli import cli
from toolkit.evidence import corpus
from toolkit.evidence.validate import validate
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _run(book: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["run", str(book)])
    return result.exit_code, result.output


def _run_without_preflight(book: Path) -> tuple[int, str]:
    """`run` as on a Ray cluster, where no pre-flight runs first: the attempt's own checks."""
    with without_preflight():
        return _run(book)


def test_a_generation_campaign_records_outputs_tokens_and_rates(tmp_path: Path) -> None:
    long_prompt = {
        "id": "long-1",
        "text": " ".join(["the lady said that"] * 40),
        "reference": "she would come",
    }
    book = make_generation_campaign(
        tmp_path,
        8,
        [gen_variant("b4-fp32", 4), gen_variant("b4-bf16", 4, series=2, precision="bf16")],
        extra_prompts=[long_prompt],
    )
    code, output = _run(book)
    assert code == 0, output
    rows = {r["variant_id"]: r for r in attempts(book)}
    assert set(rows) == {"b4-fp32", "b4-bf16"}
    for row in rows.values():
        assert row["status"] == "completed", row["notes"]
        assert row["ids_match"] == "yes" and row["observed_ids"] == 9
        assert row["prompt_tokens"] > 9 and 9 <= row["generated_tokens"] <= 9 * 8
        assert row["ttft_s"] > 0 and row["decode_tokens_per_s"] > 0
        assert row["kv_cache_peak_bytes"] > 0
        assert row["truncated"] == 1  # the long prompt, cut to max_length and counted (R3)
        # One process for the campaign: its RSS peak is the process's, as classification says.
        assert "host RSS peak: lifetime peak of the shared campaign process" in row["notes"]
        # Which decode shapes load covered, and no cold pass for generation.
        assert (
            "decode shapes: no static cache or buckets; load ran 1 batch(es) of the corpus's "
            "own prompts (the first batch) to its last new token"
        ) in row["notes"]
        assert row["cold_pass_s_reason"] == (
            "generation attempt: measured for Protocol task classification only"
        )
        assert row["mem_allocated_peak_bytes"] is None
        assert "cpu variant" in row["mem_allocated_peak_bytes_reason"]
        assert row["device_s"] is None and row["device_s_reason"]
        assert 0 < row["metric_value"] < 1  # chrF against the references, sacrebleu's
        # The window's load, from the phases every task kind shares (issue 35, defect 3).
        assert row["others_cpu_s"] >= 0 and 0 <= row["others_cpu_share"] <= 1
        groups = row["subgroup_metrics"]  # chrF per stratum, with its size, short first
        assert groups.startswith("stratum=short ") and "; stratum=long " in groups
        assert sum(int(n) for n in re.findall(r"\(n=(\d+)\)", groups)) == 9
        ceiling, fraction = row["bandwidth_ceiling_tokens_per_s"], row["decode_ceiling_fraction"]
        if ceiling is None:
            assert row["bandwidth_ceiling_tokens_per_s_reason"]
        else:
            # The row's fraction comes from the unrounded rate and ceiling: 1e-6 apart at most.
            assert fraction == pytest.approx(row["decode_tokens_per_s"] / ceiling, abs=2e-6)
    ref, bf16 = rows["b4-fp32"], rows["b4-bf16"]
    assert ref["token_agreement"] is None and "reference variant" in ref["token_agreement_reason"]
    assert 0 <= bf16["exact_agreement"] <= 1 and 0 < bf16["token_agreement"] <= 1
    assert bf16["reference_agreement"] == bf16["token_agreement"]
    # The predictions file: every id once, its output text, token ids and counts.
    predictions = corpus.read_predictions(book.parent / ref["predictions_path"])
    assert [p["id"] for p in predictions][-1] == "long-1"
    assert all(len(p["token_ids"]) == p["generated_tokens"] for p in predictions)
    assert all(isinstance(p["prediction"], str) for p in predictions)
    assert predictions[-1]["truncated"] is True and predictions[-1]["prompt_tokens"] == 64
    assert predictions[-1]["stratum"] == "long"
    assert validate(store.read(book), book) == []
    # The report states the generation figures under the durations' statistics rules.
    result = CliRunner().invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "campaign_report" / "report.md").read_text(encoding="utf-8")
    section = report.split("## Generation: decode speed against the bandwidth ceiling")[1]
    rate = f"{ref['decode_tokens_per_s']:.1f}"
    assert f"| b4-fp32 | {rate} | {rate} | {rate} | {rate} |" in section
    assert "- b4-fp32 vs b4-bf16: not separated (ranges" in section  # 1 run each: never
    # The Memory sheet estimates a generation at max_length + max_new_tokens tokens.
    memory = {r["variant_id"]: r for r in store.read(book).tables["Memory"]}
    assert "seq_len 72, batch 4" in memory["b4-fp32"]["estimate_basis"]


def test_a_long_prompt_is_refused_when_the_protocol_says_so(tmp_path: Path) -> None:
    long_prompt = {"id": "long-1", "text": " ".join(["the lady said that"] * 40), "reference": "x"}
    book = make_generation_campaign(
        tmp_path,
        3,
        [gen_variant("b4-fp32", 4)],
        extra_prompts=[long_prompt],
        long_prompts="refuse",
        warmup_rule="none",
    )
    # `run`'s pre-flight runs the batch first: refused before any attempt row.
    code, output = _run(book)
    assert code == 1 and attempts(book) == []
    assert "variant b4-fp32: prompt 'long-1' has 160 tokens, past the variant's max_length" in (
        output
    )
    # Where run has no pre-flight (on a Ray cluster), the attempt itself refuses it.
    code, output = _run_without_preflight(book)
    row = attempts(book)[0]
    assert row["status"] == "failed"
    assert "prompt 'long-1' has" in row["notes"] and "max_length of 64" in row["notes"]
    assert row["prompt_tokens"] is None and row["prompt_tokens_reason"]


def test_a_budget_past_the_context_is_refused_at_load(tmp_path: Path) -> None:
    book = make_generation_campaign(
        tmp_path, 2, [gen_variant("b4-fp32", 4, max_length=125)], warmup_rule="none"
    )
    code, output = _run(book)  # the pre-flight loads it first: no attempt row
    assert code == 1 and attempts(book) == []
    assert (
        "variant b4-fp32: max_length 125 + max_new_tokens 8 is past the model's context of 128"
    ) in output
    _run_without_preflight(book)  # as on a Ray cluster: the attempt's load refuses it
    row = attempts(book)[0]
    assert row["status"] == "failed"
    assert "past the model's context of 128 tokens" in row["notes"]
    assert row["load_s"] is None and row["load_s_reason"]


def test_a_generation_protocol_without_its_rule_is_refused_before_any_attempt(
    tmp_path: Path,
) -> None:
    book = make_generation_campaign(tmp_path, 2, [gen_variant("b4-fp32", 4)], max_new_tokens=None)
    code, output = _run(book)
    assert code != 0
    assert "max_new_tokens" in output and attempts(book) == []


def test_outputs_that_cannot_be_written_fail_the_attempt(tmp_path: Path) -> None:
    """As for classification (tests/runner/test_attempt.py): generated outputs that never reached
    their file are no result; the row says the export failed, not that nothing was made."""
    book = make_generation_campaign(tmp_path, 4, [gen_variant("b4-fp32", 4)], warmup_rule="none")
    (tmp_path / "campaign_predictions").write_text("in the way\n", encoding="utf-8")
    code, output = _run(book)
    assert code == 0, output
    (row,) = attempts(book)
    assert (row["status"], row["items_completed"], row["export_s"]) == ("failed", 4, None)
    assert row["export_s_reason"] == "export failed (see notes)"
    assert "export failed: FileExistsError" in row["notes"]
    assert (row["predictions_path"], row["corpus_accepted"]) == (None, "no")


def test_an_injected_fault_mid_window_leaves_a_failed_row_with_its_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ITERALAB_INJECT_FAULT reaches generation attempts too (a drill on a generation
    campaign used to do nothing): out of memory after 4 prompts fails the attempt, keeps
    the 4 outputs made and says where it stopped."""
    book = make_generation_campaign(tmp_path, 8, [gen_variant("b4-fp32", 4)])
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "oom@4")
    code, output = _run(book)
    assert code == 0, output
    (row,) = attempts(book)
    assert (row["status"], row["items_completed"], row["expected_ids"]) == ("failed", 4, 8)
    assert row["measured_s"] is None
    assert row["measured_s_reason"] == (
        "failed during measured: an unfinished phase has no duration"
    )
    assert row["notes"].startswith(
        "out of memory after 4 of 8 prompts: OutOfMemoryError: "
        "CUDA out of memory (injected by ITERALAB_INJECT_FAULT=oom@4)"
    )
    assert len(corpus.read_predictions(book.parent / row["predictions_path"])) == 4
    # 4 of 8 prompts are not the corpus: no strata that would read as its length mix (R3)
    (manifest,) = store.read(book).tables["Manifest"]
    assert (manifest["manifest_id"], manifest["strata"]) == (row["manifest_id"], None)
    assert validate(store.read(book), book) == []


def test_on_a_gpu_the_load_phase_covers_the_widest_and_the_last_batch() -> None:
    """Issue 35, defect 6: generation's load ran only the first batch's width, so on a GPU
    the kernels of wider batches loaded inside the first window. On a GPU the load phase
    also runs the longest prompts and the last, partial batch; on the CPU (nothing to load)
    the first batch alone."""
    from toolkit.evidence.corpus import Item
    from toolkit.runner.tasks.generation import load_batches

    items = [Item(f"p{n}", "x" * n) for n in (3, 9, 4, 2, 8, 5, 1)]
    lengths = [len(i.text) for i in items]
    assert load_batches(items, lengths, 3, on_gpu=False) == [items[:3]]
    first, longest, last = load_batches(items, lengths, 3, on_gpu=True)
    assert first == items[:3]
    assert [i.id for i in longest] == ["p9", "p8", "p5"]  # file order among the longest
    assert last == items[-1:]
    six = load_batches(items[:6], lengths[:6], 3, on_gpu=True)
    assert six == [items[:3], [items[1], items[4], items[5]]]  # no partial batch
