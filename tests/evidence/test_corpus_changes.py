"""A corpus edited in the middle of a campaign never mixes into its numbers (#14 item 7):
`run --resume` refuses, and the report never compares variants measured on different corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.builders import attempts, make_campaign, variant
from toolkit.cli import cli
from toolkit.report.stats import NOT_COMPARABLE
from toolkit.reporting import build
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def test_resume_refuses_a_corpus_changed_since_the_recorded_attempts(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4), variant("b4-fp32", 4)])
    runner = CliRunner()
    result = runner.invoke(cli, ["run", str(book), "--variant", "b1-fp32", "--quiet"])
    assert result.exit_code == 0, result.output
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("a", "e", 1), encoding="utf-8")
    before = book.read_bytes()
    result = runner.invoke(cli, ["run", str(book), "--resume", "--quiet"])
    assert result.exit_code == 1
    assert "the corpus corpus.jsonl changed since this protocol's attempts ran on it" in (
        result.stderr
    )
    assert "restore the corpus the attempts ran on" in result.stderr
    assert book.read_bytes() == before
    assert [a["variant_id"] for a in attempts(book)] == ["b1-fp32"]


def test_variants_measured_on_different_corpora_are_not_compared(tmp_path: Path) -> None:
    data = report_campaign.campaign()
    for m in data.tables["Manifest"]:
        if m["variant_id"] == "b8-fp32":
            m["corpus_sha256"] = "d" * 64
    path = tmp_path / "campaign.xlsx"
    store.save(data, path)
    result, _ = build(path, pngs=False)
    verdicts = {(s.first, s.second): s for s in result.decision.separations}
    measured = {st.variant_id for st in result.stats if st.successes}
    compared = 0
    for pair, s in verdicts.items():
        if not set(pair) <= measured:
            continue  # no data on one side: nothing to compare either way
        if "b8-fp32" in pair:
            compared += 1
            assert s.verdict == NOT_COMPARABLE, s
            assert "; measured on different corpora (" in s.reason  # after what differs
            assert "dddddddddddd" in s.reason
        else:
            assert s.verdict != NOT_COMPARABLE
    assert compared >= 2


def test_validate_names_a_corpus_file_edited_after_the_run(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4)])
    runner = CliRunner()
    result = runner.invoke(cli, ["run", str(book), "--quiet"])
    assert result.exit_code == 0, result.output
    clean = runner.invoke(cli, ["validate", str(book)])
    assert clean.exit_code == 0, clean.output
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("a", "e", 1), encoding="utf-8")
    before = book.read_bytes()
    result = runner.invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code == 1
    [finding] = json.loads(result.output)["findings"]
    assert (finding["sheet"], finding["row"], finding["column"]) == ("Manifest", 2, "corpus_sha256")
    assert finding["message"].startswith(
        "the corpus corpus.jsonl changed after the attempts ran on it"
    )
    assert book.read_bytes() == before


def test_validate_names_a_corpus_file_that_no_longer_reads(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4)])
    runner = CliRunner()
    assert runner.invoke(cli, ["run", str(book), "--quiet"]).exit_code == 0
    (tmp_path / "corpus.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    result = runner.invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code == 1
    messages = [f["message"] for f in json.loads(result.output)["findings"]]
    assert any(
        m.startswith("the corpus corpus.jsonl the attempts ran on no longer reads as a corpus")
        for m in messages
    ), messages
