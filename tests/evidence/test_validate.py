"""Each validation rule, shown by a workbook that breaks it and the finding it produces."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.builders import attempt, filled, locked_with, variant
from toolkit.evidence.validate import validate
from toolkit.findings import Finding
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData


def findings_of(data: WorkbookData, sheet: str | None = None) -> list[tuple]:
    return [
        (f.sheet, f.row, f.column, f.check)
        for f in validate(data)
        if sheet is None or f.sheet == sheet
    ]


def test_a_filled_locked_workbook_with_a_good_attempt_is_valid() -> None:
    """The reference case: no findings at all."""
    assert validate(locked_with(attempt())) == []


def test_blank_required_protocol_field_is_named_by_row() -> None:
    """A blank Protocol field is reported at its row in column A's list."""
    data = filled()
    data.forms["Protocol"]["metric"] = None
    assert ("Protocol", 6, "metric", "required") in findings_of(data)


def test_wrong_cell_types_are_reported_with_what_was_expected() -> None:
    """Text in an integer column and a ratio above 1 are both found, lazily."""
    data = filled()
    data.forms["Protocol"]["repetitions"] = "five"
    data.forms["Protocol"]["threshold"] = 65
    found = {(f.column, f.check): f.message for f in validate(data)}
    assert found[("repetitions", "int")] == "repetitions must be a whole number; found 'five'"
    assert found[("threshold", "ratio")] == ("threshold must be a ratio between 0 and 1; found 65")


def test_value_outside_a_dropdown_is_a_choice_finding() -> None:
    data = filled()
    data.tables["Variants"][1]["precision"] = "fp64"
    assert ("Variants", 3, "precision", "choice") in findings_of(data)


def test_datetime_without_offset_is_refused() -> None:
    """Time zones stay explicit: a naive deadline is a finding."""
    data = filled()
    data.forms["Protocol"]["deadline"] = "2026-12-11T09:00"
    assert ("Protocol", 21, "deadline", "datetime") in findings_of(data)


def test_duplicate_variant_ids_are_found_on_both_rows() -> None:
    data = filled()
    data.append("Variants", variant("b1-fp32", 2))
    assert {
        ("Variants", 2, "variant_id", "unique"),
        ("Variants", 5, "variant_id", "unique"),
    } <= set(findings_of(data))


def test_reference_variant_must_be_declared() -> None:
    data = filled()
    data.forms["Protocol"]["reference_variant"] = "b16-fp32"
    assert ("Protocol", 9, "reference_variant", "exists") in findings_of(data)


def test_no_declared_variant_is_a_finding() -> None:
    data = WorkbookData.empty()
    assert ("Variants", None, "variant_id", "required") in findings_of(data)


def test_duplicate_attempt_ids() -> None:
    data = locked_with(attempt("a1"), attempt("a1", repetition=2))
    assert ("Attempts", 2, "attempt_id", "unique") in findings_of(data)


def test_attempt_of_an_unknown_variant() -> None:
    data = locked_with(attempt(variant_id="b16-fp32"))
    assert ("Attempts", 2, "variant_id", "exists") in findings_of(data)


def test_zero_seconds_standing_for_not_measured_is_an_error() -> None:
    """0 s is never 'not measured': the cell must be empty with its reason (R12)."""
    data = locked_with(attempt(load_s=0))
    found = {f.check: f.message for f in validate(data) if f.column == "load_s"}
    assert found == {
        "zero": "load_s is 0, which would stand for 'not measured': leave it "
        "empty and say why in load_s_reason"
    }


def test_zero_bytes_standing_for_no_gpu_is_an_error() -> None:
    data = locked_with(attempt(mem_allocated_peak_bytes=0, mem_allocated_peak_bytes_reason=None))
    assert ("Attempts", 2, "mem_allocated_peak_bytes", "zero") in findings_of(data)


