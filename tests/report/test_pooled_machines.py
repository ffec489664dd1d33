"""A variant whose successes ran on several machines (merged copies, a cluster): R14's one
median over them all, with the mix stated in the Summary notes and the Decision memo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.report_campaign import campaign, manifest
from toolkit.report.refresh import Refreshed, refresh
from toolkit.workbook.model import Formula, WorkbookData

RTX = "NVIDIA GeForce RTX 4090"
B200 = "NVIDIA B200"
POOLED = (
    "runs from 2 machines pooled: vm (NVIDIA GeForce RTX 4090): median 41.200 s "
    "over 3 run(s); b200-box (NVIDIA B200): median 41.000 s over 2 run(s); median_s "
    "mixes their hardware and is no one machine's figure"
)


def _summary(data: WorkbookData) -> dict[str, dict[str, Any]]:
    return {
        r["variant_id"]: {k: v.value if isinstance(v, Formula) else v for k, v in r.items()}
        for r in data.tables["Summary"]
    }


def _merged(tmp_path: Path) -> tuple[WorkbookData, Refreshed]:
    """The campaign with every variant on host "vm", and b1-fp32's repetitions 4 and 5
    merged from a B200 box's copy (their own Manifest row)."""
    data = campaign()
    for m in data.tables["Manifest"]:
        m.update(host="vm", gpu_name=B200 if m["variant_id"] == "b8-b200" else RTX)
    data.append(
        "Manifest",
        {
            **manifest("b1-fp32"),
            "manifest_id": "m-b1-fp32-box",
            "host": "b200-box",
            "gpu_name": B200,
        },
    )
    for a in data.tables["Attempts"]:
        if a["attempt_id"] in ("b1-fp32-r4", "b1-fp32-r5"):
            a["manifest_id"] = "m-b1-fp32-box"
    return data, refresh(data, tmp_path)


def test_a_variant_over_two_machines_keeps_one_median_and_says_so(tmp_path: Path) -> None:
    data, _ = _merged(tmp_path)
    rows = _summary(data)
    b1 = rows["b1-fp32"]
    assert (b1["successes"], b1["median_s"]) == (5, 41.1)  # the same rule as every variant
    assert POOLED in b1["notes"]
    assert not b1["notes"].startswith("INTEGRITY")
    assert all(
        "machines pooled" not in (r["notes"] or "") for vid, r in rows.items() if vid != "b1-fp32"
    )  # one machine each: nothing to state


def test_the_memo_says_the_pooled_median_mixes_hardware(tmp_path: Path) -> None:
    data, result = _merged(tmp_path)
    sentence = (
        "b1-fp32's median_s mixes hardware: its runs come from 2 machines (vm (NVIDIA "
        "GeForce RTX 4090) 3 run(s), b200-box (NVIDIA B200) 2 run(s)), so it is no one "
        "machine's figure"
    )
    assert sentence in result.decision.suggestions["remaining_uncertainty"]
    assert sentence in data.forms["Decision"]["remaining_uncertainty"]
    assert "b4-fp32's median_s" not in result.decision.suggestions["remaining_uncertainty"]


def test_a_comparison_names_gpu_models_its_declared_change_does_not_account_for(
    tmp_path: Path,
) -> None:
    _, result = _merged(tmp_path)
    verdicts = {frozenset((s.first, s.second)): s.reason for s in result.decision.separations}
    assert verdicts[frozenset(("b1-fp32", "b4-fp32"))].endswith(
        f"; ran on different GPU models (gpu_name {B200}, {RTX} vs {RTX}): the verdict is "
        "about each whole tested configuration, not the declared change alone"
    )
    # b8-b200 declares its gpu_slug change: another GPU model is that change, not a confound.
    assert "GPU models" not in verdicts[frozenset(("b8-fp32", "b8-b200"))]
    assert "GPU models" not in verdicts[frozenset(("b4-fp32", "b8-fp32"))]


def test_one_machine_per_variant_states_no_mix(tmp_path: Path) -> None:
    data = campaign()
    for m in data.tables["Manifest"]:
        m.update(host="vm", gpu_name=RTX)
    result = refresh(data, tmp_path)
    assert all("machines pooled" not in (r["notes"] or "") for r in _summary(data).values())
    assert "mixes hardware" not in result.decision.suggestions["remaining_uncertainty"]
