"""Reading a file only when it is a plain file: a named pipe or an oversized file is not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolkit.plumbing.plain import not_plain, plain_bytes


def test_a_plain_file_within_the_limit_gives_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    assert plain_bytes(tmp_path / "a.txt", 3) == b"abc"


def test_a_file_larger_than_the_limit_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abcd")
    assert plain_bytes(tmp_path / "a.txt", 3) is None


def test_nothing_there_or_a_folder_gives_none(tmp_path: Path) -> None:
    assert plain_bytes(tmp_path / "missing", 10) is None
    assert plain_bytes(tmp_path, 10**9) is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_named_and_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    assert plain_bytes(tmp_path / "pipe", 10**9) is None  # opening it would wait for a writer
    assert not_plain(tmp_path / "pipe") == "a named pipe (FIFO)"
