"""A report killed while it rewrites its folder (#39, Low): it left new CSV and PNG files
beside an old report.md with nothing marking them (toolkit.reporting, `iteralab validate`).

The kill is SIGKILL inside the N-th file write of the report (``ITERALAB_KILL_IN_WRITE=N``:
once that file is complete, before it takes its name), for N = 1, 2, ... until a report
finishes: every moment between two of its writes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.paths import ROOT
from toolkit.cli import cli
from toolkit.plumbing.atomic import KILL_ENV
from toolkit.reporting import IN_PROGRESS, default_folder
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _files(folder: Path) -> dict[str, bytes]:
    """The folder's files (a killed write's temporary file left aside: the next write of the
    same file removes it)."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if not p.name.startswith(".")}


def _marked(files: dict[str, bytes]) -> bool:
    return files["report.md"].startswith(IN_PROGRESS.encode())


@pytest.mark.slow
def test_a_report_killed_at_any_write_leaves_the_old_set_or_one_marked_unfinished(
    tmp_path: Path,
) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    first = CliRunner().invoke(cli, ["report", str(book)])
    assert first.exit_code == 0, first.output
    folder = default_folder(book)
    old = _files(folder)
    assert {"report.md", "attempts.csv", "manifest.csv"} < set(old) and any(
        name.endswith(".png") for name in old
    )
    chosen = next(
        r["attempt_id"] for r in store.read(book).tables["Attempts"] if r["status"] == "completed"
    )
    excluded = CliRunner().invoke(cli, ["exclude", str(book), chosen, "--reason", "test"])
    assert excluded.exit_code == 0, excluded.output  # the next report differs from the old

    marked: list[dict[str, bytes]] = []
    for kill_at in range(1, 30):
        run = subprocess.run(
            [sys.executable, "-m", "toolkit", "report", str(book)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, PYTHONPATH=str(ROOT), **{KILL_ENV: str(kill_at)}),
        )
        if run.returncode == 0:
            break
        assert run.returncode == -signal.SIGKILL, run.stderr
        now = _files(folder)
        if _marked(now):
            marked.append(now)
            checked = CliRunner().invoke(cli, ["validate", str(book)])
            assert (
                f"note: {folder / 'report.md'}: a report was stopped while it rewrote "
                f"{folder.name}/, so its CSV and PNG files are not a set: run `iteralab "
                f"report {book}` again"
            ) in checked.stderr
        else:
            assert now == old  # stopped before it touched the folder: the old set, whole
    else:
        pytest.fail("no report finished in 29 tries")
    # Stopped after new CSV or PNG files were in place, the folder said so each time.
    assert any(m["attempts.csv"] != old["attempts.csv"] for m in marked)
    assert f"note: {folder / 'report.md'}: a report was stopped" in run.stderr
    new = _files(folder)
    assert not _marked(new) and new["attempts.csv"] != old["attempts.csv"]
    assert set(new) == set(old)
    assert "a report was stopped" not in CliRunner().invoke(cli, ["validate", str(book)]).stderr
