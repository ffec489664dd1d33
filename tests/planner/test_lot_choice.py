"""The VRAM planner's review fixes (R30-R35, seed 004): every offer of a card is read and the
lot that holds the split is priced; an always-on endpoint takes on-demand capacity over a
cheaper spot lot; cards fit against the memory they report; an fp8 KV cache is storage, not
upcast; tensor-parallel degrees divide the MLP width and may replicate KV heads."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.errors import CatalogError
from toolkit.planner import choice, gpus, memory, splits
from toolkit.planner.need import Need
from toolkit.plumbing.shipped import GPU_CATALOG, shipped

GIB, MIB = 2**30, 2**20
L8 = (
    "--params 8030261248 --layers 32 --hidden-size 4096 --heads 32 --kv-heads 8 "
    "--vocab 128256 --intermediate-size 14336"
).split()
L70 = (
    "--params 70553706496 --layers 80 --hidden-size 8192 --heads 64 --kv-heads 8 "
    "--vocab 128256 --intermediate-size 28672"
).split()
# The reviewer's price files (/tmp/review-vram/t1.csv and t2.csv), as they were.
T1 = """\
catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source,provider,availability,storage_usd_per_gb_month,egress_usd_per_gb
2026-09-24,h100-sxm,H100,1,7,300.00,prov A,A,on-demand,0.10,0.05
2026-09-24,h100-sxm,H100,2,7,560.00,prov B,B,on-demand,0.10,0.05
2026-09-24,l40s,L40S,1,7,80.00,prov C spot,C,spot,,
2026-09-24,l40s,L40S,1,7,150.00,prov D,D,on-demand,,
"""  # noqa: E501
T2 = """\
catalog_date,gpu_slug,gpu_name,cards_per_lot,plan_days,price_per_lot_usd,source,provider,availability
2026-09-24,l40s,L40S,1,7,150.00,prov D,D,on-demand
2026-09-25,l40s,L40S,1,7,80.00,prov C,C,spot"""


def _prices(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.csv"
    path.write_text(text, encoding="utf-8")
    return path


def _gpus(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["gpus", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def _card(data: dict[str, Any], slug: str) -> dict[str, Any]:
    return next(g for g in data["gpus"] if g["slug"] == slug)


# --- 1. every offer is kept; the lot that holds the split is priced --------------------------


def test_a_two_card_lot_of_another_provider_prices_a_tp2_split(tmp_path: Path) -> None:
    data = _gpus(
        *L70,
        "--precision",
        "bf16",
        "--seq-len",
        "8192",
        "--usage",
        "endpoint",
        "--tariffs",
        str(_prices(tmp_path, T1)),
    )
    h100 = _card(data, "h100-sxm")
    assert (
        h100["split"]["label"],
        h100["lot_holds_split"],
        h100["budget_usd"],
        h100["provider"],
        h100["cards_per_lot"],
        h100["price_reason"],
    ) == ("TP2", True, "560.00", "B", 2, None)
    text = (
        CliRunner()
        .invoke(
            cli,
            [
                "gpus",
                *L70,
                "--precision",
                "bf16",
                "--seq-len",
                "8192",
                "--usage",
                "endpoint",
                "--tariffs",
                str(_prices(tmp_path, T1)),
            ],
        )
        .output
    )
    assert (
        "  h100-sxm: 560.00 USD from provider B, flat 7-day plan per lot of 2 cards "
        "(no hourly billing); on-demand;" in text
    )


def test_when_no_lot_holds_the_split_the_largest_is_named(tmp_path: Path) -> None:
    data = _gpus(
        *L70, "--precision", "bf16", "--seq-len", "8192", "--tariffs", str(_prices(tmp_path, T1))
    )
    assert _card(data, "l40s")["price_reason"] == (
        "not offered: TP4 needs one machine of 4 cards, the largest lot holds 1 (provider C, "
        "lot of 1 card; separate lots are separate machines)"
    )


# --- 2. an always-on endpoint takes on-demand capacity --------------------------------------


def test_an_endpoint_takes_the_on_demand_lot_over_a_cheaper_spot_one(tmp_path: Path) -> None:
    data = _gpus(
        *L8,
        "--precision",
        "fp8",
        "--seq-len",
        "8192",
        "--usage",
        "endpoint",
        "--tariffs",
        str(_prices(tmp_path, T1)),
    )
    l40s = _card(data, "l40s")
    assert (l40s["availability"], l40s["provider"], l40s["budget_usd"]) == (
        "on-demand",
        "D",
        "150.00",
    )
    assert l40s["tokens_per_s_per_usd"] == round(l40s["decode_tokens_per_s_batch"] / 150, 6)
    assert l40s["warnings"] == [
        "a cheaper spot lot (provider C, lot of 1 card, 80.00 USD) is "
        "left aside: unsuitable for an always-on endpoint"
    ]


def test_fault_tolerant_batch_work_takes_the_cheaper_spot_lot(tmp_path: Path) -> None:
    data = _gpus(
        *L8,
        "--precision",
        "fp8",
        "--seq-len",
        "8192",
        "--usage",
        "batch",
        "--tariffs",
        str(_prices(tmp_path, T1)),
    )
    l40s = _card(data, "l40s")
    assert (l40s["availability"], l40s["provider"], l40s["budget_usd"], l40s["warnings"]) == (
        "spot",
        "C",
        "80.00",
        [],
    )


def test_a_newer_spot_price_does_not_hide_an_older_on_demand_one(tmp_path: Path) -> None:
    data = _gpus(
        *L8,
        "--precision",
        "fp8",
        "--seq-len",
        "8192",
        "--usage",
        "endpoint",
        "--tariffs",
        str(_prices(tmp_path, T2)),
    )
    assert (_card(data, "l40s")["availability"], _card(data, "l40s")["budget_usd"]) == (
        "on-demand",
        "150.00",
    )


def test_spot_alone_is_shown_to_an_endpoint_with_its_warning(tmp_path: Path) -> None:
    only_spot = "\n".join(line for line in T2.splitlines() if "on-demand" not in line)
    data = _gpus(
        *L8,
        "--precision",
        "fp8",
        "--seq-len",
        "8192",
        "--usage",
        "endpoint",
        "--tariffs",
        str(_prices(tmp_path, only_spot)),
    )
    l40s = _card(data, "l40s")
    assert (l40s["availability"], l40s["budget_usd"]) == ("spot", "80.00")
    assert l40s["warnings"] == [
        "spot: unsuitable for an always-on endpoint: it can be reclaimed at any time"
    ]


# --- 3. cards fit against the memory they report --------------------------------------------


def test_a_need_above_the_reported_total_does_not_fit_one_h100() -> None:
    data = _gpus(*L8, "--precision", "bf16", "--batch", "32", "--seq-len", "8192")
    h100 = _card(data, "h100-sxm")
    assert 80 * GIB > data["need_bytes_one_card"] > 81559 * MIB  # 79.68 GiB
    assert (h100["cards"], h100["usable_bytes"], h100["capacity_bytes"]) == (
        2,
        81559 * MIB,
        80 * GIB,
    )
    assert h100["usable_basis"].startswith("81,559 MiB reported total (nvidia-smi ")
    assert h100["single_card_shortfall_bytes"] == data["need_bytes_one_card"] - 81559 * MIB


def test_a_card_without_a_reported_total_takes_the_label_less_the_reserve() -> None:
    b200 = next(g for g in gpus.load_catalog() if g.slug == "b200")
    assert b200.usable_mib is None
    assert b200.usable_bytes == 180 * GIB * (100 - gpus.DRIVER_RESERVE_PCT) // 100
    assert b200.usable_basis.startswith("label less 8% (no reported total in gpus.csv")
    text = CliRunner().invoke(cli, ["gpus", *L8, "--precision", "bf16"]).output
    assert (
        "note: usable GiB (what a card must hold) = reported total (gpus.csv usable_mib, "
        "with its source): a100-80gb-sxm, h100-sxm, h200, l40s, rtx-4090" in text.splitlines()
    )


def test_the_h200_fits_against_what_the_lent_card_reported() -> None:
    """The H200 lent on 2026-12-04 reported 143,771 MiB (nvidia-smi), not the label less 8 %
    (132,833 MiB): the planner fits against the reported figure and names it."""
    h200 = next(g for g in gpus.load_catalog() if g.slug == "h200")
    assert (h200.usable_mib, h200.usable_bytes) == (143771, 143771 * MIB)
    assert h200.usable_basis.startswith(
        "143,771 MiB reported total (nvidia-smi memory.total of an NVIDIA H200, driver 580.159.04"
    )


def test_a_reported_total_without_its_source_names_its_line(tmp_path: Path) -> None:
    lines = shipped(GPU_CATALOG).read_text(encoding="utf-8").splitlines()
    h100 = next(i for i, line in enumerate(lines) if line.startswith("h100-sxm,"))
    start = lines[h100].rindex(",81559,")
    lines[h100] = lines[h100][:start] + ",81559,"
    path = tmp_path / "gpus.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        gpus.load_catalog(path)
    assert err.value.message == f"{path}, line {h100 + 1}, column usable_source: empty"


def test_need_gb_adds_the_runtime_per_card_as_a_model_does(tmp_path: Path) -> None:
    data = _gpus("--need-gb", "40", "--tariffs", str(tmp_path / "none.csv"))
    assert data["need_bytes_one_card"] == 40 * GIB + memory.RUNTIME_BYTES
    rtx = _card(data, "rtx-4090")
    assert (rtx["cards"], rtx["per_card_bytes"]) == (2, 20 * GIB + memory.RUNTIME_BYTES)


# --- 4. the upcast note names what was upcast; an fp8 KV cache is storage -------------------


def test_an_fp8_kv_cache_on_a_card_without_fp8_is_kept_as_storage() -> None:
    data = _gpus(*L8, "--precision", "bf16", "--kv-precision", "fp8", "--seq-len", "8192")
    a100, h100 = _card(data, "a100-80gb-sxm"), _card(data, "h100-sxm")
    assert (a100["native_precision"], a100["precision_note"]) == (True, None)
    assert a100["per_card_bytes"] == h100["per_card_bytes"]
    assert data["kv_cache_note"] == (
        "the fp8 KV cache is storage: runtimes keep it at fp8 and convert it to bf16 in their "
        "attention kernels, which needs no fp8 compute, so a100-80gb-sxm, rtx-a6000 (no native "
        "fp8 in gpus.csv) are sized with it as is; only fp8 weights are upcast for want of it"
    )


def test_int4_weights_with_an_fp8_kv_cache_are_native_everywhere() -> None:
    data = _gpus(*L8, "--precision", "int4", "--kv-precision", "fp8")
    assert all(g["native_precision"] for g in data["gpus"])
    text = (
        CliRunner()
        .invoke(cli, ["gpus", *L8, "--precision", "int4", "--kv-precision", "fp8"])
        .output
    )
    assert "int4 weights" not in text and "not native" not in text


def test_fp8_weights_note_names_the_weights_and_both_rates() -> None:
    data = _gpus(*L8, "--precision", "fp8", "--kv-precision", "fp8")
    note = _card(data, "a100-80gb-sxm")["precision_note"]
    assert note.startswith(
        "a100-80gb-sxm has no native fp8 (gpus.csv): shown with the weights to bf16, "
    )
    assert note.endswith("computes at the bf16 rate, not the fp8 one")
    assert "KV cache" not in note


# --- 5. tensor-parallel degrees: MLP width, KV-head replication -----------------------------


def test_four_kv_heads_allow_tp8_by_replication() -> None:
    data = _gpus(
        "--params",
        "70000000000",
        "--layers",
        "80",
        "--hidden-size",
        "8192",
        "--heads",
        "64",
        "--kv-heads",
        "4",
        "--vocab",
        "32000",
        "--intermediate-size",
        "28672",
        "--seq-len",
        "4096",
    )
    assert (
        "or are a multiple of them (1, 2, 4, 8); at TP 8 each KV head is replicated"
        in data["split_rule"]
    )
    assert _card(data, "rtx-4090")["split"]["label"] == "TP8"


def test_replicated_kv_heads_cost_their_cache_on_every_card() -> None:
    shape = memory.shape_from_sizes(
        params=70_000_000_000,
        layers=80,
        hidden=8192,
        heads=64,
        kv_heads=4,
        vocab=32000,
        intermediate=28672,
    )
    est = memory.estimate(shape, precision="bf16", seq_len=4096)
    need = Need.from_estimate(est)
    rtx = next(g for g in gpus.load_catalog() if g.slug == "rtx-4090")
    tp4, tp8 = (splits.split_of(need, rtx, n, 28672) for n in (4, 8))
    assert tp4 is not None and tp8 is not None and (tp4.tp, tp8.tp) == (4, 8)
    assert splits.per_card(need, tp4) == need.per_card(4)
    cache = Fraction(est.kv_per_sequence * est.batch * 110, 100)
    assert splits.per_card(need, tp8) - need.per_card(8) == math.ceil(cache / 4 - cache / 8)
    found = choice.rank([rtx], {}, estimate=est)[0]
    assert found.per_card_bytes == splits.per_card(need, tp8)


def test_degrees_must_divide_the_mlp_width() -> None:
    need = Need(tensors_bytes=1, runtime_bytes=0, heads=40, kv_heads=40, layers=40)  # Llama-2-13B
    assert splits.degrees(need) == (1, 2, 4, 5, 8)
    assert splits.degrees(need, 13824) == (1, 2, 4, 8)  # 13824 / 5 is not whole
    est = memory.estimate(
        memory.shape_from_sizes(
            params=13_015_864_320,
            layers=40,
            hidden=5120,
            heads=40,
            kv_heads=40,
            vocab=32000,
            intermediate=13824,
        ),
        precision="bf16",
        seq_len=4096,
    )
    assert "(1, 2, 4, 8)" in choice.choose(gpus.load_catalog(), {}, estimate=est).split_rule
