"""Campaigns recorded by earlier layouts (real quick demos of layouts 1, 2 and 3) read,
validate and report under the current one: their lock and attempt chain still verify, newer
sheets and columns read empty, and the first save writes the current layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.paths import FIXTURES, SAMPLES
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence import chain, protocol
from toolkit.report.generation import NOT_GENERATION
from toolkit.workbook import store

#: validate's note on these campaigns: their six rows were recorded before rows held a layout.
INFERRED = (
    "Attempts 6 rows (Excel rows 2 to 7) record no layout (written before layout 8): "
    "each is judged by the newest measured column it fills or explains, which cannot "
    "tell when a row forgot the only column its layout added"
)


def _campaign(tmp_path: Path, version: int = 1) -> Path:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURES / f"layout{version}_campaign", folder)
    if version >= 3:  # its Protocol's tuning_data names the demo's copy of the sample's file
        shutil.copy(SAMPLES / "calibration.jsonl", folder)
    return folder / "example_campaign.xlsx"


#: validate's other note: a quick demo's 2 repetitions and small subgroups, by design.
QUICK = (
    "the quick demo runs 2 repetitions, too few for any pair to separate (4 or more can) and "
    "leaves 6 subgroup(s) of its subset too small for the tolerance (one changed prediction "
    "fails one): a smoke run, not the comparison; `iteralab demo` without --quick runs the "
    "whole sample"
)


def _validate(book: Path) -> dict[str, object]:
    """validate's JSON document; its rows, recorded before rows held their layout, are
    named in one note, what its quick subset cannot answer in the other (no warning)."""
    result = CliRunner().invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code in (0, 1), result.output
    document: dict[str, object] = json.loads(result.output)
    assert (document["notes"], document["warnings"]) == ([INFERRED, QUICK], [])
    return document


def test_a_layout_1_campaign_validates_clean_as_read(tmp_path: Path) -> None:
    book = _campaign(tmp_path)
    before = book.read_bytes()
    data = store.read(book)
    assert data.layout_version == 1
    assert data.tables["Rentals"] == [] and data.tables["Ledger"] == []
    assert {r["rental_id"] for r in data.tables["Variants"]} == {None}
    # Its 2 repetitions cannot separate a pair, and its small corpus's subgroups are too small
    # for the tolerance: a note on the quick demo, never a finding.
    assert _validate(book) == {
        "format": "iteralab-validate/1",
        "workbook": str(book),
        "valid": True,
        "findings": [],
        "notes": [INFERRED, QUICK],
        "warnings": [],
    }
    assert book.read_bytes() == before


def _only_the_rental_window(book: Path) -> None:
    """Layouts 2 and 3's quick demos ran their attempts days before the example rental's
    start: since layout 5 that is a finding (issue 33), their only one."""
    result = _validate(book)
    assert result["valid"] is False
    found = result["findings"]
    assert isinstance(found, list)
    assert [(f["sheet"], f["row"], f["column"], f["check"]) for f in found] == [
        ("Rentals", 2, "start", "rental-window")
    ]
    assert (
        "of rental 'demo-rental' started before the rental's start "
        "(2026-12-07T09:00+01:00)" in found[0]["message"]
    )


def test_a_layout_2_campaign_validates_as_read(tmp_path: Path) -> None:
    book = _campaign(tmp_path, 2)
    before = book.read_bytes()
    _only_the_rental_window(book)
    assert book.read_bytes() == before


def test_a_layout_3_campaign_validates_as_read(tmp_path: Path) -> None:
    book = _campaign(tmp_path, 3)
    before = book.read_bytes()
    data = store.read(book)
    assert data.layout_version == 3
    # Layout 4's columns read empty in a layout-3 workbook.
    assert all(row["ttft_s"] is None for row in data.tables["Summary"])
    assert all(row["estimate_kv_cache_bytes"] is None for row in data.tables["Memory"])
    _only_the_rental_window(book)
    assert book.read_bytes() == before


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_campaign_reports_and_is_saved_in_the_current_layout(
    tmp_path: Path, version: int
) -> None:
    assert version < layout.LAYOUT_VERSION
    book = _campaign(tmp_path, version)
    before = store.read(book)
    assert before.layout_version == version
    result = CliRunner().invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    data = store.read(book)
    assert data.layout_version == layout.LAYOUT_VERSION
    assert len(data.tables["Attempts"]) == 6
    # Saved in the current layout, the seals made under the old one still verify.
    assert protocol.require_lock(data, book) == protocol.require_lock(before, book)
    assert protocol.lock_findings(data) == [] and chain.chain_findings(data) == []
    if version == 1:  # no Rentals sheet in layout 1
        assert _validate(book)["findings"] == []
    else:
        _only_the_rental_window(book)
    # A classification campaign: the generation columns are empty, each with its reason.
    assert {(r["ttft_s"], r["ttft_s_reason"]) for r in data.tables["Summary"]} == {
        (None, NOT_GENERATION)
    }
    assert {
        (r["observed_kv_cache_bytes"], r["observed_kv_cache_bytes_reason"])
        for r in data.tables["Memory"]
    } == {(None, NOT_GENERATION)}
