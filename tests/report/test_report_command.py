"""`iteralab report`: exit codes, printed verdicts, files written, user edits kept."""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit import editing, layout
from toolkit.cli import cli
from toolkit.report import charts
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

INPUT_SHEETS = ("Protocol", "Variants", "Attempts", "Manifest", "Tariffs", "Audit")


@pytest.fixture
def workbook(tmp_path: Path) -> Path:
    return report_campaign.write(tmp_path / "campaign.xlsx")


def test_report_prints_the_verdict_table_and_exits_0(runner: CliRunner, workbook: Path) -> None:
    result = runner.invoke(cli, ["report", str(workbook), "--no-png"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"refreshed {workbook} (protocol ")
    assert lines[1] == "integrity: no findings (validate's checks, every predictions file hashed)"
    assert result.stderr == ""
    assert lines[2].split() == [
        "variant",
        "attempts",
        "successes",
        "failed",
        "interrupted",
        "excluded",
        "median_s",
        "min_s",
        "max_s",
        "quality",
        "equal",
        "quality",
    ]
    assert lines[4].split() == [
        "b4-fp32",
        "5",
        "4",
        "1",
        "0",
        "0",
        "15.750",
        "15.300",
        "16.200",
        "pass",
        "no",
    ]  # out of memory once: not feasible
    assert lines[8].split() == [
        "b16-fp32",
        "5",
        "0",
        "5",
        "0",
        "0",
        "no",
        "data",
        "-",
        "-",
        "not",
        "evaluated",
        "no",
    ]
    assert (
        "  b4-fp32 vs b8-fp32: not separated (batch_size 4 -> 8; ranges overlap: gap 0.450 s "
        "between medians, "
        "spread up to 0.900 s); add repetitions under the same protocol, or look at "
        "loading, input shape, compilation, concurrent activity"
    ) in lines
    assert "  b8-bf16: 1 lot(s) x 7-day plan, empty: outside the equal-quality comparison" in lines
    assert "  b8-fp32: 1 lot(s) x 7-day plan, 110.00 USD per expected corpus (forecast)" in lines
    assert (
        "    spent per accepted corpus: 2,181.00 USD incurred / 1 accepted corpus(es) "
        "confirmed = 2,181.00 USD"
    ) in lines
    assert "  r-4090: 110.00 USD [no ledger imported]" in lines
    assert "  total incurred (USD): 2,181.00 USD [no ledger imported]" in lines
    assert "  b8-cpu: no price (cpu variant: no rental price applies)" in lines
    assert "decision draft: b8-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)" in lines
    assert "5 of 9 pair(s) separated" in lines
    assert lines[-1] == "note: PNG charts skipped: --no-png"


def test_report_states_the_findings_of_a_tampered_workbook_and_still_reports(
    runner: CliRunner, workbook: Path
) -> None:
    """Validation runs first: findings go to stderr and report.md, beside the numbers."""
    with editing.change(workbook, refresh_derived=False) as edit:
        data = edit.data
        row = next(r for r in data.tables["Attempts"] if r["attempt_id"] == "b4-fp32-r1")
        row["measured_s"] = 1.0  # an edited timing: the chain no longer holds

    result = runner.invoke(cli, ["report", str(workbook), "--no-png"])

    assert result.exit_code == 0, result.output
    assert "warning: Attempts!" in result.stderr
    assert "finding(s) in the workbook as read: the report states them" in result.stderr
    text = (workbook.with_name("campaign_report") / "report.md").read_text(encoding="utf-8")
    integrity = text.split("## Integrity", 1)[1].split("## Durations", 1)[0]
    assert "finding(s)**: the numbers below rest on a workbook that fails" in integrity
    assert "| Attempts |" in integrity and "| row_sha256 | chain |" in integrity


def test_report_archive_checks_each_predictions_file_now(runner: CliRunner, workbook: Path) -> None:
    preds = workbook.parent / "preds"
    preds.mkdir()
    good, bad = b'{"id": "1", "prediction": "a"}\n', b'{"id": "1", "prediction": "b"}\n'
    (preds / "good.jsonl").write_bytes(good)
    (preds / "bad.jsonl").write_bytes(bad)
    paths = {
        "b4-fp32-r1": ("preds/good.jsonl", hashlib.sha256(good).hexdigest()),
        "b4-fp32-r2": ("preds/bad.jsonl", hashlib.sha256(good).hexdigest()),
        "b4-fp32-r3": ("preds/gone.jsonl", hashlib.sha256(good).hexdigest()),
    }
    data = store.read(workbook)
    for attempt_id, (path, sha) in paths.items():
        row = next(r for r in data.tables["Attempts"] if r["attempt_id"] == attempt_id)
        row.update(predictions_path=path, predictions_sha256=sha, row_sha256=None)
    store.save(data, workbook)

    result = runner.invoke(cli, ["report", str(workbook), "--no-png"])

    assert result.exit_code == 0, result.output
    text = (workbook.with_name("campaign_report") / "report.md").read_text(encoding="utf-8")
    checks = {
        line.split(" | ")[0].strip("| "): line.rstrip(" |").rsplit(" | ", 1)[1]
        for line in text.split("checked now):", 1)[1].splitlines()
        if line.startswith("| b4-fp32-r")
    }
    assert checks == {
        "b4-fp32-r1": "matches",
        "b4-fp32-r2": "DIFFERS",
        "b4-fp32-r3": "missing",
        "b4-fp32-r4": "no file recorded",
        "b4-fp32-r5": "no file recorded",
    }
    assert "no longer matches its SHA-256" in text and "preds/gone.jsonl is missing" in text


def test_report_refuses_an_unlocked_protocol(runner: CliRunner, filled_workbook: Path) -> None:
    result = runner.invoke(cli, ["report", str(filled_workbook)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"error: {filled_workbook}: the protocol is not locked"


def test_report_refuses_a_protocol_edited_after_its_lock(runner: CliRunner, workbook: Path) -> None:
    with editing.change(workbook, refresh_derived=False) as edit:
        data = edit.data
        data.forms["Protocol"]["threshold"] = 0.5
    result = runner.invoke(cli, ["report", str(workbook)])
    assert result.exit_code == 1
    assert "the protocol changed after its lock" in result.stderr
    assert store.read(workbook).forms["Protocol"]["threshold"] == 0.5  # never put back silently


def test_report_writes_the_reviewers_folder_beside_the_workbook(
    runner: CliRunner, workbook: Path
) -> None:
    result = runner.invoke(cli, ["report", str(workbook)])
    assert result.exit_code == 0, result.output
    folder = workbook.with_name("campaign_report")
    assert result.stdout.splitlines()[-1] == (
        f"wrote {folder}/: report.md, attempts.csv, manifest.csv, durations.png, "
        "projected_cost_per_expected.png"
    )
    assert (folder / "durations.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (folder / "report.md").read_text(encoding="utf-8")
    assert "![durations](durations.png)" in text
    assert f"fingerprint {report_campaign.CORPUS_SHA}" in text
    assert (
        "| r-4090 | rental | b1-fp32, b4-fp32, b8-fp32, b8-bf16, b16-fp32 | 110.00 USD |  |  "
        "| no ledger imported |" in text
    )
    assert (
        "| total incurred (USD) | total incurred |  | 2,181.00 USD |  | 2,181.00 USD | "
        "no ledger imported |" in text
    )
    # One rule for report.md and the Settlement: outside the equal-quality comparison, empty.
    assert (
        "| b8-bf16 | rtx-4090 | 7 days | 1 | 110.00 USD | 0 | 0 | empty: outside the "
        "equal-quality comparison | in time: 12.2 s of production per lot, 96 h from "
        "the window's start to the deadline | no |" in text
    )


def test_without_matplotlib_the_pngs_are_skipped_and_the_report_says_why(
    runner: CliRunner, workbook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an absent package looks like
    result = runner.invoke(cli, ["report", str(workbook)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith(
        "note: PNG charts skipped: matplotlib is not installed"
    )
    assert not (workbook.with_name("campaign_report") / charts.DURATIONS_PNG).exists()


def test_the_workbook_holds_the_two_charts_pointing_at_its_cells(
    runner: CliRunner, workbook: Path
) -> None:
    runner.invoke(cli, ["report", str(workbook), "--no-png"])
    with zipfile.ZipFile(workbook) as z:
        xml = [z.read(n).decode() for n in sorted(z.namelist()) if n.startswith("xl/charts/")]
    median = layout.column_letter(layout.SUMMARY, "median_s")
    cost = layout.column_letter(layout.SETTLEMENT, "projected_cost_per_expected_usd")
    assert len(xml) == 2
    assert any(f"'Summary'!${median}$2:${median}$8" in x for x in xml)
    assert any(f"'Settlement'!${cost}$2:${cost}$8" in x for x in xml)
    # Columns only: an empty run ("" to a spreadsheet: 0) draws nothing, never a point at 0 s.
    assert all("<c:barChart>" in x and "<c:lineChart>" not in x for x in xml)


def test_decision_edits_and_input_sheets_survive_a_second_report(
    runner: CliRunner, workbook: Path
) -> None:
    assert runner.invoke(cli, ["report", str(workbook), "--no-png"]).exit_code == 0
    book = openpyxl.load_workbook(workbook)
    memo = book["Decision"]
    field_row = {memo.cell(r, 1).value: r for r in range(2, memo.max_row + 1)}
    memo.cell(field_row["reasons"], 2).value = "Cheapest lot; our team knows the RTX 4090."
    memo.cell(field_row["reviewed_by"], 2).value = "A. Auditor"
    book.save(workbook)  # as a person saving in a spreadsheet program
    before = store.read(workbook)
    result = runner.invoke(cli, ["report", str(workbook), "--no-png"])
    assert result.exit_code == 0, result.output
    assert "  kept as typed: reasons" in result.stdout.splitlines()
    after = store.read(workbook)
    assert after.forms["Decision"]["reasons"] == "Cheapest lot; our team knows the RTX 4090."
    assert after.forms["Decision"]["reviewed_by"] == "A. Auditor"
    assert after.forms["Decision"]["chosen_configuration"] == (
        "b8-fp32 on RTX 4090 (rtx-4090), 7-day plan, 1 lot(s)"
    )
    for name in INPUT_SHEETS:
        assert after.forms.get(name) == before.forms.get(name), name
        assert after.tables.get(name) == before.tables.get(name), name
    schedule = [
        {k: r[k] for k in ("phase", "start", "end", "notes")} for r in after.tables["Schedule"]
    ]
    assert schedule == [
        {k: r[k] for k in ("phase", "start", "end", "notes")} for r in before.tables["Schedule"]
    ]


def _tampered(workbook: Path) -> None:
    """A predictions file changed after its hash was recorded, and a measured cell edited."""
    preds = workbook.parent / "preds"
    preds.mkdir()
    (preds / "r1.jsonl").write_bytes(b"kept\n")
    with editing.change(workbook, refresh_derived=False) as edit:
        rows = edit.data.tables["Attempts"]
        rows[0].update(
            predictions_path="preds/r1.jsonl",
            predictions_sha256=hashlib.sha256(b"changed\n").hexdigest(),
        )
        rows[3]["measured_s"] = 99.0


def _counting_helpers(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The helper processes started from now on (their command lines)."""
    from toolkit.plumbing import helper

    started: list[object] = []
    real_popen = helper.subprocess.Popen

    def counting_popen(*args: object, **kwargs: object) -> object:
        started.append(args[0])
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(helper.subprocess, "Popen", counting_popen)
    return started


def test_checks_in_a_helper_process_find_what_checks_here_find(
    runner: CliRunner, workbook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large campaign checks its chain beside the refresh: same findings, same archive."""
    from toolkit.evidence import integrity

    _tampered(workbook)
    texts = []
    started = _counting_helpers(monkeypatch)
    for threshold in (10**9, 0):  # checked here, then in a helper process
        monkeypatch.setattr(integrity, "HELPER_MIN_ATTEMPTS", threshold)
        result = runner.invoke(cli, ["report", str(workbook), "--no-png"])
        assert result.exit_code == 0, result.output
        text = (workbook.with_name("campaign_report") / "report.md").read_text(encoding="utf-8")
        texts.append(
            text.split("## Integrity", 1)[1].split("## Durations")[0]
            + text.split("checked now):", 1)[1]
        )
    assert len(started) == 1  # the second report only
    assert texts[0] == texts[1]
    assert "preds/r1.jsonl no longer matches its SHA-256" in texts[0]
    assert "| DIFFERS |" in texts[0] and "| chain |" in texts[0]


def test_validate_checks_the_chain_beside_the_schemas_alike(
    runner: CliRunner, workbook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`iteralab validate` on a large campaign checks the chain and journal in a helper
    process while it checks the schemas: the same findings as checked here, in order."""
    from toolkit.evidence import integrity

    _tampered(workbook)
    outputs = []
    started = _counting_helpers(monkeypatch)
    for threshold in (10**9, 0):
        monkeypatch.setattr(integrity, "HELPER_MIN_ATTEMPTS", threshold)
        result = runner.invoke(cli, ["validate", str(workbook)])
        assert result.exit_code == 1, result.output
        outputs.append(result.stdout)
    assert len(started) == 1  # the second validation only
    assert outputs[0] == outputs[1]
    assert "preds/r1.jsonl" in outputs[0] and "chain" in outputs[0]
