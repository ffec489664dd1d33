"""Equal quality (R16), Settlement (R21-R23) and the decision memo, from constructed tables."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.report_campaign import CORPUS_SHA, METERED_RENTAL, campaign, manifest
from toolkit.report import charts, stats
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
    done: tuple[WorkbookData, Refreshed],
) -> None:
    data, result = done
    bf16 = next(r for r in data.tables["Summary"] if r["variant_id"] == "b8-bf16")
    assert (bf16["quality_verdict"], bf16["equal_quality"]) == ("fail", "no")
    assert bf16["notes"] == "outside the equal-quality comparison: quality verdict fail"
    assert _value(bf16["median_s"]) == 8.2  # shown, though the fastest
    bf16_cost = _settlement(data)["b8-bf16"]["projected_cost_per_expected_usd"]
    assert bf16_cost == ""  # no cost to compare; its grounds say why
    row = next(r for r in data.tables["Settlement"] if r["item"] == "b8-bf16")
    excel = 2 + data.tables["Settlement"].index(row)
    last = 1 + len(data.tables["Summary"])
    # Found by variant_id, never by the Summary's row: a sort of either sheet changes nothing.
    assert row["projected_cost_per_expected_usd"].text.startswith(
        f'IF(INDEX(Summary!$V$2:$V${last},MATCH($A{excel},Summary!$A$2:$A${last},0))="yes",'
    )
    bf16 = next(c for c in result.costs if c.stats.variant_id == "b8-bf16")
    assert bf16.cost_text == "empty: outside the equal-quality comparison"
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
        "0.6000; metric 0.5000 more than 0.0100 below the reference b1-fp32 (0.8421)"
    )
    assert (data.forms["Protocol"]["threshold"], data.forms["Protocol"]["tolerance"]) == (0.6, 0.01)


def test_five_accepted_repetitions_of_one_corpus_count_as_one_accepted_corpus(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    row = _settlement(done[0])["b1-fp32"]
    assert (
        row["part"],
        row["plan_days"],
        row["lots"],
        row["budget_usd"],
        row["accepted_corpora"],
        row["projected_corpora"],
        row["projected_cost_per_expected_usd"],
        row["cost_per_accepted_usd"],
    ) == ("decision", 7, 1, Decimal("110.00"), 1, 1, Decimal("110.00"), None)
    assert "the runner accepted 1 distinct corpus(es)" in row["grounds"]


def test_the_forecast_divides_by_expected_outputs_and_the_spent_total_by_confirmed_corpora(
    tmp_path: Path,
) -> None:
    # Seed 000: a capacity forecast does not replace accepted results, and a plan for 20
    # expected corpora over 1 confirmed corpus is neither figure. Two figures, never blended.
    data = campaign(expected_outputs=20)
    result = refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    assert (row["projected_corpora"], row["accepted_corpora"], row["budget_usd"]) == (
        20,
        1,
        Decimal("110.00"),
    )
    assert row["cost_per_accepted_usd"] is None  # no blend of a forecast with a count
    assert row["projected_cost_per_expected_usd"] == Decimal("110.00") / 20
    formula = data.tables["Settlement"][0]["projected_cost_per_expected_usd"].text
    assert formula.endswith('IF(ISNUMBER(J2),J2/X2,""),"")')  # budget / projected_corpora
    total = _settlement(data)["total incurred (USD)"]
    assert (total["amount"], total["spent_per_accepted"]) == (
        Decimal("2181.00"),
        Decimal("2181.00"),
    )
    assert total["grounds"].endswith(
        "spent per accepted corpus: 2,181.00 USD incurred / 1 "
        "accepted corpus(es) confirmed = 2,181.00 USD"
    )
    b8 = next(c for c in result.costs if c.stats.variant_id == "b8-fp32")
    assert b8.cost_text == "5.50 USD per expected corpus (forecast)"
    assert (
        "5.50 USD per expected corpus (forecast): its 110.00 USD budget over 20 expected "
        "corpus(es), a forecast; 1 distinct corpus(es) accepted and confirmed so far"
    ) in result.decision.suggestions["reasons"]
    for n in (2, 3):  # b1-fp32's repetitions 1 and 3 ran on two more corpora
        data.append(
            "Manifest",
            {**manifest("b1-fp32"), "manifest_id": f"m-b1-corpus{n}", "corpus_sha256": f"{n}" * 64},
        )
    data.tables["Attempts"][0]["manifest_id"] = "m-b1-corpus2"
    data.tables["Attempts"][3]["manifest_id"] = "m-b1-corpus3"
    confirmed = next(r for r in data.tables["Verification"] if r["variant_id"] == "b1-fp32")
    confirmed["confirmed_corpora"] = 3  # all three, checked and confirmed
    result = refresh(data, tmp_path)
    assert (
        _settlement(data)["b1-fp32"]["projected_cost_per_expected_usd"] == Decimal("110.00") / 20
    )  # the forecast does not move with the count
    # The campaign accepted three distinct corpora: the most any configuration confirmed.
    assert _settlement(data)["total incurred (USD)"]["spent_per_accepted"] == Decimal("2181.00") / 3
    assert (
        "the configurations have different confirmed corpora (b1-fp32 3, b8-fp32 1, "
        "b8-b200 1): compare configurations that processed the same corpora"
    ) in result.decision.suggestions["reasons"]


def test_a_confirmation_above_the_runners_count_is_not_counted(tmp_path: Path) -> None:
    data = campaign()
    confirmed = next(r for r in data.tables["Verification"] if r["variant_id"] == "b1-fp32")
    confirmed["confirmed_corpora"] = 5  # the runner accepted one distinct corpus
    refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    assert row["accepted_corpora"] == ""
    assert (
        "accepted corpora not counted: 5 confirmed, but the runner accepted 1 distinct "
        "corpus(es); correct confirmed_corpora"
    ) in row["grounds"]
    formula = data.tables["Settlement"][0]["accepted_corpora"].text
    count = "INDEX(Verification!$C$2:$C$1008,MATCH($A2,Verification!$A$2:$A$1008,0))"
    assert formula.endswith(f'IF({count}<=1,{count},""),""),"")')


def test_two_distinct_validated_corpora_count_twice(tmp_path: Path) -> None:
    data = campaign()
    other = "feed" + "0" * 60
    data.append(
        "Manifest", {**manifest("b1-fp32"), "manifest_id": "m-b1-second", "corpus_sha256": other}
    )
    data.tables["Attempts"][0]["manifest_id"] = "m-b1-second"  # b1-fp32, repetition 1
    result = refresh(data, tmp_path)
    b1 = next(c for c in result.costs if c.stats.variant_id == "b1-fp32")
    assert b1.runner_accepted == 2
    assert "the runner accepted 2 distinct corpus(es)" in _settlement(data)["b1-fp32"]["grounds"]
    assert CORPUS_SHA != other


def test_accepted_corpora_enter_the_cost_only_once_the_user_confirmed_them(tmp_path: Path) -> None:
    data = campaign()
    data.tables["Verification"] = [
        r for r in data.tables["Verification"] if r["variant_id"] != "b1-fp32"
    ]
    data.tables["Verification"][0]["verified"] = "no"  # b4-fp32
    refresh(data, tmp_path)
    rows = _settlement(data)
    b1, b4 = rows["b1-fp32"], rows["b4-fp32"]
    assert (b1["budget_usd"], b1["accepted_corpora"], b1["cost_per_accepted_usd"]) == (
        Decimal("110.00"),
        None,
        None,
    )
    assert (
        "accepted corpora not confirmed: record your own check of the outputs in the "
        "Verification sheet" in b1["grounds"]
    )
    assert b4["accepted_corpora"] == ""
    assert "not confirmed: Verification says verified no" in b4["grounds"]


def test_no_accepted_corpus_makes_the_cost_undefined_and_the_money_spent_stays(
    tmp_path: Path,
) -> None:
    data = campaign()
    confirmed = next(r for r in data.tables["Verification"] if r["variant_id"] == "b1-fp32")
    confirmed["confirmed_corpora"] = 0
    refresh(data, tmp_path)
    rows = _settlement(data)
    for other in data.tables["Verification"]:
        other["confirmed_corpora"] = 0
    refresh(data, tmp_path)
    rows = _settlement(data)
    assert (rows["b1-fp32"]["budget_usd"], rows["b1-fp32"]["accepted_corpora"]) == (
        Decimal("110.00"),
        0,
    )
    total = rows["total incurred (USD)"]
    assert (total["amount"], total["spent_per_accepted"]) == (Decimal("2181.00"), "undefined")
    b16 = rows["b16-fp32"]  # out of memory every time: nothing to project
    assert (b16["budget_usd"], b16["cost_per_accepted_usd"]) == (None, None)
    assert b16["grounds"].startswith("no successful run yet: nothing to project")
    assert "b16-fp32" in rows["r-4090"]["variants"]  # its rental is counted, once


def test_variants_sharing_a_rental_are_counted_once_in_the_incurred_total(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    data, _ = done
    data_rows = data.tables["Settlement"]
    rows = _settlement(data)
    rental = rows["r-4090"]
    assert (
        rental["kind"],
        rental["part"],
        rental["lots"],
        rental["cards"],
        rental["price_per_lot"],
        rental["amount"],
        rental["currency"],
    ) == ("rental", "incurred", 1, 1, Decimal("110.00"), Decimal("110.00"), "USD")
    assert rental["price_per_lot_usd"] is None  # the decision part's column
    assert rental["variants"] == "b1-fp32, b4-fp32, b8-fp32, b8-bf16, b16-fp32"
    b200 = rows["r-b200"]
    assert (b200["cards_per_lot"], b200["cards"], b200["amount"]) == (2, 2, Decimal("2071.00"))
    total = rows["total incurred (USD)"]
    assert total["amount"] == Decimal("2181.00")  # not 5 x 110 + 2,071 = 2,621
    assert [r["kind"] for r in data_rows] == ["configuration"] * 7 + [
        "rental",
        "rental",
        "total incurred",
    ]


def test_other_costs_join_the_incurred_total_with_their_currency(tmp_path: Path) -> None:
    data = campaign()
    data.append(
        "Settlement",
        {
            "item": "object storage",
            "kind": "other cost",
            "amount": 12.5,
            "currency": "USD",
            "grounds": "predictions archive, invoice S-42",
        },
    )
    data.append(
        "Settlement",
        {
            "item": "set-up labour",
            "kind": "other cost",
            "amount": 300,
            "currency": "EUR",
            "grounds": "half a day, contract 7",
        },
    )
    refresh(data, tmp_path)
    rows = _settlement(data)
    assert rows["total incurred (USD)"]["amount"] == Decimal("2193.50")
    assert rows["total incurred (EUR)"]["amount"] == Decimal("300")
    assert rows["object storage"]["grounds"] == "predictions archive, invoice S-42"


def test_a_rental_typed_amount_wins_and_a_metered_one_without_it_makes_the_total_incomplete(
    tmp_path: Path,
) -> None:
    data = campaign()
    data.tables["Rentals"][0]["amount"] = 104.5  # a discount on the invoice
    data.append("Rentals", dict(METERED_RENTAL))
    refresh(data, tmp_path)
    rows = _settlement(data)
    assert rows["r-4090"]["amount"] == Decimal("104.5")
    assert "Rentals!$" in data.tables["Settlement"][7]["amount"].text
    assert rows["r-h100"]["amount"] is None
    assert (
        "hourly billing: give start and end with their UTC offsets to price it from Tariffs, "
        "or type the metered amount" in rows["r-h100"]["grounds"]
    )
    assert "no variant names this rental" in rows["r-h100"]["grounds"]
    total = rows["total incurred (USD)"]
    assert total["amount"] == "incomplete"
    assert "no amount yet for r-h100" in total["grounds"]


def test_a_b200_lot_is_priced_per_lot_never_per_card(done: tuple[WorkbookData, Refreshed]) -> None:
    row = _settlement(done[0])["b8-b200"]
    assert (row["cards_per_lot"], row["lots"], row["budget_usd"]) == (2, 1, Decimal("2071.00"))


def test_lots_grow_when_one_lot_cannot_finish_before_the_deadline(tmp_path: Path) -> None:
    data = campaign(expected_outputs=20_000)  # x ~45 s a corpus = 250 h
    refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    # 96 h from the window's start to the deadline: 3 lots of 6,667 corpora x 45.1 s = 83.5 h.
    assert (row["lots"], row["plan_days"], row["budget_usd"]) == (3, 7, Decimal("330.00"))
    assert row["deadline_check"].startswith("in time: 83.52 h of production per lot")
    assert row["projected_hours"] == Decimal(6667) * Decimal("45.1") / 3600


def test_a_configuration_that_cannot_finish_before_the_deadline_says_so(tmp_path: Path) -> None:
    data = campaign(expected_outputs=200_000)
    refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    assert row["deadline_check"].startswith("cannot finish before the deadline")


def test_a_cpu_variant_has_no_rental_price_and_empty_money_cells(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    row = _settlement(done[0])["b8-cpu"]
    assert (row["price_per_lot_usd"], row["budget_usd"], row["cost_per_accepted_usd"]) == (
        None,
        None,
        None,
    )
    assert row["grounds"].startswith(
        "cpu variant: no rental price applies; money cells left empty, never 0"
    )


def test_without_schedule_rows_the_plan_cannot_be_chosen(tmp_path: Path) -> None:
    data = campaign()
    data.tables["Schedule"] = []
    data.row_numbers["Schedule"] = []
    result = refresh(data, tmp_path)
    row = _settlement(data)["b1-fp32"]
    assert (row["plan_days"], row["budget_usd"]) == (None, None)
    assert row["grounds"].startswith("the plan cannot be chosen: the Schedule sheet has no phase")
    assert result.decision.chosen is None


def test_settlement_medians_and_hours_point_at_summary_and_schedule(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    row = next(r for r in done[0].tables["Settlement"] if r["item"] == "b4-fp32")
    assert (row["median_s"].value, row["campaign_hours"].value) == (15.75, Decimal(96))
    assert "Summary!$" in row["median_s"].text and "Schedule!$" in row["campaign_hours"].text


def test_separation_pairs_series_1_and_each_declared_change(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    verdicts = {(s.first, s.second): s.verdict for s in done[1].decision.separations}
    assert verdicts[("b4-fp32", "b8-fp32")] == stats.NOT_SEPARATED
    assert verdicts[("b1-fp32", "b4-fp32")] == stats.SEPARATED
    assert verdicts[("b8-fp32", "b8-bf16")] == stats.SEPARATED  # precision only
    assert verdicts[("b8-fp32", "b16-fp32")] == stats.NO_DATA
    assert verdicts[("b8-fp32", "b8-cpu")] == stats.SEPARATED  # device and GPU, declared
    assert ("b8-b200", "b8-bf16") not in verdicts  # GPU and precision: two variables


def test_the_draft_holds_the_suggestions_and_fills_empty_memo_fields(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    memo = done[0].forms["Decision"]
    assert memo["chosen_configuration"] == "b8-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)"
    # b4-fp32 vs b8-fp32 is not separated, but b4-fp32 ran out of memory once: not feasible.
    assert memo["remaining_uncertainty"] == (
        "the series separates every pair of equal-quality variants, and no cost difference is "
        "within the measurement noise"
    )
    assert memo["draft"].splitlines()[0] == DRAFT_HEADER
    assert (
        "chosen_configuration: b8-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)"
        in memo["draft"].splitlines()
    )


def test_memo_fields_a_person_typed_survive_and_untouched_ones_follow_the_data(
    tmp_path: Path,
) -> None:
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
    # b4-fp32 ran out of memory once (R18): b1-fp32 is next.
    assert memo["chosen_configuration"] == "b1-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)"


def test_the_memo_states_the_incurred_total_and_the_ledger_status(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    data, result = done
    reasons = result.decision.suggestions["reasons"]
    assert reasons.endswith(
        "; money spent: 2,181.00 USD incurred, each rental once; no ledger "
        "imported to check it against"
    )
    assert data.forms["Decision"]["reasons"] == reasons


def test_variants_compared_on_different_software_stacks_say_so(tmp_path: Path) -> None:
    """R4: a B200 box with another torch build; the verdict names the differing fields."""
    data = campaign()
    for m in data.tables["Manifest"]:
        m["torch"] = "2.6.0+cu126" if m["variant_id"] == "b8-b200" else "2.5.1+cu124"
        m["driver"] = "NVIDIA 570.86"
    result = refresh(data, tmp_path)
    [pair] = [
        s for s in result.decision.separations if {s.first, s.second} == {"b8-fp32", "b8-b200"}
    ]
    assert pair.reason.endswith(
        "; ran on different software stacks (torch 2.5.1+cu124 vs "
        "2.6.0+cu126): the verdict is about each whole tested "
        "configuration, not the declared change alone"
    )
    same = [s for s in result.decision.separations if {s.first, s.second} == {"b1-fp32", "b4-fp32"}]
    assert same and "software stacks" not in same[0].reason
    assert "different software stacks" in data.forms["Decision"]["draft"]


def test_the_cost_chart_says_why_a_configuration_has_no_bar(tmp_path: Path) -> None:
    data = campaign()
    data.append(
        "Variants", {**data.tables["Variants"][0], "variant_id": "b2-fp32", "batch_size": 2}
    )
    result = refresh(data, tmp_path)
    labels = {
        c.stats.variant_id: charts.no_bar_label(c)
        for c in result.costs
        if c.forecast_per_expected is None or not c.stats.equal_quality
    }
    assert labels == {
        "b2-fp32": "not run yet",
        "b16-fp32": "no success",
        "b4-fp32": "not feasible",
        "b8-bf16": "outside quality",
        "b8-cpu": "no price",
    }


def test_the_projected_hours_charge_each_corpus_its_cold_pass_beyond_the_median(
    tmp_path: Path,
) -> None:
    """A batch job meets each new corpus cold: the cold pass recorded on repetition 1 adds
    what it took beyond the warm median to every projected corpus; a cold pass faster than
    the median adds nothing."""
    data = campaign(expected_outputs=200)
    cold = {"b8-b200": 13.2, "b4-fp32": 1.0}  # medians 9.2 and 15.75
    for row in data.tables["Attempts"]:
        if row["repetition"] == 1 and row["variant_id"] in cold:
            row["cold_pass_s"] = cold[row["variant_id"]]
    result = refresh(data, tmp_path)
    stats_of = {st.variant_id: st for st in result.stats}
    assert stats_of["b8-b200"].cold == 13.2
    assert stats_of["b8-b200"].cold_surcharge == pytest.approx(13.2 - 9.2)
    assert stats_of["b4-fp32"].cold_surcharge == 0.0
    summary = {r["variant_id"]: r for r in data.tables["Summary"]}
    assert _value(summary["b8-b200"]["cold_pass_s"]) == 13.2
    assert _value(summary["b8-cpu"]["cold_pass_s_reason"]).startswith("no cold pass among")
    row = next(r for r in data.tables["Settlement"] if r["item"] == "b8-b200")
    lots, campaign_s = _value(row["lots"]), stats_of["b8-b200"].campaign
    expected = Decimal(-(-200 // lots)) * Decimal(repr(campaign_s + (13.2 - 9.2))) / 3600
    assert _value(row["projected_hours"]) == expected
    assert "Attempts" not in row["projected_hours"].text  # through the Summary's cells
    assert "MAX(0,IFERROR(INDEX(Summary!" in row["projected_hours"].text
