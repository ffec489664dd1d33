"""File hashing: one function, and the background pool validation and the report share."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest

from toolkit.plumbing import helper as helper_module
from toolkit.plumbing.digests import BLOCK, HELPER_MIN_FILES, Digests, file_sha256


def test_file_sha256_is_hashlib_over_the_whole_file_across_blocks(tmp_path: Path) -> None:
    blob = bytes(range(256)) * (BLOCK // 256 * 2 + 3)  # two blocks and a bit
    path = tmp_path / "f.bin"
    path.write_bytes(blob)
    assert file_sha256(path) == hashlib.sha256(blob).hexdigest()
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert file_sha256(empty) == hashlib.sha256(b"").hexdigest()


def test_digests_hash_given_and_late_paths_and_return_read_errors(tmp_path: Path) -> None:
    files = {}
    for k in range(20):
        files[tmp_path / f"{k}.jsonl"] = f"line {k}\n".encode() * (k + 1)
    for path, blob in files.items():
        path.write_bytes(blob)
    late = tmp_path / "late.jsonl"
    late.write_bytes(b"late\n")
    with Digests(files) as digests:
        assert {p: digests.get(p) for p in files} == {
            p: hashlib.sha256(b).hexdigest() for p, b in files.items()
        }
        assert digests.get(late) == hashlib.sha256(b"late\n").hexdigest()
        missing = digests.get(tmp_path / "gone.jsonl")
        folder = digests.get(tmp_path)
    assert isinstance(missing, FileNotFoundError)
    assert isinstance(folder, OSError)  # a folder cannot be read as a file: said, not raised


def test_many_files_hash_in_a_helper_process_with_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = []
    real_popen = helper_module.subprocess.Popen

    def counting_popen(*args: Any, **kwargs: Any) -> Any:
        started.append(args[0])
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(helper_module.subprocess, "Popen", counting_popen)
    files = {}
    for k in range(HELPER_MIN_FILES):
        files[tmp_path / f"p{k}.jsonl"] = f"prediction {k}\n".encode() * 50
    for path, blob in files.items():
        path.write_bytes(blob)
    gone, folder = tmp_path / "gone.jsonl", tmp_path / "sub"
    folder.mkdir()
    with Digests([*files, gone, folder]) as digests:
        found = {p: digests.get(p) for p in files}
        missing, unreadable = digests.get(gone), digests.get(folder)
    assert started == [[sys.executable, "-S", "-m", "toolkit.plumbing.helper"]]
    assert found == {p: hashlib.sha256(b).hexdigest() for p, b in files.items()}
    assert isinstance(missing, FileNotFoundError) and missing.filename == str(gone)
    assert isinstance(unreadable, IsADirectoryError)


def test_a_failed_helper_leaves_the_hashing_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = []
    for k in range(HELPER_MIN_FILES):
        paths.append(tmp_path / f"{k}")
        paths[-1].write_bytes(b"x" * k)
    monkeypatch.setattr(helper_module.sys, "executable", str(tmp_path / "no-python"))
    with Digests(paths) as digests:
        assert [digests.get(p) for p in paths] == [
            hashlib.sha256(b"x" * k).hexdigest() for k in range(HELPER_MIN_FILES)
        ]


def test_early_digests_hash_the_predictions_folder_before_the_workbook_is_read(
    tmp_path: Path,
) -> None:
    """What ``report`` and ``validate`` start before their read: the folder's files in a
    helper (enough of them), a file elsewhere hashed when asked, a missing folder harmless."""
    from toolkit.evidence.predictions import early_digests, predictions_folder

    workbook = tmp_path / "campaign.xlsx"
    folder = predictions_folder(workbook)
    assert folder == tmp_path / "campaign_predictions"
    with early_digests(workbook) as nothing_yet:  # no folder: nothing started, still answers
        late = tmp_path / "late.jsonl"
        late.write_bytes(b"late\n")
        assert nothing_yet.get(late) == hashlib.sha256(b"late\n").hexdigest()
    folder.mkdir()
    blobs = {
        folder / f"a{k:03d}.jsonl": f"{k}\n".encode() * (k + 1) for k in range(HELPER_MIN_FILES)
    }
    for path, blob in blobs.items():
        path.write_bytes(blob)
    before = len(helper_module.HELPER_PEAKS)
    with early_digests(workbook) as digests:
        # Asked with the path as a row resolves it: the folder joined with its relative path.
        relative = Path("campaign_predictions") / "a007.jsonl"
        assert (
            digests.get(tmp_path / relative)
            == hashlib.sha256(blobs[folder / "a007.jsonl"]).hexdigest()
        )
        assert all(digests.get(p) == hashlib.sha256(b).hexdigest() for p, b in blobs.items())
    assert len(helper_module.HELPER_PEAKS) == before + 1  # hashed in one helper process
