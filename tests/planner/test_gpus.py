"""The GPU catalog, device identity, and the card choice as `iteralab gpus` shows it
(R31-R35; splits, precision and offers in detail: tests/planner/test_offers.py and test_splits.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import DOCS, FIXTURES
from toolkit.cli import cli
from toolkit.errors import CatalogError
from toolkit.planner import gpus
from toolkit.planner.memory import RUNTIME_BYTES
from toolkit.plumbing.shipped import GPU_CATALOG, shipped

CONFIGS = FIXTURES / "configs"
GIB = 2**30


# --- the catalog ---------------------------------------------------------------------------


def test_catalog_holds_the_cards_with_their_vendor_figures() -> None:
    rows = {
        (g.slug, g.vram_gb, g.memory_type, g.bandwidth_gbps, g.pcie_only)
        for g in gpus.load_catalog()
    }
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
    assert (
        err.value.message == f"{path}, line 3, column memory_bandwidth_gbps: '0' is not a "
        "positive number"
    )
    assert err.value.exit_code == 2


def test_a_catalog_without_device_names_names_the_missing_column(tmp_path: Path) -> None:
    text = shipped(GPU_CATALOG).read_text(encoding="utf-8")
    path = tmp_path / "gpus.csv"
    path.write_text(text.replace("slug,name,device_names,", "slug,name,", 1), encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        gpus.load_catalog(path)
    assert err.value.message == f"{path}, line 1: missing columns device_names"


def test_a_missing_catalog_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError) as err:
        gpus.load_catalog(tmp_path / "none.csv")
    assert err.value.message == f"{tmp_path / 'none.csv'}: GPU catalog not found"


def test_every_card_names_the_devices_torch_reports_for_it() -> None:
    names = {g.slug: g.device_names for g in gpus.load_catalog()}
    assert names == {
        "rtx-4090": ("NVIDIA GeForce RTX 4090",),
        "rtx-a6000": ("NVIDIA RTX A6000",),
        "l40s": ("NVIDIA L40S",),
        "a100-80gb-sxm": ("NVIDIA A100-SXM4-80GB",),
        "h100-sxm": ("NVIDIA H100 80GB HBM3",),
        "h200": ("NVIDIA H200",),
        "b200": ("NVIDIA B200",),
        "mi300x": ("AMD Instinct MI300X",),
    }


def test_precision_support_is_read_from_the_flags() -> None:
    cards = {g.slug: g for g in gpus.load_catalog()}
    assert [s for s, g in cards.items() if g.lacks("fp8")] == ["rtx-a6000", "a100-80gb-sxm"]
    assert not any(g.lacks(p) for g in cards.values() for p in ("int8", "bf16", "fp32", "int4"))


# --- identify: is this device the card the slug names? (#16) --------------------------------


@pytest.mark.parametrize(
    ("slug", "name", "gib"),
    [
        ("h200", "NVIDIA H200", 140.4),
        ("h100-sxm", "NVIDIA H100 80GB HBM3", 79.6),
        ("a100-80gb-sxm", "NVIDIA A100-SXM4-80GB", 79.2),
        ("rtx-4090", "NVIDIA GeForce RTX 4090", 23.6),
        ("b200", "NVIDIA B200", 179.1),
    ],
)
def test_a_device_matching_its_slug_is_identified(slug: str, name: str, gib: float) -> None:
    assert gpus.identify(slug, name, int(gib * GIB)) is None
    assert gpus.identify(slug, name, None) is None  # memory unknown: the name decides


def test_another_form_factor_is_not_the_slug() -> None:
    assert gpus.identify("h100-sxm", "NVIDIA H100 PCIe", int(79.1 * GIB)) == (
        "h100-sxm is 'NVIDIA H100 80GB HBM3' with 80 GiB; the device is 'NVIDIA H100 PCIe' "
        "with 79.1 GiB"
    )


def test_a_device_with_half_the_memory_is_not_the_slug() -> None:
    assert gpus.identify("a100-80gb-sxm", "NVIDIA A100-SXM4-80GB", int(39.4 * GIB)) == (
        "a100-80gb-sxm is 'NVIDIA A100-SXM4-80GB' with 80 GiB (73.6 to 81.6 GiB as reported, "
        "the driver keeping up to 8%); the device is 'NVIDIA A100-SXM4-80GB' with 39.4 GiB"
    )


def test_an_unknown_slug_says_the_catalog_has_none() -> None:
    assert gpus.identify("h100-pcie", "NVIDIA H100 PCIe", None) == (
        "the GPU catalog has no slug 'h100-pcie' (known: a100-80gb-sxm, b200, h100-sxm, h200, "
        "l40s, mi300x, rtx-4090, rtx-a6000)"
    )


def test_identify_reads_a_given_catalog(tmp_path: Path) -> None:
    text = shipped(GPU_CATALOG).read_text(encoding="utf-8")
    path = tmp_path / "gpus.csv"
    path.write_text(
        text.replace(",NVIDIA H200,", ",NVIDIA H200;NVIDIA H200 NVL,"), encoding="utf-8"
    )
    catalog = gpus.load_catalog(path)
    assert gpus.identify("h200", "NVIDIA H200 NVL", None, catalog) is None
    assert gpus.identify("h200", "NVIDIA H200 NVL", None) is not None  # the shipped one


# --- the command ---------------------------------------------------------------------------

#: The VRAM planner's how-to page shows the 70B answer as the command prints it.
README = DOCS / "how-to" / "vram-planner.md"
EXAMPLE_70B = (
    "$ iteralab gpus --config tests/fixtures/configs/llama-2-70b.json --precision bf16 "
    "--seq-len 4096"
)


def _readme_block(command: str) -> list[str]:
    """The lines the page shows under ``command`` (up to the closing fence)."""
    text = README.read_text(encoding="utf-8").split(command + "\n", 1)[1]
    return text.split("\n```", 1)[0].splitlines()


def test_the_readme_shows_the_real_70b_answer(runner) -> None:
    result = runner.invoke(cli, EXAMPLE_70B.split()[2:])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == _readme_block(EXAMPLE_70B)


def test_gpus_never_offers_single_card_lots_summed_for_a_70b_model(runner) -> None:
    result = runner.invoke(cli, EXAMPLE_70B.split()[2:])
    lines = result.output.splitlines()
    rtx = next(line for line in lines if line.startswith("rtx-4090 "))
    assert rtx.split()[4:6] == ["TP8", "PCIe"] and rtx.endswith("  not offered")
    assert (
        "  rtx-4090: not offered: TP8 needs one machine of 8 cards, a lot holds 1 (separate "
        "lots are separate machines)" in lines
    )
    assert not any("lots x" in line or "770" in line for line in lines)


def test_gpus_json_carries_splits_offers_and_margins(runner) -> None:
    result = runner.invoke(cli, [*EXAMPLE_70B.split()[2:], "--usage", "endpoint", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["format"], data["usage"], data["plan_days"]) == ("iteralab-gpus/1", "endpoint", 7)
    assert data["need"]["allocator_margin_pct"] == 10
    by_slug = {g["slug"]: g for g in data["gpus"]}
    assert {
        k: by_slug["b200"][k]
        for k in (
            "native_precision",
            "cards",
            "split",
            "cards_per_lot",
            "lot_holds_split",
            "replicas",
            "budget_usd",
            "billing_unit",
            "availability",
            "storage_usd_per_gb_month",
            "egress_usd_per_gb",
            "decode_tokens_per_s_batch1",
            "tokens_per_s_per_usd",
        )
    } == {
        "native_precision": True,
        "cards": 1,
        "split": {
            "label": "1 card",
            "tensor_parallel": 1,
            "pipeline_stages": 1,
            "link": None,
            "link_gbps_per_direction": None,
        },
        "cards_per_lot": 2,
        "lot_holds_split": True,
        "replicas": 2,
        "budget_usd": "2071.00",
        "billing_unit": "flat 7-day plan per lot of 2 cards (no hourly billing)",
        "availability": None,
        "storage_usd_per_gb_month": None,
        "egress_usd_per_gb": None,
        "decode_tokens_per_s_batch1": 57,
        "tokens_per_s_per_usd": round(2 * 57 / 2071, 6),
    }
    assert by_slug["b200"]["warnings"][-1] == (
        "the catalog does not say whether the lot can be interrupted: check before relying on "
        "it for an always-on endpoint"
    )
    rtx = by_slug["rtx-4090"]
    assert (
        rtx["split"]["label"],
        rtx["split"]["link"],
        rtx["split"]["link_gbps_per_direction"],
        rtx["lot_holds_split"],
        rtx["budget_usd"],
    ) == ("TP8", "PCIe Gen4", "32", False, None)
    assert [
        (m["allocator_margin_pct"], m["seq_len"], m["splits"]["h100-sxm"]) for m in data["margins"]
    ] == [(10, 4096, "TP2"), (20, 4096, "TP2"), (10, 32768, "TP4"), (20, 32768, "TP4")]
    assert data["communication_note"].startswith("split tok/s count the communication as volume")


def test_gpus_json_for_a_bare_need(runner, tmp_path: Path) -> None:
    result = runner.invoke(
        cli, ["gpus", "--need-gb", "40", "--tariffs", str(tmp_path / "none.csv"), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rtx = next(g for g in data["gpus"] if g["slug"] == "rtx-4090")
    assert {
        k: rtx[k]
        for k in (
            "fits_single_card",
            "cards",
            "single_card_shortfall_bytes",
            "price_reason",
            "decode_ceiling_reason",
        )
    } == {
        # 40 GiB of tensors + the runtime, against the 24,564 MiB an RTX 4090 reports
        "fits_single_card": False,
        "cards": 2,
        "single_card_shortfall_bytes": 40 * GIB + RUNTIME_BYTES - 24564 * 2**20,
        "price_reason": "no price in catalog (none.csv not found)",
        "decode_ceiling_reason": "no model sizes (--need-gb)",
    }
    assert [g["slug"] for g in data["gpus"]][:2] == ["b200", "mi300x"]  # fastest memory first
    assert data["margins"] == [] and data["split_rule"].startswith("splits: no model sizes")


def test_gpus_refuses_need_gb_with_a_model(runner) -> None:
    result = runner.invoke(
        cli, ["gpus", "--need-gb", "40", "--config", str(CONFIGS / "llama-2-13b.json")]
    )
    assert result.exit_code == 2
    assert "error: --need-gb and a model together" in result.output


def test_gpus_refuses_a_need_that_is_not_a_positive_number(runner) -> None:
    result = runner.invoke(cli, ["gpus", "--need-gb", "lots"])
    assert result.exit_code == 2
    assert "error: --need-gb 'lots' is not a positive number" in result.output