def test_negative_duration_is_a_type_finding() -> None:
    data = locked_with(attempt(measured_s=-3.0))
    assert ("Attempts", 2, "measured_s", "seconds") in findings_of(data)


def test_empty_measurement_without_reason() -> None:
    data = locked_with(attempt(device_s_reason=None))
    assert ("Attempts", 2, "device_s", "missing-reason") in findings_of(data)


def test_value_and_reason_together() -> None:
    data = locked_with(attempt(load_s_reason="not measured"))
    assert ("Attempts", 2, "load_s_reason", "value-and-reason") in findings_of(data)


def test_completed_attempt_needs_its_measured_duration() -> None:
    data = locked_with(attempt(measured_s=None, measured_s_reason="lost"))
    assert ("Attempts", 2, "measured_s", "completed-measured") in findings_of(data)


@pytest.mark.parametrize(
    "overrides, why",
    [
        ({"status": "failed"}, "status is 'failed'"),
        ({"ids_match": "no"}, "ids do not match"),
        ({"quality_verdict": "fail"}, "quality verdict is 'fail'"),
    ],
)
def test_corpus_accepted_only_when_completed_matching_and_passing(
    overrides: dict, why: str
) -> None:
    data = locked_with(attempt(**overrides))
    messages = [f.message for f in validate(data) if f.check == "accepted-rule"]
    assert len(messages) == 1 and why in messages[0]


def test_exclusion_needs_its_reason() -> None:
    data = locked_with(attempt(excluded="yes"))
    assert ("Attempts", 2, "exclusion_reason", "exclusion-reason") in findings_of(data)


def test_attempts_without_a_lock_are_a_finding() -> None:
    data = filled()
    data.append("Attempts", attempt())
    assert ("Attempts", None, "", "locked") in findings_of(data)


def test_yes_no_text_is_not_read_as_a_boolean(tmp_path: Path) -> None:
    """'no' stays 'no' through a save and a read (the pandas astype(bool) trap)."""
    data = locked_with(attempt(corpus_accepted="no", quality_verdict="fail"))
    store.save(data, tmp_path / "w.xlsx")
    back = store.read(tmp_path / "w.xlsx")
    assert back.tables["Attempts"][0]["corpus_accepted"] == "no"
    assert back.tables["Attempts"][0]["expected_ids"] == 1000
    assert validate(back) == []


def test_text_na_and_none_survive_as_text(tmp_path: Path) -> None:
    """'NA' or 'None' typed in a cell is text, not a blank (pandas' default NA list)."""
    data = filled()
    data.forms["Protocol"]["seeds"] = "NA"
    data.tables["Variants"][0]["notes"] = "None"
    store.save(data, tmp_path / "w.xlsx")
    back = store.read(tmp_path / "w.xlsx")
    assert back.forms["Protocol"]["seeds"] == "NA"
    assert back.tables["Variants"][0]["notes"] == "None"


def test_tariff_duplicates_and_zero_prices() -> None:
    data = filled()
    row = {
        "catalog_date": "2026-09-24",
        "gpu_slug": "rtx-4090",
        "gpu_name": "RTX 4090",
        "cards_per_lot": 1,
        "plan_days": 7,
        "price_per_lot_usd": 110,
    }
    data.append("Tariffs", row)
    data.append("Tariffs", dict(row, price_per_lot_usd=0))
    found = findings_of(data, "Tariffs")
    assert ("Tariffs", 3, "plan_days", "unique") in found
    assert ("Tariffs", 3, "price_per_lot_usd", "zero") in found


def test_schedule_phase_ending_before_it_starts() -> None:
    data = filled()
    data.append(
        "Schedule",
        {"phase": "install", "start": "2026-12-07T09:00+01:00", "end": "2026-12-07T08:00+01:00"},
    )
    assert ("Schedule", 2, "end", "order") in findings_of(data)


def test_findings_are_plain_records() -> None:
    f = Finding("Attempts", 4, "load_s", "zero", "m")
    assert f.location() == "Attempts!4 load_s"
    assert f.as_dict() == {
        "sheet": "Attempts",
        "row": 4,
        "column": "load_s",
        "check": "zero",
        "message": "m",
    }


