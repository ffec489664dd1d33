"""R6: batch is the only variable of series 1; a later series names its base variant and
differs from it in declared columns only; the report compares only such pairs, saying what
differs (seed 000: "이 첫 번째 시리즈에서 유일한 변수는 배치입니다")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.builders import filled, variant
from tests.support.report_campaign import campaign
from toolkit.errors import ProtocolError
from toolkit.evidence import locking
from toolkit.evidence.validate import validate
from toolkit.report import stats
from toolkit.report.refresh import refresh
from toolkit.workbook.model import WorkbookData


def _series_findings(data: WorkbookData) -> dict[tuple[int | None, str, str], str]:
    checks = ("series-1", "base-variant", "undeclared-change", "declared-change", "changes")
    return {
        (f.row, f.column, f.check): f.message
        for f in validate(data)
        if f.sheet == "Variants" and f.check in checks
    }


def _later(data: WorkbookData, **overrides: object) -> WorkbookData:
    """``data`` with b8-bf16: series 2, batch 8 in bf16, declared against b8-fp32."""
    row = variant(
        "b8-bf16", 8, series=2, precision="bf16", base_variant="b8-fp32", changes="precision"
    )
    row.update(overrides)
    data.append("Variants", row)
    return data


def test_a_series_1_variant_with_another_precision_is_a_finding_naming_the_value() -> None:
    data = filled()
    data.tables["Variants"][2]["precision"] = "bf16"  # b8-fp32, Excel row 4
    assert _series_findings(data) == {
        (4, "precision", "series-1"): (
            "series 1 varies batch_size only: b8-fp32 has precision 'bf16' where series 1 "
            "has 'fp32'; set 'fp32', or move b8-fp32 to a later series that names its "
            "base_variant and changes"
        )
    }


def test_each_confounding_cell_of_series_1_is_its_own_finding() -> None:
    data = filled()
    data.tables["Variants"][1].update(model_path="other-model", padding="max_length")
    assert set(_series_findings(data)) == {
        (3, "model_path", "series-1"),
        (3, "padding", "series-1"),
    }


def test_series_1_variants_differing_in_batch_only_validate_clean() -> None:
    assert _series_findings(filled()) == {}


def test_lock_refuses_a_confounded_series_1() -> None:
    data = filled()
    data.tables["Variants"][0]["max_length"] = 128
    with pytest.raises(ProtocolError, match="b1-fp32 has max_length 128 where series 1 has 256"):
        locking.lock(data)


def test_a_later_series_variant_must_name_its_base() -> None:
    data = _later(filled(), base_variant=None, changes=None)
    assert _series_findings(data) == {
        (5, "base_variant", "base-variant"): (
            "b8-bf16 is in series 2: name in base_variant the variant it changes, and list in "
            "changes the columns it changes"
        )
    }


def test_a_base_that_is_not_declared_is_a_finding() -> None:
    data = _later(filled(), base_variant="b8-fp16")
    assert _series_findings(data) == {
        (5, "base_variant", "base-variant"): (
            "base_variant 'b8-fp16' is not declared in Variants: name the variant_id that "
            "b8-bf16 changes"
        )
    }


def test_an_undeclared_difference_from_the_base_is_a_finding_on_its_cell() -> None:
    data = _later(filled(), padding="max_length")
    assert _series_findings(data) == {
        (5, "padding", "undeclared-change"): (
            "b8-bf16 differs from its base b8-fp32 in padding ('dynamic' -> 'max_length') "
            "without declaring it in changes: add padding to changes, or set it back to "
            "'dynamic' (every other choice pinned)"
        )
    }


def test_a_declared_change_that_does_not_differ_is_a_finding() -> None:
    data = _later(filled(), changes="precision, compile")
    assert _series_findings(data) == {
        (5, "changes", "declared-change"): (
            "b8-bf16 declares compile in changes but has the same compile as its base b8-fp32 "
            "('no'): remove it from changes, or change it"
        )
    }


def test_changes_naming_a_column_that_does_not_define_the_work_is_a_finding() -> None:
    data = _later(filled(), changes="precision, notes")
    found = _series_findings(data)
    assert list(found) == [(5, "changes", "changes")]
    assert found[(5, "changes", "changes")].startswith(
        "changes names 'notes', which is not a column that defines the work: use "
    )


def test_a_declared_later_series_validates_and_locks() -> None:
    data = _later(filled())
    assert _series_findings(data) == {}
    assert locking.lock(data)


def test_an_older_layout_without_the_column_is_not_asked_for_a_base() -> None:
    """Layout 1 had no base_variant: its workbooks (evidence already recorded) still read
    clean; the report then compares only variants one column apart."""
    data = _later(filled(), base_variant=None, changes=None)
    data.layout_version = 1
    assert _series_findings(data) == {}


def test_a_lock_made_before_the_column_existed_still_validates_after_the_upgrade() -> None:
    """Saving a layout-1 workbook writes layout 2; its lock, made without base_variant, stays
    valid: the rule asks for a base only of variants not yet locked without one."""
    data = _later(filled(), base_variant=None, changes=None)
    data.layout_version = 1
    locking.lock(data)
    data.layout_version = 2  # as after the first save in the current layout
    assert _series_findings(data) == {}
    data.append("Variants", variant("b8-int8", 8, series=2, quantization="dynamic-int8"))
    assert (6, "base_variant", "base-variant") in _series_findings(data)


# ------------------------------------------------------------------ the report's pairs


def _verdicts(data: WorkbookData, tmp_path: Path) -> dict[tuple[str, str], stats.Separation]:
    return {(s.first, s.second): s for s in refresh(data, tmp_path).decision.separations}


def test_a_confounded_series_1_pair_gets_no_separation_verdict(tmp_path: Path) -> None:
    data = campaign()
    data.tables["Variants"][1]["precision"] = "bf16"  # b4-fp32, edited after the lock
    pairs = _verdicts(data, tmp_path)
    s = pairs[("b1-fp32", "b4-fp32")]
    assert (s.verdict, s.reason) == (
        stats.NOT_COMPARABLE,
        ("precision fp32 -> bf16, batch_size 1 -> 4: series 1 varies batch_size only"),
    )
    assert pairs[("b1-fp32", "b8-fp32")].verdict == stats.SEPARATED


def test_each_separation_says_what_differs(tmp_path: Path) -> None:
    pairs = _verdicts(campaign(), tmp_path)
    assert (
        pairs[("b8-fp32", "b8-bf16")]
        .sentence()
        .startswith(
            "b8-fp32 vs b8-bf16: separated (precision fp32 -> bf16; ranges apart, b8-bf16 faster"
        )
    )
    assert pairs[("b4-fp32", "b8-fp32")].reason.startswith("batch_size 4 -> 8; ranges overlap")
    assert pairs[("b8-fp32", "b8-cpu")].reason.startswith(
        "device cuda -> cpu, gpu_slug rtx-4090 -> blank; "
    )  # both declared in changes


def test_variants_changing_different_columns_of_one_base_are_not_compared(tmp_path: Path) -> None:
    """b8-b200 changes the GPU, b8-bf16 the precision: two variables at once."""
    pairs = _verdicts(campaign(), tmp_path)
    assert ("b8-b200", "b8-bf16") not in pairs
    assert ("b8-fp32", "b8-b200") in pairs and ("b8-fp32", "b8-bf16") in pairs


def test_a_base_pair_with_an_undeclared_difference_is_not_comparable(tmp_path: Path) -> None:
    data = campaign()
    bf16 = next(v for v in data.tables["Variants"] if v["variant_id"] == "b8-bf16")
    bf16["max_length"] = 128  # edited after the lock, not declared
    s = _verdicts(data, tmp_path)[("b8-fp32", "b8-bf16")]
    assert (s.verdict, s.reason) == (
        stats.NOT_COMPARABLE,
        (
            "precision fp32 -> bf16, max_length 256 -> 128: b8-bf16 differs from its base "
            "b8-fp32 in max_length, not declared in its changes"
        ),
    )


def test_a_blank_input_pipeline_is_the_sequential_one_in_series_1() -> None:
    data = filled()
    data.tables["Variants"][1]["input_pipeline"] = "sequential"
    assert _series_findings(data) == {}


def test_an_undeclared_input_pipeline_change_is_a_finding_on_its_cell() -> None:
    data = _later(filled(), input_pipeline="overlapped")
    assert _series_findings(data) == {
        (5, "input_pipeline", "undeclared-change"): (
            "b8-bf16 differs from its base b8-fp32 in input_pipeline ('sequential' -> "
            "'overlapped') without declaring it in changes: add input_pipeline to changes, or "
            "set it back to 'sequential' (every other choice pinned)"
        )
    }
    data = _later(filled(), input_pipeline="overlapped", changes="precision, input_pipeline")
    assert _series_findings(data) == {}
