"""Generation without the model: decoding rule, agreement, chrF, the sample, the demo's copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.builders import SAMPLES
from toolkit.commands import demo
from toolkit.errors import ProtocolError
from toolkit.evidence import corpus
from toolkit.runner.engines import causal_lm
from toolkit.runner.tasks import agreement
from toolkit.workbook import store


def test_blank_task_is_classification_and_a_wrong_one_is_refused() -> None:
    assert causal_lm.task_of({}) == "classification"
    assert causal_lm.task_of({"task": None}) == "classification"
    assert causal_lm.task_of({"task": "generation"}) == "generation"
    with pytest.raises(ProtocolError, match="task is 'chat'"):
        causal_lm.task_of({"task": "chat"})


def test_the_decoding_rule_is_read_from_the_protocol_or_refused() -> None:
    rule = causal_lm.decoding_rule({"max_new_tokens": 16})
    assert (rule.max_new_tokens, rule.stop, rule.long_prompts) == (16, "eos", "refuse")
    assert "greedy, max_new_tokens 16" in rule.text()
    for bad in ({}, {"max_new_tokens": 0}, {"max_new_tokens": "many"}):
        with pytest.raises(ProtocolError, match="max_new_tokens"):
            causal_lm.decoding_rule(bad)
    with pytest.raises(ProtocolError, match="stop_rule"):
        causal_lm.decoding_rule({"max_new_tokens": 4, "stop_rule": "period"})
    with pytest.raises(ProtocolError, match="long_prompts"):
        causal_lm.decoding_rule({"max_new_tokens": 4, "long_prompts": "drop"})


def test_agreement_counts_identical_outputs_and_matching_positions() -> None:
    ours = [
        {"id": "a", "token_ids": [1, 2, 3]},
        {"id": "b", "token_ids": [4, 5, 6, 7]},
        {"id": "c", "token_ids": [9]},
    ]
    ref = [
        {"id": "a", "token_ids": [1, 2, 3]},
        {"id": "b", "token_ids": [4, 0, 6]},
        {"id": "c", "token_ids": [9]},
    ]
    found, reason = agreement.agreement(ours, ref)
    assert reason is None and found is not None
    assert found.exact == pytest.approx(2 / 3)
    assert found.tokens == pytest.approx((3 + 2 + 1) / (3 + 4 + 1))  # the longer output counts
    assert found.compared == 3
    none, why = agreement.agreement(ours, [{"id": "z", "token_ids": []}])
    assert none is None and "no prompt id shared" in str(why)
    none, why = agreement.agreement([{"id": "a", "prediction": "x"}], ref)
    assert none is None and "token_ids" in str(why)


def test_chrf_comes_from_sacrebleu_and_needs_every_reference() -> None:
    from sacrebleu.metrics import CHRF

    outputs, refs = ["she said no more", "the house was"], ["she said nothing", "the house is"]
    score, reason = agreement.chrf(outputs, refs)
    assert reason is None
    assert score == pytest.approx(CHRF().corpus_score(outputs, [refs]).score / 100)
    assert agreement.chrf(["same text"], ["same text"])[0] == pytest.approx(1.0)
    missing, why = agreement.chrf(outputs, ["she said nothing", None])
    assert missing is None and "1 of 2 prompts have no reference" in str(why)


def test_the_sample_model_learned_and_loads_offline() -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    record = json.loads((SAMPLES / "causal_lm" / "training.json").read_text(encoding="utf-8"))
    assert record["held_out_loss_after"] < record["held_out_loss_before"] - 2  # not random
    assert (SAMPLES / "causal_lm" / "model.safetensors").stat().st_size < 5 * 2**20
    model = AutoModelForCausalLM.from_pretrained(str(SAMPLES / "causal_lm"), local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(SAMPLES / "causal_lm"), local_files_only=True)
    assert model.config.max_position_embeddings == record["context_tokens"]
    assert tokenizer.eos_token_id is not None


def test_the_prompts_come_from_the_held_out_corpus_with_references() -> None:
    prompts = corpus.read_corpus(SAMPLES / "prompts.jsonl")
    texts = {i.id: i.text for i in corpus.read_corpus(SAMPLES / "corpus.jsonl")}
    calibration = {i.id for i in corpus.read_corpus(SAMPLES / "calibration.jsonl")}
    assert len(prompts) == 200 and len({p.id for p in prompts}) == 200
    for p in prompts:
        assert p.id in texts and p.id not in calibration
        assert texts[p.id].split()[: len(p.text.split())] == p.text.split()
        assert p.fields.get("reference")


def test_the_generation_demo_copies_its_workbook_prompts_and_model(tmp_path: Path) -> None:
    book = demo.prepare(tmp_path, quick=True, task="generation")
    assert book.name == "example_generation.xlsx"
    assert (tmp_path / "causal_lm" / "model.safetensors").is_file()
    quick = (tmp_path / demo.QUICK_CORPUS).read_text(encoding="utf-8").splitlines()
    assert len(quick) == demo.QUICK_ITEMS_BY_TASK["generation"]
    form = store.read(book).forms["Protocol"]
    assert form["task"] == "generation" and form["metric"] == "chrf"
    assert form["corpus_path"] == demo.QUICK_CORPUS


def test_the_committed_generation_example_is_what_its_script_builds() -> None:
    import importlib.util

    from toolkit.evidence import protocol
    from toolkit.evidence.validate import validate

    path = SAMPLES / "make_generation_workbook.py"
    spec = importlib.util.spec_from_file_location("make_generation_workbook", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    book = SAMPLES / "example_generation.xlsx"
    committed, fresh = store.read(book), module.build()
    assert committed.forms["Protocol"] == fresh.forms["Protocol"]
    assert committed.tables["Variants"] == fresh.tables["Variants"]
    assert protocol.current_lock(committed).sha256 == protocol.current_lock(fresh).sha256
    assert validate(committed, book) == []
