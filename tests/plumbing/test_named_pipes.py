"""A workbook, a journal or a chain anchor that is a named pipe (FIFO) is refused by name:
opening one for reading waits for a writer that never comes, and `validate` hung
(toolkit.plumbing.plain). Each command runs in a process of its own with a time limit, so a
hang fails the test rather than stopping the suite."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.builders import iteralab
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.campaign  # starts a subprocess: not in `make test-fast`

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"
#: Far longer than validate takes on the fixture (about 2 s), far shorter than a hang.
LIMIT_S = 120


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    return folder / NAME


def _pipe_in_place_of(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def test_a_workbook_that_is_a_named_pipe_is_refused_by_name(tmp_path: Path) -> None:
    workbook = tmp_path / "campaign.xlsx"
    _pipe_in_place_of(workbook)
    result = iteralab("validate", str(workbook), timeout=LIMIT_S)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {workbook}: a named pipe (FIFO), not a workbook file; not read"
    )


def test_a_journal_that_is_a_named_pipe_is_a_finding_naming_it(campaign: Path) -> None:
    journal = campaign.with_name("example_campaign.journal.jsonl")
    _pipe_in_place_of(journal)
    result = iteralab("validate", str(campaign), timeout=LIMIT_S)
    assert result.returncode == 1
    assert (
        "the journal cannot be read, so edits are checked by the chain alone: "
        f"{journal}: a named pipe (FIFO), not the journal file; not read"
    ) in " ".join(result.stdout.split())


def test_a_chain_anchor_that_is_a_named_pipe_is_a_finding(campaign: Path) -> None:
    _pipe_in_place_of(campaign.with_name("example_campaign.chain.json"))
    result = iteralab("validate", str(campaign), timeout=LIMIT_S)
    assert result.returncode == 1
    assert (
        "example_campaign.chain.json cannot be read (a named pipe (FIFO), not a plain file): "
        "restore it from a copy of the campaign folder"
    ) in " ".join(result.stdout.split())
