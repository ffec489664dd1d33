"""Rows with integrity findings reach the verdicts: the numbers stay, no verdict or choice
rests on them (toolkit.reporting.untrusted_rows, report.decision)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tests.support import report_campaign
from toolkit import editing, layout
from toolkit.cli import cli
from toolkit.report.stats import UNTRUSTED
from toolkit.reporting import build
from toolkit.workbook import store


def _tamper(path: Path, attempt_id: str) -> None:
    with editing.change(path, refresh_derived=False) as edit:
        row = next(r for r in edit.data.tables["Attempts"] if r["attempt_id"] == attempt_id)
        row["measured_s"] = 1.0  # an edited timing: the chain no longer holds


def test_an_edited_row_makes_its_pairs_untrusted_and_keeps_its_numbers(tmp_path: Path) -> None:
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    clean, _ = build(path, pngs=False)
    _tamper(path, "b4-fp32-r1")
    result, _ = build(path, pngs=False)
    by_pair = {(s.first, s.second): s for s in result.decision.separations}
    for (first, second), s in by_pair.items():
        if "b4-fp32" in (first, second):
            assert s.verdict == UNTRUSTED
            assert s.reason.endswith("; attempt rows with integrity findings: 1 of b4-fp32")
        else:
            clean_pair = {(c.first, c.second): c for c in clean.decision.separations}
            assert s.verdict == clean_pair[(first, second)].verdict
    stats = {st.variant_id: st for st in result.stats}
    assert stats["b4-fp32"].untrusted == 1
    assert 1.0 in stats["b4-fp32"].runs  # the number is shown, as the formulas see it
    summary = {r["variant_id"]: r for r in store.read(path).tables[layout.SUMMARY.name]}
    assert summary["b4-fp32"]["notes"].startswith(
        "INTEGRITY: 1 attempt row(s) with integrity findings"
    )
    assert result.decision.chosen is None or result.decision.chosen.stats.variant_id != "b4-fp32"


def test_the_report_command_prints_the_untrusted_verdict(tmp_path: Path) -> None:
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    _tamper(path, "b1-fp32-r1")
    result = CliRunner().invoke(cli, ["report", str(path), "--no-png"])
    assert result.exit_code == 0, result.output
    assert (
        "b1-fp32 vs b4-fp32: cannot be trusted (batch_size 1 -> 4; attempt rows with "
        "integrity findings: 1 of b1-fp32); restore the evidence"
    ) in result.stdout
