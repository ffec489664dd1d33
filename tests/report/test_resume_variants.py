"""R13 resume variants in the Settlement: a configuration that relies on its declared resume
variant to finish the corpus counts that variant's time and attempts, and the memo says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.report_campaign import campaign
from toolkit import layout
from toolkit.report.refresh import Refreshed, refresh
from toolkit.workbook.model import Formula, WorkbookData

CAMPAIGN_S = layout.column_letter(layout.SUMMARY, "campaign_s")


def _value(cell: Any) -> Any:
    return cell.value if isinstance(cell, Formula) else cell


def _decision_rows(data: WorkbookData) -> dict[str, dict[str, Any]]:
    return {r["item"]: r for r in data.tables["Settlement"] if r.get("part") == "decision"}


def _summary_campaign(data: WorkbookData) -> dict[str, float]:
    return {r["variant_id"]: _value(r["campaign_s"]) for r in data.tables["Summary"]}


@pytest.fixture
def resumed(tmp_path: Path) -> tuple[WorkbookData, Refreshed]:
    data = campaign(resume=True)
    return data, refresh(data, tmp_path)


def test_the_resumed_configuration_s_campaign_time_adds_its_resume_variant_s(
    resumed: tuple[WorkbookData, Refreshed],
) -> None:
    data, _ = resumed
    summary = _summary_campaign(data)
    row = _decision_rows(data)["b4-fp32"]
    assert row["campaign_s"].value == summary["b4-fp32"] + summary["b4-resume"]
    # Each found by its variant_id (INDEX/MATCH), never by the Summary's row.
    own, other = (
        f"INDEX(Summary!${CAMPAIGN_S}$2:${CAMPAIGN_S}$9,MATCH({key},Summary!$A$2:$A$9,0))"
        for key in ("$A3", '"b4-resume"')
    )
    assert row["campaign_s"].text == f'IF(OR({own}="",{other}=""),"",{own}+{other})'


def test_the_projection_of_the_resumed_configuration_uses_the_combined_time(
    resumed: tuple[WorkbookData, Refreshed],
) -> None:
    data, result = resumed
    summary = _summary_campaign(data)
    row = _decision_rows(data)["b4-fp32"]
    combined = summary["b4-fp32"] + summary["b4-resume"]
    assert float(row["projected_hours"].value) == pytest.approx(combined / 3600)
    costing = next(c for c in result.costs if c.stats.variant_id == "b4-fp32")
    assert costing.resume is not None and costing.resume.variant_id == "b4-resume"


def test_the_settlement_grounds_count_the_resume_variant_s_attempts(
    resumed: tuple[WorkbookData, Refreshed],
) -> None:
    data, _ = resumed
    grounds = _decision_rows(data)["b4-fp32"]["grounds"]
    assert (
        "with its resume variant b4-resume: campaign_s is b4-fp32's 19.750 s + "
        "b4-resume's 24.500 s; attempts b4-fp32 5 (1 unfinished) + b4-resume 1"
    ) in grounds


def test_the_memo_says_the_resume_variant_counts_with_the_configuration(
    resumed: tuple[WorkbookData, Refreshed],
) -> None:
    reasons = resumed[1].decision.suggestions["reasons"]
    assert (
        "b4-fp32 counts with its resume variant b4-resume: campaign_s is "
        "b4-fp32's 19.750 s + b4-resume's 24.500 s; attempts b4-fp32 5 (1 unfinished) + "
        "b4-resume 1, in the Settlement's projection and cost"
    ) in reasons
    assert "b4-resume" in resumed[0].forms["Decision"]["draft"]


def test_the_resume_variant_s_summary_says_where_it_counts(
    resumed: tuple[WorkbookData, Refreshed],
) -> None:
    notes = next(r["notes"] for r in resumed[0].tables["Summary"] if r["variant_id"] == "b4-resume")
    assert (
        "resume variant of b4-fp32: its time and attempts count with b4-fp32 in the Settlement"
    ) in notes.split("; ")


def test_the_resume_variant_s_own_row_is_its_own_time_only(
    resumed: tuple[WorkbookData, Refreshed],
) -> None:
    data, _ = resumed
    row = _decision_rows(data)["b4-resume"]
    assert row["campaign_s"].value == _summary_campaign(data)["b4-resume"]
    assert "with its resume variant" not in row["grounds"]


def test_a_configuration_without_failures_adds_nothing_for_a_resume_it_never_needed(
    tmp_path: Path,
) -> None:
    data = campaign(resume=True)
    for row in data.tables["Variants"]:
        if row["variant_id"] == "b4-resume":
            row["resume_of"] = "b1-fp32"  # b1-fp32 finished every attempt
    refresh(data, tmp_path)
    row = _decision_rows(data)["b1-fp32"]
    assert row["campaign_s"].value == _summary_campaign(data)["b1-fp32"]
    assert "resume" not in row["grounds"]
