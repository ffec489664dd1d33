"""Campaigns recorded by earlier layouts (real quick demos of layouts 1 and 2) read, validate
and report under the current one: their lock and attempt chain still verify, newer sheets and
columns read empty, and the first save writes the current layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkit import layout
from toolkit.cli import cli
from toolkit.workbook import store

FIXTURES = Path(__file__).parent / "fixtures"


def _campaign(tmp_path: Path, version: int = 1) -> Path:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURES / f"layout{version}_campaign", folder)
    return folder / "example_campaign.xlsx"


def _validate(book: Path) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def test_a_layout_1_campaign_validates_clean_as_read(tmp_path: Path) -> None:
    book = _campaign(tmp_path)
    before = book.read_bytes()
    data = store.read(book)
    assert data.layout_version == 1
    assert data.tables["Rentals"] == [] and data.tables["Ledger"] == []
    assert {r["rental_id"] for r in data.tables["Variants"]} == {None}
    assert _validate(book) == {"workbook": str(book), "valid": True, "findings": []}
    assert book.read_bytes() == before


def test_a_layout_2_campaign_validates_clean_as_read(tmp_path: Path) -> None:
    book = _campaign(tmp_path, 2)
    before = book.read_bytes()
    assert _validate(book) == {"workbook": str(book), "valid": True, "findings": []}
    assert book.read_bytes() == before


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_campaign_reports_and_is_saved_in_the_current_layout(
        tmp_path: Path, version: int) -> None:
    assert version < layout.LAYOUT_VERSION
    book = _campaign(tmp_path, version)
    assert store.read(book).layout_version == version
    result = CliRunner().invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    data = store.read(book)
    assert data.layout_version == layout.LAYOUT_VERSION
    assert len(data.tables["Attempts"]) == 6
    assert _validate(book)["findings"] == []
