"""R18 feasibility, R16 a threshold lowered after results, R24 scope: what the quality gate,
the Summary notes, report.md and the Decision draft say (seed 000)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import ROOT, variant
from tests.support.report_campaign import CORPUS_SHA, campaign, campaign_attempt, manifest, write
from toolkit.evidence import audit, chain, locking
from toolkit.evidence.protocol import current_lock
from toolkit.report import decision
from toolkit.report.refresh import Refreshed, refresh
from toolkit.reporting import REPORT_MD, build, default_folder
from toolkit.workbook import store
from toolkit.workbook.model import Formula, WorkbookData

OOM_NOTE = (
    "outside the equal-quality comparison: not feasible: 1 attempt(s) did not "
    "finish the whole corpus: b4-fp32-r3 (failed, 312 of 1000 items); an option must "
    "finish the corpus, long inputs included, before its cost is compared"
)


def _summary(data: WorkbookData) -> dict[str, dict[str, Any]]:
    """Summary rows by variant, each formula read as its computed value."""
    return {
        r["variant_id"]: {k: v.value if isinstance(v, Formula) else v for k, v in r.items()}
        for r in data.tables["Summary"]
    }


@pytest.fixture
def done(tmp_path: Path) -> tuple[WorkbookData, Refreshed]:
    data = campaign()
    return data, refresh(data, tmp_path)


# ------------------------------------------------------------------ R18 feasibility


def test_a_variant_out_of_memory_on_one_run_is_not_feasible_and_never_chosen(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    data, result = done
    b4 = _summary(data)["b4-fp32"]
    assert (b4["quality_verdict"], b4["equal_quality"]) == ("pass", "no")
    assert OOM_NOTE in b4["notes"]
    assert result.decision.chosen is not None
    assert result.decision.chosen.stats.variant_id != "b4-fp32"


def test_the_memo_says_why_an_unfinished_variant_is_kept_out(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    reasons = done[1].decision.suggestions["reasons"]
    assert (
        "b4-fp32 kept out: not feasible: 1 attempt(s) did not finish the whole "
        "corpus: b4-fp32-r3 (failed, 312 of 1000 items)"
    ) in reasons


def test_an_interruption_by_the_user_does_not_make_a_variant_infeasible(
    done: tuple[WorkbookData, Refreshed],
) -> None:
    b1 = _summary(done[0])["b1-fp32"]  # b1-fp32-r2a was interrupted, then ran again
    assert (b1["interrupted"], b1["equal_quality"]) == (1, "yes")


def test_an_excluded_failure_does_not_count_against_feasibility(tmp_path: Path) -> None:
    data = campaign()
    audit.exclude(data, "b4-fp32-r3", "host lost power (provider incident 88)")
    refresh(data, tmp_path)
    assert _summary(data)["b4-fp32"]["equal_quality"] == "yes"


def test_a_failure_measured_before_an_amendment_does_not_count(tmp_path: Path) -> None:
    data = campaign()
    data.forms["Protocol"]["exclusion_rule"] = "a documented external cause, every variant"
    locking.amend(data, "exclusion rule reworded")
    refresh(data, tmp_path)
    assert "not feasible" not in _summary(data)["b4-fp32"]["notes"]


def test_a_completed_resume_variant_covers_the_failures_it_resumes(tmp_path: Path) -> None:
    data = campaign()
    data.append(
        "Variants",
        variant(
            "b4-resume",
            2,
            series=3,
            device="cuda",
            gpu_slug="rtx-4090",
            rental_id="r-4090",
            base_variant="b4-fp32",
            changes="batch_size",
            resume_of="b4-fp32",
        ),
    )
    data.append("Manifest", manifest("b4-resume"))
    data.append("Attempts", campaign_attempt("b4-resume", 1, 20.5))
    refresh(data, tmp_path)
    b4 = _summary(data)["b4-fp32"]
    assert b4["equal_quality"] == "yes"
    assert (
        "feasible with its resume variant b4-resume: its 1 unfinished attempt(s) "
        "are resumed by b4-resume, which finished the whole corpus; choosing b4-fp32 "
        "means running b4-resume after such a failure"
    ) in b4["notes"]


def test_a_resume_variant_that_never_finished_covers_nothing(tmp_path: Path) -> None:
    data = campaign()
    data.append(
        "Variants",
        variant(
            "b4-resume",
            2,
            series=3,
            base_variant="b4-fp32",
            changes="batch_size",
            resume_of="b4-fp32",
        ),
    )
    data.append("Manifest", manifest("b4-resume"))
    data.append("Attempts", campaign_attempt("b4-resume", 1, None))
    refresh(data, tmp_path)
    assert OOM_NOTE in _summary(data)["b4-fp32"]["notes"]


# ------------------------------------------------------------------ R16 a lowered threshold


def _amend_lower(data: WorkbookData) -> None:
    """Threshold 0.6 -> 0.5 and tolerance 0.01 -> 0.4 after the campaign's 36 attempts."""
    data.forms["Protocol"].update(threshold=0.5, tolerance=0.4)
    locking.amend(data, "the business owner accepts 0.5")


