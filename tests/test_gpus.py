"""The GPU catalog and the card choice: VRAM first, then bandwidth (R31-R35)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from toolkit.cli import cli
from toolkit.errors import CatalogError
from toolkit.planner import gpus, memory
from toolkit.plumbing.shipped import GPU_CATALOG, shipped

CONFIGS = Path(__file__).resolve().parent / "fixtures" / "configs"
GIB = 2**30
TARIFFS = """catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source
2026-01-01,rtx-4090,RTX 4090,1,7,99.00,older catalog
2026-09-24,rtx-4090,RTX 4090,1,7,110.00,catalog of 2026-09-24
2026-09-24,rtx-4090,RTX 4090,1,3,60.00,catalog of 2026-09-24
2026-09-24,b200,B200,2,7,2071.00,catalog of 2026-09-24
"""


@pytest.fixture
def tariffs(tmp_path: Path) -> Path:
    path = tmp_path / "tarifs-forfaits.csv"
    path.write_text(TARIFFS, encoding="utf-8")
    return path


def fits_for(config: str, **kw: object) -> dict[str, gpus.Fit]:
    est = memory.estimate(memory.shape_from_config(CONFIGS / f"{config}.json"), **kw)
    return {f.gpu.slug: f for f in gpus.rank(gpus.Need.from_estimate(est), gpus.load_catalog(),
                                             {})}


# --- the catalog ---------------------------------------------------------------------------


def test_catalog_holds_the_cards_with_their_vendor_figures() -> None:
    rows = {(g.slug, g.vram_gb, g.memory_type, g.bandwidth_gbps, g.pcie_only)
            for g in gpus.load_catalog()}
    assert rows == {
        ("rtx-4090", 24, "GDDR6X", 1008, True),
        ("rtx-a6000", 48, "GDDR6", 768, False),
        ("l40s", 48, "GDDR6", 864, True),
        ("a100-80gb-sxm", 80, "HBM2e", 2039, False),
        ("h100-sxm", 80, "HBM3", 3350, False),
        ("h200", 141, "HBM3e", 4800, False),
        ("b200", 180, "HBM3e", 8000, False),
        ("mi300x", 192, "HBM3", 5300, False),
    }


def test_every_card_has_a_source_and_a_date() -> None:
    for g in gpus.load_catalog():
        assert g.source and g.source_date == "2026-12-02", g.slug


def test_a_figure_the_vendor_does_not_state_is_empty_not_zero() -> None:
    a100 = next(g for g in gpus.load_catalog() if g.slug == "a100-80gb-sxm")
    assert (a100.fp8, a100.fp8_dense_tflops, a100.bf16_dense_tflops) == ("no", None, 312)
    assert "No FP8 on Ampere" in a100.notes


def test_the_uncertain_b200_memory_is_said_so() -> None:
    b200 = next(g for g in gpus.load_catalog() if g.slug == "b200")
    assert "VRAM UNCERTAIN" in b200.source
    assert b200.notes.startswith("VRAM per card uncertain: DGX B200 states 1,440 GB for 8 GPUs")


def test_a_card_label_in_gb_is_binary() -> None:
    rtx = next(g for g in gpus.load_catalog() if g.slug == "rtx-4090")
    assert rtx.capacity_bytes == 24 * GIB == 25_769_803_776


def test_a_zero_in_the_catalog_names_its_line_and_column(tmp_path: Path) -> None:
    text = shipped(GPU_CATALOG).read_text(encoding="utf-8").splitlines()
    text[2] = text[2].replace(",768,", ",0,", 1)
    path = tmp_path / "gpus.csv"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        gpus.load_catalog(path)
    assert err.value.message == f"{path}, line 3, column memory_bandwidth_gbps: '0' is not a " \
        "positive number"
    assert err.value.exit_code == 2


def test_a_missing_catalog_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError) as err:
        gpus.load_catalog(tmp_path / "none.csv")
    assert err.value.message == f"{tmp_path / 'none.csv'}: GPU catalog not found"


# --- prices ------------------------------------------------------------------------------


def test_prices_join_by_slug_for_the_plan_latest_catalog_first(tariffs: Path) -> None:
    prices, _ = gpus.load_prices(tariffs, 7)
    assert prices == {
        "rtx-4090": gpus.Price(1, Decimal("110.00"), "2026-09-24"),
        "b200": gpus.Price(2, Decimal("2071.00"), "2026-09-24"),
    }
    assert gpus.load_prices(tariffs, 3)[0] == {
        "rtx-4090": gpus.Price(1, Decimal("60.00"), "2026-09-24")}


def test_without_a_tariff_file_no_price_is_invented(tmp_path: Path) -> None:
    assert gpus.load_prices(tmp_path / "tarifs-forfaits.csv", 7) == (
        {}, "no price in catalog (tarifs-forfaits.csv not found)")


def test_a_two_card_lot_is_never_counted_twice(tariffs: Path) -> None:
    prices, reason = gpus.load_prices(tariffs, 7)
    fits = {f.gpu.slug: f for f in gpus.rank(gpus.Need.from_gb(Decimal(400)),
                                             gpus.load_catalog(), prices, reason)}
    # 400 GiB on 180 GiB cards: 3 cards; a lot holds 2, so 2 lots of 2,071.00 USD.
    assert (fits["b200"].cards, fits["b200"].lots, fits["b200"].budget_usd) == \
        (3, 2, Decimal("4142.00"))
    assert fits["h100-sxm"].price_reason == "no price in catalog"


# --- ranking -----------------------------------------------------------------------------


def test_a_13b_model_at_8k_int8_batch_4_ranks_single_cards_by_bandwidth() -> None:
    fits = gpus.rank(gpus.Need.from_estimate(memory.estimate(
        memory.shape_from_config(CONFIGS / "llama-2-13b.json"), precision="int8",
        seq_len=8192, batch=4)), gpus.load_catalog(), {})
    assert [(f.gpu.slug, f.cards) for f in fits] == [
        ("b200", 1), ("mi300x", 1), ("h200", 1), ("h100-sxm", 1), ("a100-80gb-sxm", 1),
        ("l40s", 1), ("rtx-a6000", 1), ("rtx-4090", 2)]


def test_a_card_that_does_not_fit_shows_its_shortfall_and_the_pcie_warning() -> None:
    fit = fits_for("llama-2-13b", precision="int8", seq_len=8192, batch=4)["rtx-4090"]
    tensors = 43_577_270_272 + 4_357_727_028  # subtotal + 10% allocator (rounded up)
    one_card = tensors + 512 * 2**20
    assert fit.shortfall_bytes == one_card - 24 * GIB == 22_702_064_436
    assert fit.per_card_bytes == tensors // 2 + 512 * 2**20  # split over 2 cards
    assert fit.warning == "2 cards over PCIe only: splitting one model across them is slow (R33)"


def test_decode_ceiling_is_bandwidth_over_bytes_read_per_step() -> None:
    fits = fits_for("llama-2-13b", precision="int8", seq_len=8192, batch=4)
    weights, kv = 13_343_959_040, 2 * 40 * 40 * 128 * 8192 * 2  # per sequence at 8k
    h100 = fits["h100-sxm"]
    assert h100.tokens_batch1 == 3_350 * 10**9 // (weights + kv) == 167
    assert h100.tokens_batch == 4 * 3_350 * 10**9 // (weights + 4 * kv) == 333
    # Two RTX 4090: their bandwidths add up, an upper bound (ideal tensor parallelism).
    assert fits["rtx-4090"].tokens_batch1 == 2 * 1_008 * 10**9 // (weights + kv) == 100


def test_an_encoder_has_no_decode_ceiling() -> None:
    fit = fits_for("all-minilm-l6-v2", precision="fp32", seq_len=256, batch=8)["rtx-4090"]
    assert (fit.cards, fit.tokens_batch1, fit.ceiling_reason) == \
        (1, None, "encoder: not generative, no decoding")


def test_need_gb_without_a_model() -> None:
    fits = {f.gpu.slug: f for f in gpus.rank(gpus.Need.from_gb(Decimal("40")),
                                             gpus.load_catalog(), {})}
    assert (fits["rtx-4090"].cards, fits["l40s"].cards) == (2, 1)
    assert fits["l40s"].ceiling_reason == "no model sizes (--need-gb)"


def test_a_need_beyond_eight_cards_does_not_fit() -> None:
    fits = {f.gpu.slug: f for f in gpus.rank(gpus.Need.from_gb(Decimal("250")),
                                             gpus.load_catalog(), {})}
    assert (fits["rtx-4090"].cards, fits["rtx-4090"].warning) == \
        (None, "does not fit in 8 cards")


# --- seed 004's rules of thumb (R35) -------------------------------------------------------


@pytest.mark.parametrize("config", ["mistral-7b-v0.1", "llama-2-13b"])
def test_a_4_bit_7b_or_13b_model_fits_one_24_gb_card_at_moderate_context(config: str) -> None:
    assert fits_for(config, precision="int4", seq_len=4096, batch=1)["rtx-4090"].cards == 1


def test_a_70b_model_in_bf16_does_not_fit_one_80_gb_card() -> None:
    fits = fits_for("llama-2-70b", precision="bf16", seq_len=4096)
    for slug in ("a100-80gb-sxm", "h100-sxm"):
        assert fits[slug].cards == 2 and fits[slug].shortfall_bytes > 60 * GIB, slug


def test_a_70b_model_in_int8_needs_an_80_gb_class_card() -> None:
    fits = fits_for("llama-2-70b", precision="int8", seq_len=4096)
    assert (fits["h100-sxm"].cards, fits["l40s"].cards) == (1, 2)


def test_full_precision_13b_serving_prefers_48_gb() -> None:
    fits = fits_for("llama-2-13b", precision="bf16", seq_len=4096)
    assert (fits["rtx-4090"].cards, fits["l40s"].cards) == (2, 1)


def test_qlora_of_a_13b_model_fits_one_24_gb_card_with_checkpointing() -> None:
    fits = fits_for("llama-2-13b", workload="qlora", seq_len=2048, checkpointing=True)
    assert fits["rtx-4090"].cards == 1


# --- the command -------------------------------------------------------------------------


def test_gpus_table_for_the_readme_example(runner, tariffs: Path) -> None:
    result = runner.invoke(cli, ["gpus", "--config", str(CONFIGS / "llama-2-13b.json"),
                                 "--precision", "int8", "--seq-len", "8192", "--batch", "4",
                                 "--tariffs", str(tariffs)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == ("  tensors 40.58 GiB + 10% allocator + 0.50 GiB runtime per card = "
                        "45.14 GiB on one card")
    assert lines[3] == ("b200              180 HBM3e    8000     1    45.14       -       398  "
                        "   796  1 lot x 2071.00 = 2071.00 USD (2 cards/lot)")
    assert lines[10] == ("rtx-4090           24 GDDR6X   1008     2    22.82   21.14       100  "
                         "   200  2 lots x 110.00 = 220.00 USD")
    assert lines[6].endswith("  no price in catalog")
    assert "warning: rtx-4090: 2 cards over PCIe only: splitting one model across them is slow " \
        "(R33)" in lines
    assert any(line.startswith("note: decode tok/s is an upper bound from memory bandwidth "
                               "alone") for line in lines)


def test_gpus_json_for_scripts(runner, tariffs: Path) -> None:
    result = runner.invoke(cli, ["gpus", "--need-gb", "40", "--tariffs", str(tariffs),
                                 "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rtx = next(g for g in data["gpus"] if g["slug"] == "rtx-4090")
    assert {k: rtx[k] for k in ("fits_single_card", "cards", "single_card_shortfall_bytes",
                                "lots", "price_per_lot_usd", "budget_usd")} == {
        "fits_single_card": False, "cards": 2, "single_card_shortfall_bytes": 16 * GIB,
        "lots": 2, "price_per_lot_usd": "110.00", "budget_usd": "220.00"}
    assert [g["slug"] for g in data["gpus"]][:2] == ["b200", "mi300x"]  # fastest memory first
    assert data["ceiling_note"] == gpus.CEILING_NOTE


def test_gpus_refuses_need_gb_with_a_model(runner) -> None:
    result = runner.invoke(cli, ["gpus", "--need-gb", "40", "--config",
                                 str(CONFIGS / "llama-2-13b.json")])
    assert result.exit_code == 2
    assert "error: --need-gb and a model together" in result.output


def test_gpus_refuses_a_need_that_is_not_a_positive_number(runner) -> None:
    result = runner.invoke(cli, ["gpus", "--need-gb", "lots"])
    assert result.exit_code == 2
    assert "error: --need-gb 'lots' is not a positive number" in result.output
