"""`--json` prints one versioned document with the text output's numbers, nothing else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.builders import attempts, make_campaign, variant
from toolkit.cli import cli
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    """The report campaign twice: one reported as text, one as JSON."""
    (tmp_path / "text").mkdir()
    (tmp_path / "json").mkdir()
    text = report_campaign.write(tmp_path / "text" / "campaign.xlsx")
    return text, Path(shutil.copy(text, tmp_path / "json" / "campaign.xlsx"))


def test_report_json_holds_the_verdicts_costs_and_findings_the_text_shows(
    twins: tuple[Path, Path],
) -> None:
    text_book, json_book = twins
    code, text, _ = _invoke("report", str(text_book), "--no-png")
    assert code == 0
    code, out, _ = _invoke("report", str(json_book), "--no-png", "--json")
    assert code == 0
    doc = json.loads(out)  # the whole stdout is one document
    assert doc["format"] == "iteralab-report/1"
    assert doc["findings"] == []
    by_id = {v["variant_id"]: v for v in doc["variants"]}
    assert list(by_id) == [str(v["variant_id"]) for v in report_campaign.variants()]
    table = 0
    for line in text.splitlines():
        cells = line.split()
        if len(cells) > 6 and cells[0] in by_id and cells[1].isdigit():  # the table
            v = by_id[cells[0]]
            assert cells[1:6] == [
                str(v[k]) for k in ("attempts", "successes", "failed", "interrupted", "excluded")
            ]
            assert cells[6] == (f"{v['median_s']:.3f}" if v["median_s"] is not None else "no")
            table += 1
    assert table == len(by_id)
    sentences = {
        f"{s['first']} vs {s['second']}: {s['verdict']} ({s['reason']})" for s in doc["separations"]
    }
    assert all(any(line.strip().startswith(s) for line in text.splitlines()) for s in sentences)
    for c in doc["costs"]:
        assert (c["projected_cost_per_expected"] is None) != (
            c["projected_cost_per_expected_reason"] is None
        )
        if c["budget"] is not None:
            assert c["budget"].endswith(" USD")


def test_report_json_gives_each_incurred_total_its_spent_per_accepted_corpus(
    tmp_path: Path,
) -> None:
    """As the Settlement and report.md: the incurred total / the corpora accepted and
    confirmed, in the total's currency; the bridge as the reason when there is no figure."""
    path = tmp_path / "priced.xlsx"
    store.save(report_campaign.priced(), path)
    code, out, _ = _invoke("report", str(path), "--no-png", "--json")
    assert code == 0
    rows = {r["item"]: r for r in json.loads(out)["incurred"]}
    usd, eur = rows["total incurred (USD)"], rows["total incurred (EUR)"]
    assert (usd["spent_per_accepted"], usd["spent_per_accepted_reason"]) == ("2193.50 USD", None)
    assert (eur["spent_per_accepted"], eur["spent_per_accepted_reason"]) == ("508.00 EUR", None)
    assert rows["r-eu"]["spent_per_accepted"] is None  # a rental's row: no such figure
    assert rows["r-eu"]["spent_per_accepted_reason"] is None


def test_report_json_says_why_a_total_has_no_spent_per_accepted(tmp_path: Path) -> None:
    """Nothing confirmed in Verification: no figure, and the bridge says why."""
    data = report_campaign.priced()
    data.tables["Verification"] = []
    path = tmp_path / "priced.xlsx"
    store.save(data, path)
    code, out, _ = _invoke("report", str(path), "--no-png", "--json")
    assert code == 0
    total = next(r for r in json.loads(out)["incurred"] if r["item"] == "total incurred (EUR)")
    assert total["spent_per_accepted"] is None
    assert total["spent_per_accepted_reason"].startswith("2 row(s) in EUR, each rental once")
    assert (
        "508.00 EUR incurred, no corpus confirmed yet (Verification)"
        in total["spent_per_accepted_reason"]
    )


