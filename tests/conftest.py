"""Shared fixtures: fresh workbooks, filled protocols, the CLI runner.

Only fixtures live here; the builders they use are in tests/support/builders.py."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.builders import SAMPLES, filled, without_preflight

# Imported up front, so that the commands these tests run in process check the schemas here,
# whichever test comes first: a command starts a helper process for them only where pandera
# is not imported yet (toolkit.evidence.schemas_beside; tests/evidence/test_schemas_beside.py
# and the commands run in a fresh interpreter cover that path).
from toolkit.evidence import schemas  # noqa: F401
from toolkit.runner.driver import forkserver
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def filled_data() -> WorkbookData:
    """A fresh filled, unlocked WorkbookData."""
    return filled()


@pytest.fixture
def filled_workbook(tmp_path: Path) -> Path:
    """A filled, unlocked workbook file, its Protocol's corpus.jsonl and its Variants' head
    folder beside it."""
    path = tmp_path / "campaign.xlsx"
    store.save(filled(), path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    shutil.copytree(SAMPLES / "head", tmp_path / "head")
    return path


@pytest.fixture
def reported(tmp_path: Path) -> Path:
    """The report campaign after `iteralab report`: every derived sheet filled, two charts."""
    from toolkit.cli import cli

    path = report_campaign.write(tmp_path / "campaign.xlsx")
    result = CliRunner().invoke(cli, ["report", str(path), "--no-png"])
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(autouse=True)
def no_fork_server_left() -> Iterator[None]:
    """A command that stopped before its campaign took the prestarted fork server leaves it
    for the process's exit to close; in this one process the next test would be given it."""
    yield
    forkserver.discard()


@pytest.fixture
def no_preflight() -> Iterator[None]:
    """`run` without its pre-flight, as on a Ray node (builders.without_preflight)."""
    with without_preflight():
        yield


@pytest.fixture
def runner() -> CliRunner:
    """click's CliRunner with stderr kept apart from stdout."""
    return CliRunner()


@pytest.fixture
def deny_replace(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """``deny_replace(path)``: the store's ``os.replace`` onto ``path`` fails with EACCES,
    as in a folder the user may not write to (other replaces still work)."""

    def deny(path: Path) -> None:
        real_replace = os.replace

        def denied(source: str | Path, target: str | Path) -> None:
            if Path(target) == path:
                raise PermissionError(errno.EACCES, "Permission denied")
            real_replace(source, target)

        monkeypatch.setattr(os, "replace", denied)

    return deny
