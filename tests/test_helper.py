"""The helper process: a toolkit function run beside this process, its result back."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.helper import Helper, HelperFailed


def test_the_result_comes_back_as_the_function_returned_it(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    with Helper("toolkit.digests:hash_files", [tmp_path / "a.txt", tmp_path / "no"]) as helper:
        found = helper.result()
    assert found[tmp_path / "a.txt"] == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert isinstance(found[tmp_path / "no"], FileNotFoundError)


def test_a_function_that_raises_makes_the_helper_fail_not_hang() -> None:
    with Helper("toolkit.digests:hash_files", None) as helper:  # iterating None raises
        with pytest.raises(HelperFailed, match="exited with 1"):
            helper.result()


def test_a_helper_that_cannot_start_fails_when_asked(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setattr("toolkit.helper.sys.executable", str(tmp_path / "no-python"))
    with Helper("toolkit.digests:hash_files", []) as helper:
        with pytest.raises(HelperFailed, match="no helper process"):
            helper.result()
