"""One report is enough (issue 38, item 5): the edits a report logs in Audit as it runs
(Rentals and Schedule filled after the runs, a bookkeeping edit) are not findings of its
own report.md; an edit it does not clear still is."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.evidence.validate import validate
from toolkit.workbook import store

CLEAN = (
    "`iteralab validate`'s checks (schemas, cross-sheet rules, protocol lock, attempt hash "
    "chain against the journal, every predictions file's SHA-256) found nothing before "
    "this report was computed."
)


def _report_md(book: Path, runner: CliRunner) -> str:
    result = runner.invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    return (book.with_name("campaign_report") / "report.md").read_text(encoding="utf-8")


def test_money_and_bookkeeping_edits_logged_by_the_report_are_not_its_findings(
    reported: Path, runner: CliRunner
) -> None:
    data = store.read(reported)
    data.tables["Rentals"][0]["amount"] = 110.0  # the invoice arrived after the runs
    data.tables["Schedule"][-1]["notes"] = "export took the whole afternoon"
    data.tables["Variants"][0]["notes"] = "the reference variant"
    store.save(data, reported)
    before = {f.check for f in validate(store.read(reported), reported)}
    assert {"edited-after-attempts", "bookkeeping-edit"} <= before

    text = _report_md(reported, runner)
    assert CLEAN in text
    assert "finding(s)" not in text
    actions = [r["action"] for r in store.read(reported).tables["Audit"]]
    assert "bookkeeping" in actions and actions.count("prices") >= 2
    assert validate(store.read(reported)) == []  # (its corpus file is not here)


def test_a_finding_the_report_does_not_clear_stays_in_its_report(
    reported: Path, runner: CliRunner
) -> None:
    data = store.read(reported)
    data.tables["Variants"][0]["notes"] = "the reference variant"  # cleared by the report
    data.tables["Verification"][0]["verified_by"] = None  # not cleared: the user must fill it
    store.save(data, reported)
    text = _report_md(reported, runner)
    assert "**1 finding(s)**" in text
    assert "verified_by" in text and "bookkeeping-edit" not in text
