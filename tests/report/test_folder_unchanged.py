"""A report of unchanged evidence rewrites no file of the reviewer's folder and draws nothing.

Each PNG records the fingerprint of what it was drawn from (:mod:`toolkit.report.charts`);
a file that already holds what the report would write is left as it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from tests.support.paths import ROOT
from toolkit.cli import cli
from toolkit.report import charts
from toolkit.reporting import default_folder
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

FILES = ("report.md", "attempts.csv", "manifest.csv", charts.DURATIONS_PNG, charts.COSTS_PNG)


@pytest.fixture
def reported(tmp_path: Path) -> Path:
    """A campaign reported once, PNG charts included."""
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    result = CliRunner().invoke(cli, ["report", str(book)])
    assert result.exit_code == 0, result.output
    return book


def _stamps(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Each file's inode, modification time and bytes: a rewrite changes the first two."""
    return {
        name: (
            (folder / name).stat().st_ino,
            (folder / name).stat().st_mtime_ns,
            (folder / name).read_bytes(),
        )
        for name in FILES
    }


def _no_drawing() -> None:
    raise AssertionError("a picture was drawn")


def test_a_second_report_of_the_same_evidence_leaves_every_file_and_needs_no_matplotlib(
    reported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = default_folder(reported)
    before = _stamps(folder)
    first = CliRunner().invoke(cli, ["report", str(reported)])
    monkeypatch.setattr(charts, "_pyplot", _no_drawing)
    second = CliRunner().invoke(cli, ["report", str(reported)])
    assert second.exit_code == 0, second.output
    assert second.stdout == first.stdout  # the pictures are listed, none said skipped
    assert second.stdout.splitlines()[-1] == (
        f"wrote {folder}/: report.md, attempts.csv, manifest.csv, durations.png, "
        "projected_cost_per_expected.png"
    )
    assert _stamps(folder) == before


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    """This checkout's Python run on ``args`` in a process of its own, within 300 s."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )


def test_a_report_of_the_same_evidence_does_not_import_matplotlib(reported: Path) -> None:
    run = _python(
        "-c",
        "import sys; from toolkit.cli import main; sys.argv[1:] = ['report', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code\n"
        "print('matplotlib' in sys.modules)",
        str(reported),
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "False"


def test_a_damaged_or_replaced_picture_is_drawn_again(reported: Path) -> None:
    folder = default_folder(reported)
    durations, costs = folder / charts.DURATIONS_PNG, folder / charts.COSTS_PNG
    drawn = durations.read_bytes()
    fingerprint = charts.recorded(durations)
    assert fingerprint is not None and len(fingerprint) == 64
    at = len(drawn) // 2  # a byte inside the image data: its chunk's CRC no longer matches
    durations.write_bytes(drawn[:at] + bytes([drawn[at] ^ 1]) + drawn[at + 1 :])
    costs.write_bytes(durations.read_bytes())  # a whole PNG, of another picture
    assert charts.recorded(durations) is None
    assert charts.recorded(costs) is None
    result = CliRunner().invoke(cli, ["report", str(reported)])
    assert result.exit_code == 0, result.output
    assert durations.read_bytes() == drawn
    assert charts.recorded(costs) not in (None, fingerprint)


def test_changed_evidence_redraws_the_picture_it_changes(reported: Path) -> None:
    folder = default_folder(reported)
    before = _stamps(folder)
    drawn_for = charts.recorded(folder / charts.DURATIONS_PNG)
    chosen = next(
        r["attempt_id"]
        for r in store.read(reported).tables["Attempts"]
        if r["status"] == "completed"
    )
    excluded = CliRunner().invoke(cli, ["exclude", str(reported), chosen, "--reason", "test"])
    assert excluded.exit_code == 0, excluded.output
    result = CliRunner().invoke(cli, ["report", str(reported)])
    assert result.exit_code == 0, result.output
    after = _stamps(folder)
    # One run fewer in its variant: another picture, another fingerprint, drawn again.
    assert after[charts.DURATIONS_PNG][2] != before[charts.DURATIONS_PNG][2]
    assert charts.recorded(folder / charts.DURATIONS_PNG) not in (None, drawn_for)
    assert after["attempts.csv"][2] != before["attempts.csv"][2]  # the exclusion is in it
    assert after["manifest.csv"] == before["manifest.csv"]  # untouched: the same bytes


def test_a_truncated_png_records_no_fingerprint(reported: Path) -> None:
    durations = default_folder(reported) / charts.DURATIONS_PNG
    whole = durations.read_bytes()
    durations.write_bytes(whole[:-12])  # the IEND chunk gone
    assert charts.recorded(durations) is None
    durations.write_bytes(whole + b"tail")  # bytes after IEND
    assert charts.recorded(durations) is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_named_pipes_at_the_folders_file_names_are_replaced_not_read(reported: Path) -> None:
    folder = default_folder(reported)
    for name in FILES:
        (folder / name).unlink()
        os.mkfifo(folder / name)
    # A read of a pipe would wait for ever: a subprocess with a time limit.
    run = _python("-m", "toolkit", "report", str(reported))
    assert run.returncode == 0, run.stderr
    assert all((folder / name).is_file() for name in FILES)
    assert charts.recorded(folder / charts.DURATIONS_PNG) is not None
