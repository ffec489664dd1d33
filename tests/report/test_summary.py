"""The Summary sheet from constructed attempt tables: counts, raw runs, median/min/max (R14)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.report_campaign import EXCLUSION, campaign, campaign_attempt
from toolkit import layout
from toolkit.report.refresh import refresh
from toolkit.report.summary import NO_DATA
from toolkit.workbook import names, store
from toolkit.workbook.model import Formula, WorkbookData


def _value(cell: Any) -> Any:
    return cell.value if isinstance(cell, Formula) else cell


def _summary(data: WorkbookData) -> dict[str, dict[str, Any]]:
    return {r["variant_id"]: {k: _value(v) for k, v in r.items()} for r in data.tables["Summary"]}


@pytest.fixture
def refreshed(tmp_path: Path) -> WorkbookData:
    data = campaign()
    refresh(data, tmp_path)
    return data


def test_one_summary_row_per_declared_variant_in_declared_order(refreshed: WorkbookData) -> None:
    assert [r["variant_id"] for r in refreshed.tables["Summary"]] == [
        "b1-fp32",
        "b4-fp32",
        "b8-fp32",
        "b8-b200",
        "b8-bf16",
        "b16-fp32",
        "b8-cpu",
    ]


def test_failures_and_interruptions_are_counted_but_stay_out_of_the_median(
    refreshed: WorkbookData,
) -> None:
    b1, b4 = _summary(refreshed)["b1-fp32"], _summary(refreshed)["b4-fp32"]
    assert (b1["attempts"], b1["completed"], b1["interrupted"], b1["successes"]) == (6, 5, 1, 5)
    assert (b1["median_s"], b1["min_s"], b1["max_s"]) == (41.1, 40.8, 41.5)
    assert (b4["attempts"], b4["failed"], b4["successes"]) == (5, 1, 4)
    assert (b4["median_s"], b4["min_s"], b4["max_s"]) == (15.75, 15.3, 16.2)


def test_an_excluded_attempt_is_counted_and_kept_out_of_median_min_and_max(
    refreshed: WorkbookData,
) -> None:
    b8 = _summary(refreshed)["b8-fp32"]
    assert (b8["attempts"], b8["completed"], b8["excluded"], b8["successes"]) == (5, 5, 1, 4)
    assert (b8["median_s"], b8["min_s"], b8["max_s"]) == (15.3, 14.9, 15.8)
    assert b8["run_4_s"] is None
    assert b8["notes"] == (
        '1 excluded under the rule "only a documented external cause, for '
        f'every variant alike" (b8-fp32-r4: {EXCLUSION})'
    )


def test_raw_runs_sit_side_by_side_by_repetition(refreshed: WorkbookData) -> None:
    rows = _summary(refreshed)
    assert [rows["b1-fp32"][f"run_{k}_s"] for k in range(1, 6)] == [41.2, 40.8, 41.5, 40.9, 41.1]
    assert [rows["b4-fp32"][f"run_{k}_s"] for k in range(1, 6)] == [15.3, 15.9, None, 16.2, 15.6]


def test_a_variant_without_a_successful_run_says_no_data_never_zero(
    refreshed: WorkbookData,
) -> None:
    b16 = _summary(refreshed)["b16-fp32"]
    assert (b16["attempts"], b16["failed"], b16["successes"]) == (5, 5, 0)
    assert (b16["median_s"], b16["min_s"], b16["max_s"], b16["throughput_items_s"]) == (
        None,
        None,
        None,
        None,
    )
    assert b16["median_s_reason"] == NO_DATA
    assert b16["mem_allocated_peak_bytes"] is None
    assert _summary(refreshed)["b1-fp32"]["median_s_reason"] is None


def test_throughput_is_corpus_items_over_the_median(refreshed: WorkbookData) -> None:
    assert _summary(refreshed)["b8-b200"]["throughput_items_s"] == 1000 / 9.2


def test_quality_metric_agreement_and_memory_peaks_per_variant(refreshed: WorkbookData) -> None:
    b8 = _summary(refreshed)["b8-fp32"]
    assert (
        b8["quality_verdict"],
        b8["equal_quality"],
        b8["metric_value"],
        b8["reference_agreement"],
    ) == ("pass", "yes", 0.8421, 0.9875)
    assert (b8["mem_allocated_peak_bytes"], b8["mem_reserved_peak_bytes"]) == (
        800_000_000,
        864_000_000,
    )
    # The excluded repetition 4 had the largest host RSS (1,500,000,004): left out.
    assert b8["host_rss_peak_bytes"] == 1_500_000_005


def test_medians_are_live_formulas_over_named_attempts_columns_without_array_entry(
    refreshed: WorkbookData,
) -> None:
    """MEDIAN(IF(...)) as the mean of the middle two LARGE values inside SUMPRODUCT: no
    Ctrl+Shift+Enter needed; the Attempts columns by name, each reaching row 10,001."""
    row = refreshed.tables["Summary"][0]
    median = row["median_s"]
    assert isinstance(median, Formula) and not median.array
    ok = (
        '(Attempts_variant_id=$A2)*(Attempts_status="completed")*(Attempts_ids_match="yes")'
        '*(Attempts_excluded<>"yes")*(Attempts_pre_amendment<>"yes")*(Attempts_measured_s<>"")'
    )
    selected = f"Attempts_measured_s-(1-{ok})*1E+300"
    assert median.text == (
        f'IF(I2=0,"",(SUMPRODUCT(LARGE({selected},INT((I2+1)/2)))'
        f"+SUMPRODUCT(LARGE({selected},I2+1-INT((I2+1)/2))))/2)"
    )
    assert row["successes"].text == f"SUMPRODUCT({ok})"
    assert not any(isinstance(v, Formula) and v.array for v in row.values())
    letter = layout.column_letter(layout.ATTEMPTS, "measured_s")
    assert names.attempts_names(len(refreshed.tables["Attempts"]))["Attempts_measured_s"] == (
        f"=Attempts!${letter}$2:${letter}$10001"
    )


def test_attempts_measured_before_an_amendment_stay_out_of_the_statistics(tmp_path: Path) -> None:
    data = campaign()
    for row in data.tables["Attempts"]:
        if row["attempt_id"] == "b8-b200-r3":
            row["pre_amendment"] = "yes"
    refresh(data, tmp_path)
    b200 = _summary(data)["b8-b200"]
    assert (b200["pre_amendment"], b200["successes"], b200["min_s"]) == (1, 4, 9.1)


def test_an_undeclared_variant_in_attempts_still_gets_a_row(tmp_path: Path) -> None:
    data = campaign()
    data.append("Attempts", campaign_attempt("ghost", 1, 5.0))
    refresh(data, tmp_path)
    assert _summary(data)["ghost"]["median_s"] == 5.0


def test_cached_values_are_what_a_reader_without_recalculation_sees(tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    data = campaign()
    refresh(data, tmp_path)
    store.save(data, path)
    back = {r["variant_id"]: r for r in store.read(path).tables["Summary"]}
    assert (back["b8-fp32"]["median_s"], back["b8-fp32"]["successes"]) == (15.3, 4)
    assert (back["b16-fp32"]["median_s"], back["b16-fp32"]["median_s_reason"]) == (None, NO_DATA)


def test_an_empty_memory_peak_says_why_in_the_notes(refreshed: WorkbookData) -> None:
    cpu = _summary(refreshed)["b8-cpu"]  # its attempts: no CUDA counters, "not measured"
    assert (cpu["mem_allocated_peak_bytes"], cpu["mem_reserved_peak_bytes"]) == (None, None)
    assert cpu["host_rss_peak_bytes"] is not None
    assert cpu["notes"].endswith(
        "mem_allocated_peak_bytes, mem_reserved_peak_bytes empty: not measured"
    )
