"""A newcomer's path without dead ends (issue 38, item 6): ledger headers in any case, a bad
export exits 2 as a bad tariff file does; the memo's wording with no equal-quality variant;
"fix the failures" only for variants that ran; init and the Guide name Rentals and
Verification; a cpu variant linked to a GPU rental is a finding."""

from __future__ import annotations

from pathlib import Path

import openpyxl
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.builders import filled
from toolkit.cli import cli
from toolkit.planner.identity import gpu_findings
from toolkit.report import decision, generation, summary
from toolkit.workbook import store


def _import(runner: CliRunner, book: Path, text: str) -> object:
    export = book.with_name("billing.csv")
    export.write_text(text, encoding="utf-8")
    return runner.invoke(cli, ["ledger", "import", str(book), str(export)])


def test_ledger_headers_match_whatever_their_case(tmp_path: Path, runner: CliRunner) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    result = _import(
        runner,
        book,
        "Date,DESCRIPTION,Reference,Amount,Currency\n"
        "2026-12-07,RTX 4090 7-day lot,ORD-1001,110.00,USD\n",
    )
    assert result.exit_code == 0, result.output
    assert [r["reference"] for r in store.read(book).tables["Ledger"]] == ["ORD-1001"]


def test_a_bad_billing_export_exits_2_like_a_bad_tariff_file(
    tmp_path: Path, runner: CliRunner
) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    before = book.read_bytes()
    result = _import(runner, book, "Datum,Total\n2026-12-07,110\n")
    assert result.exit_code == 2
    assert "no column for date (header 'date')" in result.stderr
    assert book.read_bytes() == before


def test_the_memo_with_no_equal_quality_variant_says_there_is_no_pair(reported: Path) -> None:
    stats = summary.variant_stats(store.read(reported))
    for st in stats:
        st.equal_quality = False
    text = decision._uncertainty(decision.Decision(), stats)
    assert "the series separates every pair" not in text
    assert text.endswith(
        "no variant passes the equal-quality gate: there is no pair of "
        "equal-quality variants to separate"
    )
    stats[0].equal_quality = True
    assert decision._uncertainty(decision.Decision(), stats).endswith(
        f"only {stats[0].variant_id} passes the equal-quality gate: there is no pair of "
        "equal-quality variants to separate"
    )


def test_fix_the_failures_is_said_only_of_variants_that_ran() -> None:
    variants = [{"variant_id": "g1", "series": 1}, {"variant_id": "g4", "series": 1}]
    (line,) = generation._separations(variants, {}, {"g1"})
    assert line == "- g1 vs g4: no data (g4 not run yet); run it under the same protocol"
    (line,) = generation._separations(variants, {"g1": [1.0]}, {"g1", "g4"})
    assert "fix the failures" in line  # g4 ran, and failed every time


def test_init_names_rentals_and_verification_and_so_does_the_guide(
    tmp_path: Path, runner: CliRunner
) -> None:
    book = tmp_path / "campaign.xlsx"
    result = runner.invoke(cli, ["init", str(book)])
    assert result.exit_code == 0, result.output
    (following,) = [line for line in result.stdout.splitlines() if line.startswith("next: ")]
    assert "Rentals" in following and "Verification" in following
    assert f"`iteralab check {book}`" in following
    guide = "\n".join(
        str(row[0].value)
        for row in openpyxl.load_workbook(book)["Guide"].iter_rows()
        if row[0].value
    )
    assert "3. Tariffs, Rentals and Schedule: " in guide
    assert "6. Verification: confirm the outputs you checked yourself" in guide


def test_a_cpu_variant_linked_to_a_gpu_rental_is_a_finding() -> None:
    data = filled()
    data.append("Rentals", dict(report_campaign.RENTALS[0]))  # an rtx-4090 lot
    data.tables["Variants"][0]["rental_id"] = "r-4090"  # b1-fp32 runs on the cpu
    (finding,) = gpu_findings(data)
    assert (finding.sheet, finding.row, finding.column, finding.check) == (
        "Variants",
        2,
        "rental_id",
        "gpu-identity",
    )
    assert finding.message == (
        "variant b1-fp32 runs on the cpu but is linked to rental 'r-4090', a rtx-4090 GPU "
        "rental: link it to the rental of the machine it ran on, or clear rental_id"
    )
    data.tables["Variants"][0]["device"] = "cuda"
    data.tables["Variants"][0]["gpu_slug"] = "rtx-4090"
    assert gpu_findings(data) == []


def test_the_draft_says_fix_the_failures_only_when_some_variant_failed() -> None:
    ran = summary.VariantStats("b1-fp32", 1, None, attempts=5, completed=5)
    failing = summary.VariantStats("b4-fp32", 1, None, attempts=5, completed=3, failed=2)
    idle = summary.VariantStats("b8-fp32", 1, None)
    chosen = decision._chosen
    assert chosen(decision.Decision(), [], None, [ran, idle]) == (
        "none: no variant passes the equal-quality gate (see reasons); revisit the variants"
    )
    assert chosen(decision.Decision(), [], None, [ran, failing, idle]) == (
        "none: no variant passes the equal-quality gate; fix the failures of b4-fp32 or "
        "revisit the variants"
    )
    assert chosen(decision.Decision(), [], None, [idle]) == (
        "none yet: no variant has run under this protocol; run the campaign"
    )
