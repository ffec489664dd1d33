"""Atomic, locked saves: concurrent writers, backups, failed saves, busy workbooks.

These tests run as root, where chmod stops nothing: disk-full and
permission errors are injected as the OSError the operating system raises at
the write, copy or replace step, and the workbook's bytes are compared.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import filelock
import pytest

from tests.support.builders import filled
from tests.support.paths import ROOT
from toolkit import editing
from toolkit.errors import WorkbookBusyError, WorkbookError
from toolkit.plumbing import atomic
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from toolkit import editing

    path, name, count, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    while not go.exists():
        time.sleep(0.005)
    for i in range(count):
        with editing.change(path, refresh_derived=False) as edit:
            data = edit.data
            data.append("Tariffs", {"catalog_date": "2026-09-24", "gpu_slug": f"{name}-{i}",
                                    "gpu_name": name, "cards_per_lot": 1, "plan_days": 7,
                                    "price_per_lot_usd": 110})
""")


def _folder_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_two_writer_processes_at_once_lose_nothing(tmp_path: Path) -> None:
    """Two processes append 12 rows each to one workbook at the same time: 24 rows arrive."""
    path = tmp_path / "campaign.xlsx"
    store.save(filled(), path)
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, "12", str(go)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    time.sleep(0.5)  # both processes started and waiting
    go.touch()
    for writer in writers:
        _, errors = writer.communicate(timeout=120)
        assert writer.returncode == 0, errors
    slugs = [r["gpu_slug"] for r in store.read(path).tables["Tariffs"]]
    assert sorted(slugs) == sorted(f"{n}-{i}" for n in ("alpha", "beta") for i in range(12))


def test_a_save_keeps_the_previous_version_as_backup(tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    store.save(filled(), path)
    first = path.read_bytes()
    data = store.read(path)
    data.forms["Protocol"]["seeds"] = "1"
    store.save(data, path)
    assert store.backup_path(path).read_bytes() == first
    assert store.read(path).forms["Protocol"]["seeds"] == "1"
    assert _folder_files(tmp_path) == {"campaign.xlsx", "campaign.bak.xlsx"}


def _saved_twice(tmp_path: Path) -> tuple[Path, bytes, bytes]:
    """A workbook saved twice (so it has a backup); its bytes and its backup's."""
    path = tmp_path / "campaign.xlsx"
    store.save(filled(), path)
    store.save(store.read(path), path)
    return path, path.read_bytes(), store.backup_path(path).read_bytes()


def _changed() -> object:
    data = filled()
    data.forms["Protocol"]["seeds"] = "changed"
    return data


def test_disk_full_while_writing_leaves_everything_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, before, backup = _saved_twice(tmp_path)

    def full_disk(data: object, target: Path) -> None:
        Path(target).write_bytes(b"PK\x03\x04 half a workbook")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "render", full_disk)
    with pytest.raises(WorkbookError) as err:
        store.save(_changed(), path)  # type: ignore[arg-type]
    assert str(err.value) == (
        f"{path}: could not save (No space left on device); the "
        f"workbook is unchanged\n  what to do: free disk space in "
        f"{tmp_path}, then run the command again"
    )
    assert path.read_bytes() == before
    assert store.backup_path(path).read_bytes() == backup
    assert _folder_files(tmp_path) == {"campaign.xlsx", "campaign.bak.xlsx"}


def test_disk_full_while_copying_the_backup_keeps_the_old_backup_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, before, backup = _saved_twice(tmp_path)

    def full_disk(source: Path, target: Path) -> None:
        Path(target).write_bytes(b"PK\x03\x04 half a copy")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.shutil, "copy2", full_disk)
    with pytest.raises(WorkbookError, match="No space left on device"):
        store.save(_changed(), path)  # type: ignore[arg-type]
    assert path.read_bytes() == before
    assert store.backup_path(path).read_bytes() == backup
    assert _folder_files(tmp_path) == {"campaign.xlsx", "campaign.bak.xlsx"}


