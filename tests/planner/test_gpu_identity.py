"""The GPU that was paid for is the GPU that was measured (#16): `run` refuses a variant whose
declared GPU is not the one present; validate and report name any Manifest row whose device
is not its variant's slug."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.builders import SAMPLES, make_campaign, variant
from toolkit.cli import cli
from toolkit.planner.identity import device_mismatches, gpu_findings
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

RTX_4090 = ("NVIDIA GeForce RTX 4090", 25_393_692_672)  # 23.6 GiB as torch reports it
B200 = ("NVIDIA B200", 191_537_037_312)


def _measured_on(data: WorkbookData, devices: dict[str, tuple[str, int]]) -> WorkbookData:
    for m in data.tables["Manifest"]:
        if m["variant_id"] in devices:
            m["gpu_name"], m["gpu_memory_bytes"] = devices[m["variant_id"]]
    return data


def _right_devices() -> dict[str, tuple[str, int]]:
    return {
        v["variant_id"]: B200 if v["gpu_slug"] == "b200" else RTX_4090
        for v in report_campaign.variants()
        if v.get("device") == "cuda"
    }


def test_attempts_on_the_declared_cards_raise_nothing() -> None:
    assert gpu_findings(_measured_on(report_campaign.campaign(), _right_devices())) == []


def test_a_b200_variant_measured_on_an_rtx_4090_is_named() -> None:
    devices = {**_right_devices(), "b8-b200": RTX_4090}
    data = _measured_on(report_campaign.campaign(), devices)
    [finding] = gpu_findings(data)
    row = [m["variant_id"] for m in data.tables["Manifest"]].index("b8-b200") + 2
    assert (finding.sheet, finding.row, finding.column, finding.check) == (
        "Manifest",
        row,
        "gpu_name",
        "gpu-identity",
    )
    assert finding.message.startswith(
        "variant b8-b200 declares b200, priced as such, but ran on another device: b200 is "
        "'NVIDIA B200'"
    )
    assert "the device is 'NVIDIA GeForce RTX 4090'" in finding.message


def test_validate_exits_1_and_report_lists_the_mismatch(tmp_path: Path) -> None:
    devices = {**_right_devices(), "b8-b200": RTX_4090}
    book = tmp_path / "campaign.xlsx"
    store.save(_measured_on(report_campaign.campaign(), devices), book)
    shutil.copytree(SAMPLES / "head", tmp_path / "head")  # the head its Variants name
    runner = CliRunner()
    result = runner.invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code == 1
    found = json.loads(result.output)["findings"]
    # The other finding: this constructed campaign's corpus file is not beside it.
    assert [f["check"] for f in found] == ["exists", "gpu-identity"]
    result = runner.invoke(cli, ["report", str(book), "--json", "--no-png"])
    assert result.exit_code == 0, result.output
    assert [f["check"] for f in json.loads(result.stdout)["findings"]] == ["gpu-identity"]


def test_the_run_check_names_each_variant_declared_on_another_card() -> None:
    variants = [
        variant("g-4090", 8, device="cuda", gpu_slug="rtx-4090"),
        variant("g-b200", 8, device="cuda", gpu_slug="b200"),
        variant("g-custom", 8, device="cuda", gpu_slug="my-own-box"),
        variant("c", 8),
    ]
    wrong = device_mismatches(variants, *RTX_4090)
    assert wrong == [wrong[0]] and wrong[0].startswith("g-b200: b200 is 'NVIDIA B200'")
    assert device_mismatches(variants[:1], *RTX_4090) == []


torch = pytest.importorskip("torch")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_run_refuses_a_variant_declared_on_another_gpu(tmp_path: Path) -> None:
    here = torch.cuda.get_device_properties(0).name
    slug = "b200" if "B200" not in here else "rtx-4090"
    book = make_campaign(
        tmp_path, 8, [variant("g8", 8, device="cuda", gpu_slug=slug)], reference_variant="g8"
    )
    before = book.read_bytes()
    result = CliRunner().invoke(cli, ["run", str(book), "--quiet"])
    assert result.exit_code == 2
    assert "the GPU here is not the one declared (and priced): g8:" in result.stderr
    assert book.read_bytes() == before
