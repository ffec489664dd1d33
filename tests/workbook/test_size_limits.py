"""Decompression bombs and huge inputs are refused before parsing (#14 item 5): the limits
are documented, the message names the file, part or line, and memory stays bounded."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit.cli import cli
from toolkit.errors import CorpusError
from toolkit.evidence import corpus, journal
from toolkit.workbook import store


def test_a_workbook_part_that_unpacks_a_thousandfold_is_refused_unread(
    runner: CliRunner, filled_workbook: Path
) -> None:
    with zipfile.ZipFile(filled_workbook, "a", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/worksheets/sheet99.xml", b" " * (40 * 2**20))  # 40 MiB of spaces
    before = filled_workbook.read_bytes()
    assert len(before) < 2**20  # packed, it is small
    result = runner.invoke(cli, ["validate", str(filled_workbook)])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: {filled_workbook}: part xl/worksheets/sheet99.xml unpacks to 41,943,040 bytes ("
    )
    assert (
        "over the limits of a campaign workbook (268,435,456 bytes a part, 100 times "
        "packed); not read" in result.stderr
    )
    assert filled_workbook.read_bytes() == before


def test_a_workbook_over_the_total_limit_is_refused(
    filled_workbook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "MAX_UNPACKED_BYTES", 1000)
    with pytest.raises(
        Exception,
        match=r"unpacks to [\d,]+ bytes in all: over the limits of "
        r"a campaign workbook \(1,000 bytes in all\); not read",
    ):
        store.read(filled_workbook)


def test_a_corpus_line_over_the_limit_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    lines = [
        json.dumps({"id": "a", "text": "short"}),
        json.dumps({"id": "b", "text": "x" * (2 * 2**20)}),
        json.dumps({"id": "c", "text": "short"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError) as err:
        corpus.read_corpus(path)
    assert err.value.message == (
        f"{path}: line 2 holds 2,097,175 bytes, over the 1,048,576-byte limit of one input"
    )
    assert err.value.hint == (
        "one input per line: split long documents into passages (and say so in the protocol)"
    )


def test_a_corpus_file_over_the_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "t"}) + "\n", encoding="utf-8")
    monkeypatch.setattr(corpus, "MAX_CORPUS_BYTES", 10)
    with pytest.raises(CorpusError, match=r"corpus.jsonl: 25 bytes, over the 10-byte limit"):
        corpus.read_corpus(path)


def test_an_ingestion_that_would_outgrow_the_read_limits_is_refused_and_nothing_lost(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save never publishes a workbook `read` would refuse (a campaign of about 180,000
    attempts reaches the 256 MiB part limit; here the limit is lowered to the workbook's own
    size): the workbook stays as it was, the journal keeps the records, and once the limit
    allows it (a new workbook, in real life) the same records are ingested."""
    path = report_campaign.write(tmp_path / "campaign.xlsx")
    with zipfile.ZipFile(path) as archive:
        largest = max(p.file_size for p in archive.infolist())
    monkeypatch.setattr(store, "MAX_PART_BYTES", largest + 2_000)  # still readable as it is
    rows = store.read(path).tables["Attempts"]
    for number, row in enumerate(rows * 4):
        journal.append(
            path,
            journal.record(
                dict(row, attempt_id=f"extra-{number}", row_sha256=None),
                report_campaign.manifest(str(row["variant_id"])),
            ),
        )
    before = path.read_bytes()

    result = runner.invoke(cli, ["ingest", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: {path}: saving would make a workbook iteralab "
        "could not read again: part xl/worksheets/"
    )
    assert "(the largest part is sheet Attempts); the workbook is unchanged" in result.stderr
    assert "continue in a new campaign workbook" in result.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [  # no rendering left behind
        "campaign.journal.jsonl",
        "campaign.xlsx",
        "campaign.xlsx.lock",
    ]

    monkeypatch.setattr(store, "MAX_PART_BYTES", 256 * 2**20)
    assert runner.invoke(cli, ["ingest", str(path)]).exit_code == 0
    assert len(store.read(path).tables["Attempts"]) == len(rows) * 5
