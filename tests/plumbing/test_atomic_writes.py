"""Every file the toolkit writes appears whole or not at all (toolkit.plumbing.atomic).

Real processes are killed (SIGKILL) inside each of their writes in turn, after the
new content is complete and before it takes the target's place: the worst moment.
"""

from __future__ import annotations

import ast
import errno
import itertools
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.paths import ROOT
from toolkit.cli import cli
from toolkit.errors import WorkbookError
from toolkit.plumbing import atomic
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _iteralab(
    *args: str, cwd: Path, kill_in_write: int | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    if kill_in_write is not None:
        env[atomic.KILL_ENV] = str(kill_in_write)
    return subprocess.run(
        [sys.executable, "-m", "toolkit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _readable_or_absent(workbook: Path, cwd: Path) -> None:
    if workbook.exists():
        done = _iteralab("validate", str(workbook), cwd=cwd)
        assert "not a readable" not in done.stdout + done.stderr, done.stderr
        assert done.returncode in (0, 1), done.stderr  # valid, or findings: read whole


def test_init_killed_in_its_write_leaves_no_workbook_and_can_run_again(tmp_path: Path) -> None:
    done = _iteralab("init", "campaign.xlsx", cwd=tmp_path, kill_in_write=1)
    assert done.returncode == -signal.SIGKILL
    assert not (tmp_path / "campaign.xlsx").exists()
    assert [p.name for p in tmp_path.iterdir()] != []  # the killed process's temp file
    again = _iteralab("init", "campaign.xlsx", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaign.xlsx"]  # temp cleaned
    _readable_or_absent(tmp_path / "campaign.xlsx", tmp_path)


@pytest.mark.slow
def test_quick_demo_killed_later_in_its_run_leaves_a_whole_workbook_or_none(tmp_path: Path) -> None:
    """Every fourth write from the 8th on (predictions, ingesting saves, the report's files),
    until a run gets through: each time the workbook reads whole."""
    killed = 0
    for n in itertools.count(8, 4):
        folder = tmp_path / f"kill{n}"
        folder.mkdir()
        done = _iteralab("demo", "demo", "--quick", "--quiet", cwd=folder, kill_in_write=n)
        _readable_or_absent(folder / "demo" / "example_campaign.xlsx", folder)
        if done.returncode != -signal.SIGKILL:
            assert done.returncode == 0, done.stderr
            break
        killed += 1
    assert killed >= 3  # inside the campaign and its report, not only at the start


def test_a_kill_at_every_early_moment_of_the_demo_leaves_a_whole_workbook_or_none(
    tmp_path: Path,
) -> None:
    # corpus, tuning data, head (2 files), the TF-IDF plugin (2 files), quick corpus, the
    # workbook's creation, a predictions file, ...
    for n in range(1, 11):
        folder = tmp_path / f"kill{n}"
        folder.mkdir()
        done = _iteralab("demo", "demo", "--quick", "--quiet", cwd=folder, kill_in_write=n)
        assert done.returncode == -signal.SIGKILL, done.stderr
        workbook = folder / "demo" / "example_campaign.xlsx"
        _readable_or_absent(workbook, folder)
        assert workbook.exists() == (n >= 9)


def test_a_full_disk_leaves_the_previous_file_and_names_the_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.md"
    target.write_text("previous report\n", encoding="utf-8")

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device"):
        atomic.write_text(target, "new report\n")
    assert target.read_text(encoding="utf-8") == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_init_on_a_full_disk_says_so_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    result = CliRunner().invoke(cli, ["init", str(tmp_path / "campaign.xlsx")])
    assert result.exit_code == 1
    assert "could not save (No space left on device)" in result.output
    assert "free disk space in" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_save_keeps_the_workbooks_mode(tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    store.save(WorkbookData.empty(), path)
    os.chmod(path, 0o644)
    store.save(WorkbookData.empty(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    os.chmod(path, 0o640)
    store.save(WorkbookData.empty(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_new_file_gets_the_umask_mode_not_the_temp_files(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "a.txt", "a")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644


def test_a_read_only_workbook_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "campaign.xlsx"
    store.save(WorkbookData.empty(), path)
    os.chmod(path, 0o444)
    before = path.read_bytes()
    with pytest.raises(WorkbookError) as err:
        store.save(WorkbookData.empty(), path)
    assert str(err.value) == (
        f"{path}: the workbook is read-only; it is unchanged\n"
        f"  what to do: if it may change, make it writable (chmod u+w "
        f"{path}); else copy it and work on the copy"
    )
    assert path.read_bytes() == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_temp_files_of_a_dead_process_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    target = tmp_path / "campaign.xlsx"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = tmp_path / f".campaign.xlsx.{dead.stdout.strip()}.0badcafe.tmp.xlsx"
    live = tmp_path / f".campaign.xlsx.{os.getppid()}.0badcafe.tmp.xlsx"
    other = tmp_path / ".other.xlsx.1.0badcafe.tmp.xlsx"
    for path in (stale, live, other):
        path.write_bytes(b"")
    assert atomic.remove_stale_temps(target) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


def test_create_never_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "campaign.xlsx"
    target.write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        atomic.write_bytes(target, b"theirs", overwrite=False)
    assert target.read_bytes() == b"mine"


#: The renderer writes where it is told: the helper's temporary file (checked at its callers).
RENDERER = "toolkit/workbook/render.py"
#: Calls that write a file directly; only toolkit/plumbing/atomic.py may make them.
DIRECT_WRITES = (
    "write_text",
    "write_bytes",
    "copy2",
    "copyfile",
    "copytree",
    "savefig",
    "Workbook",
    "render",
)


def test_no_file_is_written_outside_the_atomic_helper() -> None:
    """`open(..., "w")`, Path.write_*, shutil copies, savefig, xlsxwriter: only through it
    (render() writes where it is told: the helper's temporary file)."""
    found = []
    for path in sorted((ROOT / "toolkit").rglob("*.py")):
        if path.name == "atomic.py" or path.relative_to(ROOT).as_posix() == RENDERER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        helpers = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "toolkit.plumbing.atomic"
            for alias in node.names
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id in helpers:
                continue  # the helper itself
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name == "open" and any(
                isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and set(a.value) & set("wax")
                for a in node.args[1:2]
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} open(..., write)")
            elif name in DIRECT_WRITES and not _inside_produce(node, path):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}()")
    assert found == []


def _inside_produce(call: ast.Call, path: Path) -> bool:
    """A write into the helper's temporary file: ``publish(target, lambda temp: ...)``."""
    source = path.read_text(encoding="utf-8").splitlines()[call.lineno - 1]
    return "lambda temp:" in source or "def produce(" in source