def test_permission_denied_at_the_replace_leaves_the_workbook_unchanged(
    tmp_path: Path, deny_replace: Callable[[Path], None]
) -> None:
    path, before, _ = _saved_twice(tmp_path)
    deny_replace(path)
    with pytest.raises(WorkbookError) as err:
        store.save(_changed(), path)  # type: ignore[arg-type]
    assert str(err.value) == (
        f"{path}: could not save (Permission denied); the workbook is unchanged\n"
        f"  what to do: make {tmp_path} writable for you (and the workbook not read-only; on "
        "Windows close it in Excel), then run the command again"
    )
    assert path.read_bytes() == before
    assert _folder_files(tmp_path) == {"campaign.xlsx", "campaign.bak.xlsx"}


def test_a_block_that_raises_inside_editing_saves_nothing(tmp_path: Path) -> None:
    path, before, _ = _saved_twice(tmp_path)
    with pytest.raises(RuntimeError), editing.change(path, refresh_derived=False) as edit:
        data = edit.data
        data.forms["Protocol"]["seeds"] = "never saved"
        raise RuntimeError("stop")
    assert path.read_bytes() == before


def test_a_workbook_open_in_excel_stops_writers(tmp_path: Path) -> None:
    path, before, _ = _saved_twice(tmp_path)
    path.with_name("~$" + path.name).write_bytes(b"owner")
    with pytest.raises(WorkbookBusyError) as err, editing.change(path, refresh_derived=False):
        pass
    assert str(err.value) == (
        f"{path}: open in Excel or LibreOffice (found ~$campaign.xlsx)\n"
        "  what to do: save and close it there, then run the command "
        "again"
    )
    assert path.read_bytes() == before


def test_a_writer_waits_for_the_lock_then_says_who_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, before, _ = _saved_twice(tmp_path)
    monkeypatch.setattr(store, "LOCK_TIMEOUT_S", 0.2)
    with filelock.FileLock(str(path) + ".lock"):
        with pytest.raises(WorkbookBusyError) as err, editing.change(path, refresh_derived=False):
            pass
    assert str(err.value).startswith(
        f"{path}: another iteralab command has been writing it for 0.2 s"
    )
    assert path.read_bytes() == before


def test_a_stale_lock_file_from_a_killed_command_does_not_block(tmp_path: Path) -> None:
    """The lock is an OS lock on the file, released when its process dies; the file may stay."""
    path, _, _ = _saved_twice(tmp_path)
    Path(str(path) + ".lock").write_text("left by a killed process")
    with editing.change(path, refresh_derived=False) as edit:
        data = edit.data
        data.forms["Protocol"]["seeds"] = "7"
    assert store.read(path).forms["Protocol"]["seeds"] == "7"


def test_a_folder_where_the_lock_cannot_be_created_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, before, _ = _saved_twice(tmp_path)

    def denied(self: filelock.BaseFileLock, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(filelock.FileLock, "acquire", denied)
    with pytest.raises(WorkbookError) as err, editing.change(path, refresh_derived=False):
        pass
    assert str(err.value) == (
        f"{path}: cannot create the writer lock campaign.xlsx.lock (Permission denied); the "
        f"workbook is unchanged\n  what to do: make {tmp_path} writable for you, or copy the "
        "workbook to a writable folder"
    )
    assert path.read_bytes() == before


def test_ooxml_escapes_and_carriage_returns_read_back_exactly(tmp_path: Path) -> None:
    """openpyxl alone reads 'a\\rb' as 'a_x000D_b' and drops every 'x005F_': the store does not."""
    path = tmp_path / "campaign.xlsx"
    data = filled()
    data.forms["Protocol"]["determinism"] = "a\r\nb _x0041_ _x005F_ x005F_ end"
    store.save(data, path)
    assert store.read(path).forms["Protocol"]["determinism"] == (
        "a\r\nb _x0041_ _x005F_ x005F_ end"
    )
