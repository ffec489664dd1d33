"""Equal quality (R16), Settlement (R21-R23) and the decision memo, from constructed tables."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from report_campaign import CORPUS_SHA, campaign, manifest

from toolkit.report import stats
from toolkit.report.decision import DRAFT_HEADER
from toolkit.report.refresh import Refreshed, refresh
from toolkit.workbook.model import Formula, WorkbookData


def _value(cell: Any) -> Any:
    return cell.value if isinstance(cell, Formula) else cell


def _settlement(data: WorkbookData) -> dict[str, dict[str, Any]]:
    return {r["item"]: {k: _value(v) for k, v in r.items()} for r in data.tables["Settlement"]}


@pytest.fixture
def done(tmp_path: Path) -> tuple[WorkbookData, Refreshed]:
    data = campaign()
    return data, refresh(data, tmp_path)


def test_a_variant_outside_tolerance_is_shown_marked_and_kept_out_of_the_cost_comparison(
        done: tuple[WorkbookData, Refreshed]) -> None:
    data, result = done
    bf16 = next(r for r in data.tables["Summary"] if r["variant_id"] == "b8-bf16")
    assert (bf16["quality_verdict"], bf16["equal_quality"]) == ("fail", "no")
    assert bf16["notes"] == "outside the equal-quality comparison: quality verdict fail"
    assert _value(bf16["median_s"]) == 8.2  # shown, though the fastest
    assert _settlement(data)["b8-bf16"]["cost_per_accepted_usd"] == "undefined"
    compared = {name for m in result.decision.money for name in (m.first, m.second)}
    assert "b8-bf16" not in compared
    assert result.decision.chosen is not None
    assert result.decision.chosen.stats.variant_id == "b8-fp32"


def test_the_gate_rechecks_the_locked_threshold_without_changing_it(tmp_path: Path) -> None:
    data = campaign()
    for row in data.tables["Attempts"]:
        if row["variant_id"] == "b8-b200":
            row["metric_value"] = 0.5  # a verdict of "pass" typed over a failing metric
    refresh(data, tmp_path)
    b200 = next(r for r in data.tables["Summary"] if r["variant_id"] == "b8-b200")
    assert b200["equal_quality"] == "no"
    assert b200["notes"] == (
        "outside the equal-quality comparison: metric 0.5000 below the locked threshold "
        "0.6000; metric 0.5000 more than 0.0100 below the reference b1-fp32 (0.8421)")
    assert (data.forms["Protocol"]["threshold"], data.forms["Protocol"]["tolerance"]) == (0.6,
                                                                                        0.01)


def test_five_accepted_repetitions_of_one_corpus_count_as_one_accepted_corpus(
        done: tuple[WorkbookData, Refreshed]) -> None:
    row = _settlement(done[0])["b1-fp32"]
    assert (row["plan_days"], row["lots"], row["budget_usd"], row["accepted_corpora"],
            row["cost_per_accepted_usd"]) == (7, 1, Decimal("110.00"), 1, Decimal("110.00"))


def test_two_distinct_validated_corpora_count_twice(tmp_path: Path) -> None:
    data = campaign()
    other = "feed" + "0" * 60
    data.append("Manifest", {**manifest("b1-fp32"), "manifest_id": "m-b1-second",
                             "corpus_sha256": other})
    data.tables["Attempts"][0]["manifest_id"] = "m-b1-second"  # b1-fp32, repetition 1
    refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    assert (row["accepted_corpora"], row["cost_per_accepted_usd"]) == (2, Decimal("55.00"))
    assert CORPUS_SHA != other


def test_no_accepted_corpus_makes_the_cost_undefined_and_the_budget_stays(
        done: tuple[WorkbookData, Refreshed]) -> None:
    row = _settlement(done[0])["b16-fp32"]
    assert (row["budget_usd"], row["accepted_corpora"], row["cost_per_accepted_usd"]) == (
        Decimal("110.00"), 0, "undefined")


def test_a_b200_lot_is_priced_per_lot_never_per_card(done: tuple[WorkbookData, Refreshed]
                                                      ) -> None:
    row = _settlement(done[0])["b8-b200"]
    assert (row["cards_per_lot"], row["lots"], row["budget_usd"]) == (2, 1, Decimal("2071.00"))


def test_lots_come_from_the_variant_notes(tmp_path: Path) -> None:
    data = campaign()
    data.tables["Variants"][0]["notes"] = "lots: 2 (two cards, one process each)"
    refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    assert (row["lots"], row["budget_usd"]) == (2, Decimal("220.00"))


def test_a_cpu_variant_has_no_rental_price_and_empty_money_cells(
        done: tuple[WorkbookData, Refreshed]) -> None:
    row = _settlement(done[0])["b8-cpu"]
    assert (row["price_per_lot_usd"], row["budget_usd"], row["cost_per_accepted_usd"]) == (
        None, None, None)
    assert row["grounds"].startswith("cpu variant: no rental price applies; money cells left "
                                     "empty, never 0")


def test_without_schedule_rows_the_plan_cannot_be_chosen(tmp_path: Path) -> None:
    data = campaign()
    data.tables["Schedule"] = []
    data.row_numbers["Schedule"] = []
    result = refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    assert (row["plan_days"], row["budget_usd"]) == (None, None)
    assert row["grounds"].startswith("the plan cannot be chosen: the Schedule sheet has no "
                                     "phase")
    assert result.decision.chosen is None


def test_settlement_medians_and_hours_point_at_summary_and_schedule(
        done: tuple[WorkbookData, Refreshed]) -> None:
    row = next(r for r in done[0].tables["Settlement"] if r["item"] == "b4-fp32")
    assert (row["median_s"].value, row["campaign_hours"].value) == (15.75, Decimal(96))
    assert "Summary!$" in row["median_s"].text and "Schedule!$" in row["campaign_hours"].text


def test_separation_pairs_each_series_and_one_parameter_changes(
        done: tuple[WorkbookData, Refreshed]) -> None:
    verdicts = {(s.first, s.second): s.verdict for s in done[1].decision.separations}
    assert verdicts[("b4-fp32", "b8-fp32")] == stats.NOT_SEPARATED
    assert verdicts[("b1-fp32", "b4-fp32")] == stats.SEPARATED
    assert verdicts[("b8-fp32", "b8-bf16")] == stats.SEPARATED  # precision only
    assert verdicts[("b8-fp32", "b16-fp32")] == stats.NO_DATA
    assert ("b8-fp32", "b8-cpu") not in verdicts  # device and GPU both change


def test_the_draft_holds_the_suggestions_and_fills_empty_memo_fields(
        done: tuple[WorkbookData, Refreshed]) -> None:
    memo = done[0].forms["Decision"]
    assert memo["chosen_configuration"] == "b8-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)"
    assert memo["remaining_uncertainty"].startswith("b4-fp32 vs b8-fp32: not separated")
    assert memo["draft"].splitlines()[0] == DRAFT_HEADER
    assert ("chosen_configuration: b8-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)"
            in memo["draft"].splitlines())


def test_memo_fields_a_person_typed_survive_and_untouched_ones_follow_the_data(
        tmp_path: Path) -> None:
    data = campaign()
    refresh(data, tmp_path)
    memo = data.forms["Decision"]
    memo["reasons"] = "Finance prefers the RTX 4090 lot we already know."
    memo["reviewed_by"] = "A. Auditor"
    for row in data.tables["Attempts"]:
        if row["variant_id"] == "b8-fp32" and row["status"] == "completed":
            row["corpus_accepted"], row["quality_verdict"] = "no", "fail"
    result = refresh(data, tmp_path)
    assert memo["reasons"] == "Finance prefers the RTX 4090 lot we already know."
    assert memo["reviewed_by"] == "A. Auditor"
    assert result.decision.kept_fields == ["reasons"]
    assert memo["chosen_configuration"] == "b4-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)"
