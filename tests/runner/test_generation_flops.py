"""Generation FLOPs (runner.instruments.flops, SPEC B5): the decoder's formula against torch's
FLOP counter on the shipped tiny causal LM, run through the runner's own generation window,
and the Attempts row of a generation attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from torch.utils.flop_counter import FlopCounterMode

from tests.support.builders import SAMPLES, attempts, gen_variant, make_generation_campaign
from toolkit.cli import cli
from toolkit.errors import UsageError
from toolkit.evidence import corpus
from toolkit.runner.engines import causal_lm
from toolkit.runner.instruments import flops
from toolkit.runner.tasks.generation import flop_tally

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

SAME_LENGTH = [corpus.Item("a", "the lady said that"), corpus.Item("b", "the lady said that")]
MIXED = [
    corpus.Item("short", "I"),
    corpus.Item("long", "the lady said that she would come"),
    corpus.Item("mid", "the lady said"),
]
#: The tiny model ends "A carriage was heard." at its first token: that row stops early.
ENDS_EARLY = [corpus.Item("ends", "A carriage was heard."), *MIXED[1:]]


#: transformers 5.17 computes Llama's rotary angles as inv_freq (D/2 x 1) @ positions
#: (1 x L) once per forward pass, a matmul torch's counter sees: D FLOPs per token of the pass,
#: outside the weights and the attention (0.003 % of this model's count), so the formula leaves
#: it out. Later versions multiply elementwise, which the counter does not count. Either is
#: accepted exactly: the formula's count, or it plus D per token.
HEAD_DIM = json.loads((SAMPLES / "causal_lm" / "config.json").read_text(encoding="utf-8"))[
    "head_dim"
]


def _torch_counts(formula: int, tokens: int) -> set[int]:
    """What torch's counter may count for ``formula`` FLOPs over ``tokens`` tokens."""
    return {formula, formula + HEAD_DIM * tokens}


def _window(
    items: list[corpus.Item], stop: str, backend: str = "eager"
) -> tuple[int, causal_lm.GenerationWindow, flops.Cost]:
    """Generate ``items`` as one batch with the runner's loader and loop; torch's count."""
    rule = causal_lm.DecodingRule(max_new_tokens=5, stop=stop, long_prompts="truncate")
    variant = gen_variant("g", len(items), attention_backend=backend)
    lm = causal_lm.load_lm(variant, SAMPLES, rule)
    cost, reason = flops.cost_of(lm.module, generating=True)
    assert reason is None and cost is not None
    window = causal_lm.GenerationWindow()
    counter = FlopCounterMode(display=False)
    with counter:
        causal_lm.run_window(lm, variant, rule, items, window, lambda done: None)
    return counter.get_total_flops(), window, cost


def _flops(cost: flops.Cost, window: causal_lm.GenerationWindow) -> tuple[int, int]:
    tally = flop_tally(window)
    assert tally.padded_sequences is not None
    return (
        cost.total(tally.sequences, tally.real_tokens, tally.real_squares),
        cost.total(tally.padded_sequences, tally.padded_tokens, tally.padded_squares),
    )


@pytest.mark.parametrize("items", [SAME_LENGTH, MIXED], ids=["unpadded", "padded"])
def test_the_padded_count_is_what_torch_counts_for_a_prefill_and_its_decode_steps(
    items: list[corpus.Item],
) -> None:
    # Eager attention: its Q @ K^T and weights @ V are matmuls torch's counter sees, so
    # the whole formula is checked to the FLOP.
    counted, window, cost = _window(items, "max_new_tokens")
    (batch,) = window.batches
    assert (batch.rows, batch.steps) == (len(items), 5)  # a prefill and 4 decode steps
    real, padded = _flops(cost, window)
    assert counted in _torch_counts(padded, flop_tally(window).padded_tokens)
    widths = {o.prompt_tokens for o in window.outputs}
    if len(widths) == 1:  # no padding, every row to max_new_tokens: nothing wasted
        assert real == padded
    else:
        assert 0 < real < padded


def test_rows_that_end_early_count_only_their_own_steps_as_real() -> None:
    counted, window, cost = _window(ENDS_EARLY, "eos")
    real, padded = _flops(cost, window)
    (batch,) = window.batches
    # every row ran every step of the batch
    assert counted in _torch_counts(padded, flop_tally(window).padded_tokens)
    lengths = [len(o.token_ids) for o in window.outputs]
    assert min(lengths) < batch.steps == max(lengths)
    expected = 0
    for o in window.outputs:
        p, g = o.prompt_tokens, len(o.token_ids)
        # The module's formula, term by term: a prefill, then g - 1 one-token steps.
        expected += (
            cost.per_token * (p + g - 1)
            + cost.per_sequence * g
            + cost.per_square * (p * p + sum(p + j for j in range(1, g)))
        )
    assert real == expected < padded


def test_on_cpu_sdpa_torch_counts_the_linears_only() -> None:
    # torch's counter has formulas for the CUDA SDPA kernels (flash, memory-efficient,
    # cuDNN), not for the CPU one: on CPU it counts the same linears and no attention, so the
    # formula's attention term is the whole difference.
    counted, window, cost = _window(MIXED, "max_new_tokens", backend="sdpa")
    tally = flop_tally(window)
    assert tally.padded_sequences is not None
    assert counted in _torch_counts(
        cost.total(tally.padded_sequences, tally.padded_tokens, 0), tally.padded_tokens
    )
    assert counted < _flops(cost, window)[1]


def test_generation_flops_are_for_decoders_and_classification_s_for_encoders() -> None:
    with pytest.raises(UsageError, match="generation FLOPs are counted for decoders only"):
        flops.cost_from_config({"model_type": "bert"}, [], generating=True)
    with pytest.raises(UsageError, match="encoders only"):
        flops.cost_from_config({"model_type": "llama"}, [])


def test_a_generation_attempt_states_its_flops_and_utilisation(tmp_path: Path) -> None:
    book = make_generation_campaign(tmp_path, 6, [gen_variant("b4-fp32", 4)])
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    (row,) = attempts(book)
    assert row["status"] == "completed", row["notes"]
    assert 0 < row["real_flops"] <= row["padded_flops"]
    assert row["real_flop_rate"] > 0 and row["padded_flop_rate"] >= row["real_flop_rate"]
    assert row["padding_waste"] == pytest.approx(
        1 - row["real_flops"] / row["padded_flops"], abs=1e-6
    )
    for name in ("real_flops", "padded_flops", "real_flop_rate", "padding_waste"):
        assert row[f"{name}_reason"] is None
    if row["utilisation"] is None:
        assert row["utilisation_reason"]
    else:
        assert row["utilisation"] > 0 and row["utilisation_reason"] is None


def test_a_failed_generation_window_leaves_the_flop_cells_empty_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = make_generation_campaign(tmp_path, 8, [gen_variant("b4-fp32", 4)])
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "oom@4")
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    (row,) = attempts(book)
    assert row["status"] == "failed"
    for name in (
        "real_flops",
        "padded_flops",
        "real_flop_rate",
        "padded_flop_rate",
        "utilisation",
        "padding_waste",
    ):
        assert row[name] is None
        assert row[f"{name}_reason"] == "failed after 4 prompts: FLOPs cover a whole corpus only"