def _rerun(data: WorkbookData, corpus: str = CORPUS_SHA) -> None:
    """b1-fp32 and b8-bf16 measured again under the amended protocol, on ``corpus``."""
    sha = current_lock(data).sha256  # type: ignore[union-attr]
    for vid in ("b1-fp32", "b8-bf16"):
        data.append(
            "Manifest", {**manifest(vid), "manifest_id": f"m2-{vid}", "corpus_sha256": corpus}
        )
        for rep in range(1, 6):
            row = campaign_attempt(
                vid,
                rep,
                8.0 + rep / 10,
                attempt_id=f"{vid}-after-r{rep}",
                manifest_id=f"m2-{vid}",
                protocol_sha256=sha,
                quality_verdict="pass",
                corpus_accepted="yes",
            )
            data.append("Attempts", row)
    chain.seal_new_rows(data)


def test_a_threshold_lowered_after_results_does_not_let_a_variant_join_on_the_same_corpus(
    tmp_path: Path,
) -> None:
    data = campaign()
    _amend_lower(data)
    _rerun(data)
    refresh(data, tmp_path)
    bf16 = _summary(data)["b8-bf16"]
    assert bf16["equal_quality"] == "no"
    assert (
        "metric 0.5312 below 0.6000, the threshold in force before it was lowered after "
        "attempts on this corpus"
    ) in bf16["notes"]
    assert (
        "metric 0.5312 more than 0.0100 below the reference b1-fp32 (0.8421): the "
        "tolerance in force before it was widened after attempts on this corpus"
    ) in bf16["notes"]


def test_summary_notes_state_the_lowering_and_that_the_same_corpus_is_no_new_evaluation(
    tmp_path: Path,
) -> None:
    data = campaign()
    _amend_lower(data)
    _rerun(data)
    refresh(data, tmp_path)
    notes = _summary(data)["b1-fp32"]["notes"]
    assert "threshold lowered from 0.6 to 0.5 by the amendment of " in notes
    assert (
        "(the business owner accepts 0.5) after 36 attempt(s) had run: its runs are on "
        f"the corpus measured before ({CORPUS_SHA[:12]}), not the new, independent "
        "evaluation that change requires"
    ) in notes
    assert "tolerance widened from 0.01 to 0.4 by the amendment of " in notes


def test_the_memo_and_report_md_state_the_lowering(tmp_path: Path) -> None:
    data = campaign()
    _amend_lower(data)
    _rerun(data)
    path = tmp_path / "campaign.xlsx"
    store.save(data, path)
    result, _ = build(path, pngs=False)
    uncertainty = result.decision.suggestions["remaining_uncertainty"]
    assert uncertainty.startswith("threshold lowered from 0.6 to 0.5 by the amendment of ")
    assert (
        "runs of b1-fp32, b8-bf16 reuse the corpus measured before, so they are not the "
        "new, independent evaluation that change requires"
    ) in uncertainty
    md = (default_folder(path) / REPORT_MD).read_text(encoding="utf-8")
    assert "threshold lowered from 0.6 to 0.5 by the amendment of " in md
    assert "not the new, independent evaluation that change requires" in md


def test_a_new_corpus_after_the_lowering_is_the_independent_evaluation(tmp_path: Path) -> None:
    data = campaign()
    _amend_lower(data)
    _rerun(data, corpus="feed" + "0" * 60)
    refresh(data, tmp_path)
    bf16 = _summary(data)["b8-bf16"]
    assert bf16["equal_quality"] == "yes"
    assert "independent evaluation" not in bf16["notes"]


def test_a_threshold_raised_or_changed_before_any_attempt_says_nothing(tmp_path: Path) -> None:
    data = campaign()
    data.forms["Protocol"]["threshold"] = 0.62
    locking.amend(data, "raised by the business owner")
    refresh(data, tmp_path)
    assert all("lowered" not in r["notes"] for r in data.tables["Summary"])
    assert "lowered" not in data.forms["Decision"]["remaining_uncertainty"]


# ------------------------------------------------------------------ R24 scope


def test_the_scope_is_stated_in_the_draft_report_md_and_readme(tmp_path: Path) -> None:
    assert "not an MLPerf result or certification" in decision.SCOPE
    assert "a catalog comparison is not an observed saving" in decision.SCOPE
    path = write(tmp_path / "campaign.xlsx")
    build(path, pngs=False)
    assert decision.SCOPE in store.read(path).forms["Decision"]["draft"]
    md = (default_folder(path) / REPORT_MD).read_text(encoding="utf-8")
    assert decision.SCOPE in "\n".join(md.splitlines()[:6])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert decision.SCOPE in " ".join(readme[:3000].split())
