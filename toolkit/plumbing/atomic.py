"""Write a file whole or not at all: the one way the toolkit writes a file a user sees.

The content goes to a temporary file beside the target (same folder, so the
rename is atomic), is flushed to disk, then renamed over the target and the
folder entry flushed too. A kill, a full disk or a refused permission at any
moment leaves either the previous file or the new one, never half of one.

A new file gets the mode a plain ``open`` would give it (0666 less the umask);
a replaced file keeps its own. ``overwrite=False`` makes the final step an
exclusive create (a hard link), so two writers cannot both "create" a file.
Temporary files are named ``.NAME.PID.RANDOM.tmp.SUFFIX``; one left by a process
that died is removed by the next write to the same target.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import stat
from collections.abc import Callable
from pathlib import Path

#: Tests kill the process inside its N-th write, after the temporary file is complete and
#: before it replaces the target (``ITERALAB_KILL_IN_WRITE=N``): the worst moment.
KILL_ENV = "ITERALAB_KILL_IN_WRITE"
_writes = 0


def temp_beside(target: Path) -> Path:
    """A new, empty temporary file in ``target``'s folder, named as ours."""
    while True:
        name = f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp{target.suffix}"
        temp = target.with_name(name)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        return temp


def remove_stale_temps(target: Path) -> list[Path]:
    """Remove temporary files of ``target`` left by processes that no longer run."""
    pattern = re.compile(
        rf"^\.{re.escape(target.name)}\.(\d+)\.[0-9a-f]+\.tmp"
        rf"{re.escape(target.suffix)}$"
    )
    removed = []
    with contextlib.suppress(OSError):
        for entry in target.parent.iterdir():
            match = pattern.match(entry.name)
            if match and not _alive(int(match.group(1))):
                with contextlib.suppress(OSError):
                    entry.unlink()
                    removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def publish(
    target: str | Path,
    produce: Callable[[Path], object],
    *,
    overwrite: bool = True,
    verify: Callable[[Path], None] | None = None,
    before_replace: Callable[[], None] | None = None,
) -> Path:
    """Write ``target`` whole: ``produce(temp)`` writes the content to a temporary path.

    ``verify(temp)`` may refuse the complete content by raising (the store refuses a
    workbook it could not read back); ``before_replace`` runs once the new content is
    safely on disk, just before it takes the target's place (the store keeps its backup
    there). Raises FileExistsError when ``overwrite`` is False and the target exists, and
    what ``verify`` or any failed step raises (an OSError naming ``target`` where the system
    named no file or the temporary one); the target is then as it was.
    """
    target = Path(target)
    remove_stale_temps(target)
    if not overwrite and target.exists():
        raise FileExistsError(f"{target} exists")
    temp = temp_beside(target)
    try:
        produce(temp)
        if verify is not None:
            verify(temp)
        with open(temp, "rb") as handle:
            os.fsync(handle.fileno())
        os.chmod(temp, _mode_for(target))
        _fault_point()
        if before_replace is not None:
            before_replace()
        if overwrite:
            os.replace(temp, target)
        else:
            _create(temp, target)
        fsync_folder(target.parent)
    except OSError as exc:
        named = exc.filename
        if exc.errno is None or (named is not None and str(named) != str(temp)):
            raise
        # A full disk met while flushing names no file, the temporary one means nothing to
        # the user: the refusal names the file being written.
        raise OSError(exc.errno, exc.strerror, str(target)) from exc
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
    return target


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _create(temp: Path, target: Path) -> None:
    """Exclusive create: a hard link fails when the target exists (where links work)."""
    try:
        os.link(temp, target)
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: a check, then a rename
        if target.exists():
            raise FileExistsError(f"{target} exists") from None
        os.replace(temp, target)


def _fault_point() -> None:
    global _writes
    wanted = os.environ.get(KILL_ENV)
    if not wanted:
        return
    _writes += 1
    if _writes == int(wanted):
        os.kill(os.getpid(), signal.SIGKILL)


def fsync_folder(folder: Path) -> None:
    """Make a rename durable; some systems cannot open a folder, which is fine."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text(
    target: str | Path,
    text: str,
    *,
    encoding: str = "utf-8",
    newline: str | None = None,
    overwrite: bool = True,
) -> Path:
    """Write ``text`` to ``target`` whole."""

    def produce(temp: Path) -> None:
        with open(temp, "w", encoding=encoding, newline=newline) as handle:
            handle.write(text)

    return publish(target, produce, overwrite=overwrite)


def write_bytes(target: str | Path, data: bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``target`` whole."""
    return publish(target, lambda temp: temp.write_bytes(data), overwrite=overwrite)


def copy_file(source: str | Path, target: str | Path, *, overwrite: bool = True) -> Path:
    """Copy ``source`` to ``target`` whole (content and modification time)."""
    return publish(target, lambda temp: shutil.copy2(source, temp), overwrite=overwrite)


#: The folder of Python's bytecode caches, which copy_tree leaves out.
BYTECODE = "__pycache__"


def copy_tree(source: str | Path, target: str | Path) -> Path:
    """Copy a folder file by file, each file whole (existing files are replaced); Python's
    bytecode caches stay behind (``__pycache__``: written by an import, not an input)."""
    source, target = Path(source), Path(target)
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if BYTECODE in relative.parts:
            continue
        if path.is_dir():
            (target / relative).mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            copy_file(path, target / relative)
    return target