def test_cost_json_is_the_seed_example(runner: CliRunner) -> None:
    code, out, _ = _invoke("cost", "--gpu", "rtx-4090", "--days", "7", "--lots", "2", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["format"], doc["flat_price"], doc["cards"]) == ("iteralab-cost/1", "220.00 USD", 2)
    assert doc["cost_per_accepted"] is None
    assert doc["cost_per_accepted_reason"] == "no --accepted-results given: none invented"
    code, out, _ = _invoke(
        "cost", "--gpu", "b200", "--days", "7", "--accepted-results", "4", "--json"
    )
    assert (json.loads(out)["flat_price"], json.loads(out)["cost_per_accepted"]) == (
        "2071.00 USD",
        "517.75 USD",
    )


def test_cost_json_refuses_what_the_text_refuses() -> None:
    code, out, err = _invoke("cost", "--gpu", "b200", "--days", "5", "--json")
    assert (code, out) == (2, "")
    assert "plan length 5 days" in err


def test_schedule_json_is_the_96_hour_example() -> None:
    code, out, err = _invoke(
        "schedule", "--start", "2026-12-07T09:00", "--end", "2026-12-11T09:00", "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert (doc["format"], doc["window_hours"], doc["span_hours"]) == (
        "iteralab-schedule/1",
        96.0,
        96.0,
    )
    assert [(p["plan_days"], p["covers"]) for p in doc["plans"]] == [
        (3, False),
        (7, True),
        (30, True),
    ]
    assert err.startswith("time zone: UTC")


def test_ingest_json_says_what_it_added(twins: tuple[Path, Path]) -> None:
    twins[1].with_name("campaign.journal.jsonl").write_text("", encoding="utf-8")
    code, out, _ = _invoke("ingest", str(twins[1]), "--json")
    assert code == 0
    assert json.loads(out) == {
        "format": "iteralab-ingest/1",
        "workbook": str(twins[1]),
        "journal": str(twins[1].with_name("campaign.journal.jsonl")),
        "attempts_added": 0,
        "manifests_added": 0,
        "already": 0,
        "refused": {},
    }


def test_run_json_streams_one_line_per_attempt_then_the_summary(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4), variant("b4-fp32", 4)])
    code, out, _ = _invoke("run", str(book), "--json")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [d["format"] for d in lines] == ["iteralab-attempt/1"] * 2 + ["iteralab-run/1"]
    rows = {r["attempt_id"]: r for r in attempts(book)}
    for d in lines[:2]:
        assert d["measured_s"] == rows[d["attempt_id"]]["measured_s"]
        assert d["status"] == "completed"
    summary = lines[2]
    assert {k: summary[k] for k in ("recorded", "completed", "failed", "interrupted")} == {
        "recorded": 2,
        "completed": 2,
        "failed": 0,
        "interrupted": 0,
    }
    assert type(summary["interrupted"]) is int and summary["stopped"] is False


def test_demo_json_streams_the_run_then_the_report(tmp_path: Path) -> None:
    """The quick generation demo (the smaller one): only JSON lines on stdout."""
    code, out, err = _invoke(
        "demo", str(tmp_path / "d"), "--quick", "--task", "generation", "--json"
    )
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [d["format"] for d in lines] == (
        ["iteralab-attempt/1"] * 6 + ["iteralab-run/1", "iteralab-report/1"]
    )
    book = tmp_path / "d" / "example_generation.xlsx"
    assert f"demo workbook: {book}" in err
    rows = {r["attempt_id"]: r for r in attempts(book)}
    assert {d["attempt_id"] for d in lines[:6]} == set(rows)
    for d in lines[:6]:
        assert d["decode_tokens_per_s"] == rows[d["attempt_id"]]["decode_tokens_per_s"]
    assert lines[6]["completed"] == 6
    report = lines[7]
    assert report["workbook"] == str(book)
    assert [v["variant_id"] for v in report["variants"] if v["successes"]] == [
        "b4-fp32",
        "b8-fp32",
        "b16-fp32",
    ]
