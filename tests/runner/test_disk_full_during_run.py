"""A disk that fills during `iteralab run` (#39): one named line, the workbook as it was,
nothing the journal holds lost (toolkit.runner.driver.campaign, toolkit.commands.runner,
toolkit.workbook.render, toolkit.plumbing.atomic).

The full disk is Linux's /dev/full, which refuses every write with ENOSPC as a full file
system does: the workbook's renderer writes its package there. The journal's appends meet it
through their one write helper, which writes half a line and gets ENOSPC, as a journal on a
full disk did (a torn last line).
"""

from __future__ import annotations

import errno
import gc
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, variant
from toolkit import editing
from toolkit.cli import cli
from toolkit.commands import display
from toolkit.errors import WorkbookError
from toolkit.evidence import journal
from toolkit.evidence.validate import validate
from toolkit.plumbing import atomic
from toolkit.runner.driver import campaign, campaign_lock
from toolkit.workbook import render, store
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

FULL = "/dev/full"
NO_SPACE = "No space left on device"


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What Python would print as "Exception ignored in ..." during the test."""
    seen: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def test_rendering_onto_a_full_disk_raises_once_and_leaves_nothing_open(
    unraisable: list[Any],
) -> None:
    """xlsxwriter writing the file itself left its zip archive open: its late close printed
    "Exception ignored ... Traceback" after the named error."""
    with pytest.raises(OSError) as err:
        render.render(WorkbookData.empty(), FULL)
    assert err.value.errno == errno.ENOSPC
    gc.collect()
    assert unraisable == []


def test_a_write_refused_while_flushing_names_the_file_being_written(tmp_path: Path) -> None:
    """A full disk met when a buffered file is flushed names no file; the temporary file's
    name would mean nothing to the user."""
    target = tmp_path / "report.md"
    with pytest.raises(OSError) as err:
        atomic.publish(target, lambda temp: Path(FULL).write_text("x" * 100_000))
    assert (err.value.errno, err.value.filename) == (errno.ENOSPC, str(target))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_background_save_on_a_full_disk_stops_the_run_with_its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unraisable: list[Any]
) -> None:
    """The save beside the second attempt (on the ingestion thread) meets the full disk: the
    run stops before the third attempt with that save's error in the driver's thread, not
    masked by the final save (which fails too), and the journal holds both attempts."""
    book = make_campaign(
        tmp_path, 8, [variant("b1-fp32", 1), variant("b4-fp32", 4), variant("b8-fp32", 8)]
    )
    before = book.read_bytes()
    saves: list[str] = []
    real_render = store.render

    def onto_a_full_disk(data: WorkbookData, path: str | Path) -> None:
        saves.append(threading.current_thread().name)
        real_render(data, FULL)

    monkeypatch.setattr(store, "render", onto_a_full_disk)
    options = campaign.Options(ingest_every_s=0)
    prepared = campaign.prepare(book, options)
    with pytest.raises(WorkbookError) as err:
        campaign.run(prepared, options, display.make(True))
    assert str(err.value) == (
        f"{book}: could not save ({NO_SPACE}); the workbook is unchanged\n"
        f"  what to do: free disk space in {tmp_path}, then run the command again"
    )
    assert saves == ["iteralab-ingest", threading.main_thread().name]
    assert book.read_bytes() == before
    recorded = [r["attempt"]["attempt_id"] for r in journal.read(book)]
    assert len(recorded) == 2 and journal.unfinished(book) == []  # the third never started
    gc.collect()
    assert unraisable == []

    monkeypatch.undo()  # space freed
    editing.ingest(book, refresh_derived=True)
    assert [r["attempt_id"] for r in attempts(book)] == recorded
    assert validate(store.read(book), book) == []


@pytest.mark.slow
def test_a_disk_filling_during_run_is_one_named_line_and_resume_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unraisable: list[Any]
) -> None:
    """The disk fills while the second attempt's record is written: the journal append, the
    final save and the campaign's closing note all fail. The user gets the first failure,
    named, with what to do; `run --resume` after freeing space records the lost attempt as
    interrupted, runs its slot again and loses nothing the journal held."""
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 1), variant("b4-fp32", 4)])
    before = book.read_bytes()
    appends = 0
    real_write_all, real_render = journal._write_all, store.render
    real_write_text = campaign_lock.write_text

    def write_all(fd: int, data: bytes) -> None:
        nonlocal appends
        appends += 1  # start 1, record 1, start 2, record 2: the disk fills there
        if appends < 4:
            return real_write_all(fd, data)
        real_write_all(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, NO_SPACE)

    def render_when_full(data: WorkbookData, path: str | Path) -> None:
        real_render(data, FULL if appends >= 4 else path)

    def note_when_full(target: Path, text: str, **options: Any) -> Path:
        if appends >= 4:
            raise OSError(errno.ENOSPC, NO_SPACE, str(target))
        return real_write_text(target, text, **options)

    monkeypatch.setattr(journal, "_write_all", write_all)
    monkeypatch.setattr(store, "render", render_when_full)
    monkeypatch.setattr(campaign_lock, "write_text", note_when_full)
    result = CliRunner().invoke(cli, ["run", str(book), "--quiet"])
    assert result.exit_code == 1
    log = journal.journal_path(book)
    assert result.stderr.splitlines() == [
        f"error: {log}: cannot append to the journal ({NO_SPACE}); the run stopped: the "
        f"attempts recorded in {log.name} are kept",
        f"  what to do: free disk space in {tmp_path}, then `iteralab run {book} --resume`: "
        "it first adds the journal's attempts to the workbook (an attempt whose record the "
        "full disk refused becomes an interrupted row), then runs the slots left",
    ]
    assert "Traceback" not in result.output
    gc.collect()
    assert unraisable == []
    assert book.read_bytes() == before
    (first,) = journal.read(book)
    (lost,) = journal.unfinished(book)

    monkeypatch.undo()  # space freed
    resumed = CliRunner().invoke(cli, ["run", str(book), "--resume", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    rows = attempts(book)
    assert [(r["attempt_id"], r["status"]) for r in rows[:2]] == [
        (first["attempt"]["attempt_id"], "completed"),
        (lost["attempt_id"], "interrupted"),
    ]
    assert [(r["variant_id"], r["status"]) for r in rows[2:]] == [("b4-fp32", "completed")]
    assert journal.torn_files(book)  # the half line the full disk left, kept aside
    assert validate(store.read(book), book) == []
