"""The helper process: a toolkit function run beside this process, its result back."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from toolkit.plumbing.helper import Helper, HelperFailed


def test_the_result_comes_back_as_the_function_returned_it(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "no")]
    with Helper("toolkit.plumbing.digests:hash_files", files) as helper:
        found = helper.result()
    assert found[files[0]] == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert isinstance(found[files[1]], FileNotFoundError)


def test_a_function_that_raises_makes_the_helper_fail_not_hang() -> None:
    with Helper("toolkit.plumbing.digests:hash_files", None) as helper:  # iterating None raises
        with pytest.raises(HelperFailed, match="exited with 1"):
            helper.result()


def test_a_helper_that_cannot_start_fails_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("toolkit.plumbing.helper.sys.executable", str(tmp_path / "no-python"))
    with Helper("toolkit.plumbing.digests:hash_files", []) as helper:
        with pytest.raises(HelperFailed, match="no helper process"):
            helper.result()


@pytest.mark.skipif(sys.platform != "linux", reason="VmHWM is Linux's; ru_maxrss elsewhere")
def test_a_helper_reports_its_own_peak_memory_not_its_parents() -> None:
    """A helper started by a large process states its own peak, not the parent's memory."""
    from toolkit.plumbing import helper
    from toolkit.plumbing.rss import peak_rss_bytes

    ballast = bytearray(300 * 2**20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1  # resident now
    before = len(helper.HELPER_PEAKS)
    with Helper("toolkit.plumbing.digests:hash_files", []) as running:
        assert running.result() == {}
    (peak,) = helper.HELPER_PEAKS[before:]
    mine = peak_rss_bytes()
    assert mine is not None and mine >= 300 * 2**20
    assert 0 < peak < 200 * 2**20  # a bare interpreter; ru_maxrss would say 300+ MiB here
    del ballast


def test_a_prepared_helper_does_the_work_it_is_given_later(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    with Helper(prepare="toolkit.plumbing.rss:peak_rss_bytes") as helper:
        helper.call("toolkit.plumbing.digests:hash_files", [str(tmp_path / "a.txt")])
        found = helper.result()
    assert found == {str(tmp_path / "a.txt"): hashlib.sha256(b"abc").hexdigest()}


def test_a_helper_given_no_work_says_so_and_stops() -> None:
    with Helper(prepare="toolkit.plumbing.rss:peak_rss_bytes") as helper:
        with pytest.raises(HelperFailed, match="given no work"):
            helper.result()
    with pytest.raises(ValueError, match="one piece of work"):
        with Helper("toolkit.plumbing.digests:hash_files", []) as helper:
            helper.call("toolkit.plumbing.digests:hash_files", [])


def test_a_preparation_that_fails_makes_the_helper_fail_not_hang() -> None:
    # hash_files needs its list of paths: called with none, the preparation raises.
    with Helper(prepare="toolkit.plumbing.digests:hash_files") as helper:
        helper.call("toolkit.plumbing.digests:hash_files", [])
        with pytest.raises(HelperFailed, match="exited with 1"):
            helper.result()


def test_the_helper_imports_this_toolkit_and_no_subpackage_as_a_top_level_module() -> None:
    """The helper's PYTHONPATH starts with the folder that holds the package: not the package
    itself, whose subpackages (report, serving, runner...) would shadow any top-level module
    of those names."""
    from toolkit.plumbing.helper import PACKAGE_PARENT

    assert (PACKAGE_PARENT / "toolkit" / "plumbing" / "helper.py").is_file()


def test_the_helper_finds_what_this_process_finds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The helper starts without the site module (-S): it gets this process's module search
    path whole, so a folder this process added at run time serves it too."""
    (tmp_path / "probe_beside_helper.py").write_text(
        "import sys\n\ndef answer():\n    return 42, sys.flags.no_site\n", encoding="utf-8"
    )
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    with Helper("probe_beside_helper:answer") as helper:
        assert helper.result() == (42, 1)
