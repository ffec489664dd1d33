"""A predictions file or folder that is a link is followed before it is judged inside or
outside the campaign folder: validate resolves the folder holding the files once, and a file
that is itself a link whole, never hashing what lies outside.

Real files: a copy of the campaign of tests/fixtures/layout3_campaign, links made with
``Path.symlink_to``."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.paths import FIXTURES
from toolkit.evidence.predictions import predictions_checks
from toolkit.evidence.validate import validate
from toolkit.plumbing.digests import Digests
from toolkit.workbook import store

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"
FOLDER = "example_campaign_predictions"


def _campaign(tmp_path: Path) -> Path:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    return folder / NAME


def _predictions_findings(path: Path) -> list[tuple[int | None, str, str]]:
    found = validate(store.read(path), path)
    return [(f.row, f.column, f.message) for f in found if f.check == "predictions"]


def test_a_predictions_file_linking_outside_the_folder_is_named_not_read(
    tmp_path: Path,
) -> None:
    path = _campaign(tmp_path)
    first = store.read(path).tables["Attempts"][0]["predictions_path"]
    recorded = path.parent / first
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(recorded.read_bytes())  # the same bytes: its hash would match
    recorded.unlink()
    recorded.symlink_to(outside)

    found = _predictions_findings(path)
    with Digests() as digests:
        checks = predictions_checks(store.read(path), path.parent, digests)

    assert [(row, column) for row, column, _ in found] == [(2, "predictions_path")]
    assert f"predictions_path {first} leads outside the campaign folder" in found[0][2]
    assert (checks[0].state, checks[0].actual) == ("outside", None)  # never hashed
    assert [c.state for c in checks[1:]] == ["matches"] * 5


def test_a_predictions_folder_linking_outside_names_every_row(tmp_path: Path) -> None:
    path = _campaign(tmp_path)
    moved = tmp_path / "moved_predictions"
    (path.parent / FOLDER).rename(moved)
    (path.parent / FOLDER).symlink_to(moved, target_is_directory=True)

    found = _predictions_findings(path)

    assert [(row, column) for row, column, _ in found] == [
        (row, "predictions_path") for row in range(2, 8)
    ]
    assert all("leads outside the campaign folder" in message for _, _, message in found)


def test_links_that_stay_inside_the_folder_are_followed_and_checked(tmp_path: Path) -> None:
    path = _campaign(tmp_path)
    data = store.read(path)
    first = data.tables["Attempts"][0]["predictions_path"]
    recorded = path.parent / first
    kept = path.parent / "kept" / recorded.name
    kept.parent.mkdir()
    recorded.rename(kept)
    recorded.symlink_to(Path("..") / "kept" / recorded.name)  # a relative link, inside

    with Digests() as digests:
        checks = predictions_checks(data, path.parent, digests)

    assert [c.state for c in checks] == ["matches"] * 6
    assert checks[0].path == recorded
    assert _predictions_findings(path) == []