def test_a_tariff_for_a_plan_that_does_not_exist_is_a_finding() -> None:
    """Lots are rented for 3, 7 or 30 days: a 14-day row could never be priced."""
    data = filled()
    row = {
        "catalog_date": "2026-09-24",
        "gpu_slug": "rtx-4090",
        "gpu_name": "RTX 4090",
        "cards_per_lot": 0,
        "plan_days": 14,
        "price_per_lot_usd": 110,
    }
    data.append("Tariffs", row)
    found = {f.column: f for f in validate(data) if f.sheet == "Tariffs"}
    assert found["plan_days"].message == (
        "plan_days must be one of the flat-rate plans 3, 7, 30 (days); found 14: correct it "
        "or remove the row"
    )
    assert found["cards_per_lot"].check == "positive"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "bucket-0",
            "b4-fp32: padding 'bucket-0': the bucket size after 'bucket-' must be a whole "
            "number >= 1: type dynamic, max_length or bucket-N (N a whole number of tokens, "
            "e.g. bucket-32), with N at most the row's max_length",
        ),
        (
            "bucket-512",
            "b4-fp32: padding bucket-512 is wider than max_length 256: every batch would be "
            "padded to max_length: type dynamic, max_length or bucket-N (N a whole number of "
            "tokens, e.g. bucket-32), with N at most the row's max_length",
        ),
        (
            "longest",
            "b4-fp32: padding 'longest' is not a padding policy: type dynamic, max_length or "
            "bucket-N (N a whole number of tokens, e.g. bucket-32), with N at most the row's "
            "max_length",
        ),
    ],
)
def test_a_bad_padding_is_refused_naming_what_to_type(value: str, message: str) -> None:
    data = filled()
    for row in data.tables["Variants"]:
        row["padding"] = value  # the whole series: its padding is the only problem
    found = [f for f in validate(data) if f.sheet == "Variants"]
    assert [(f.row, f.column, f.check) for f in found] == [
        (excel, "padding", "padding") for excel in (2, 3, 4)
    ]
    assert found[1].message == message


def test_any_whole_bucket_up_to_max_length_is_accepted_beside_the_dropdown() -> None:
    data = filled()
    for row in data.tables["Variants"]:
        row["padding"] = "bucket-48"
    assert [f for f in validate(data) if f.sheet == "Variants"] == []


def test_an_overlapped_pipeline_outside_torch_classification_is_a_finding() -> None:
    data = filled()
    for row in data.tables["Variants"]:  # the whole series: no series-1 finding
        row.update(input_pipeline="overlapped", engine="onnxruntime")
    found = [f for f in validate(data) if f.column == "input_pipeline"]
    assert [(f.row, f.check) for f in found] == [(n, "input-pipeline") for n in (2, 3, 4)]
    assert found[2].message == (
        "b8-fp32: the overlapped input pipeline is the torch engine's for the classification "
        "task; this row runs onnxruntime for classification: type sequential or leave it blank"
    )
    data.tables["Variants"][2]["input_pipeline"] = "pipelined"
    assert ("Variants", 4, "input_pipeline", "choice") in findings_of(data)


def test_an_overlapped_pipeline_of_the_torch_engine_is_valid() -> None:
    data = filled()
    for row in data.tables["Variants"]:
        row["input_pipeline"] = "overlapped"
    assert [f for f in validate(data) if f.sheet == "Variants"] == []


def test_validate_refuses_a_bad_bucket_from_the_command_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from toolkit.cli import cli

    data = filled()
    data.tables["Variants"][0]["padding"] = "bucket-x"
    path = tmp_path / "w.xlsx"
    store.save(data, path)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 1
    assert "Variants" in result.output and "padding" in result.output
    assert "bucket-N (N a whole number of tokens" in result.output
