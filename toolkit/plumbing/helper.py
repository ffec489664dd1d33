"""Run one toolkit function in a helper process, beside this one.

Validation and the report have work that does not depend on what this process
does next: hashing every predictions file, checking the attempt chain. On a
large campaign that is seconds of CPU; a helper process (``python -m
toolkit.plumbing.helper``) does it on another core meanwhile (benchmarks/README.md,
target 4). A process rather than a thread: a thread needs the GIL between
steps and waits for it behind a busy main thread. A process rather than a fork:
this process runs other threads (numpy's, torch's), which a fork does not copy.

The function and its arguments go to the helper pickled on stdin, the result
comes back pickled on stdout: both ends are this package, nothing else is
unpickled. A helper may be started before its work is known, preparing meanwhile
(importing what the work needs: pandas and pandera take a third of a second), and
be given the work later (:meth:`Helper.call`). A helper that fails or cannot start
raises :class:`HelperFailed` from :meth:`Helper.result`; callers then do the work
themselves, which raises the real error if there is one.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from toolkit.plumbing.rss import peak_rss_bytes

#: The folder holding the ``toolkit`` package: the helper imports it from there.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]
#: The peak resident memory (bytes) of each helper this process ran, for the benchmarks.
HELPER_PEAKS: list[int] = []


class HelperFailed(Exception):
    """The helper could not start, or exited without a result."""


class Helper:
    """``module:function`` called with ``args`` in a helper process, started now (or
    started now and given its work later: ``Helper(prepare=...)``, then :meth:`call`).

    Use as a context manager: leaving it stops a helper still at work (after
    an error nobody waits for its result).
    """

    def __init__(self, function: str | None = None, *args: Any, prepare: str | None = None) -> None:
        """Start the helper; with ``function``, call it at once. ``prepare`` (``module:function``,
        no arguments) runs in the helper as soon as it starts, before it waits for its work."""
        self._output: list[bytes] = []
        self._asked = False
        env = dict(os.environ)
        # This process's module search path, whole: -S spares the helper the site module's
        # pass over the .pth files (an editable install's finder alone takes a hundredth of
        # a second), and it finds what this process found.
        env["PYTHONPATH"] = os.pathsep.join(
            dict.fromkeys(p for p in (str(PACKAGE_PARENT), *sys.path) if p)
        )
        command = [sys.executable, "-S", "-m", "toolkit.plumbing.helper"]
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                command + ([prepare] if prepare else []),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError:
            self._process = None
            return
        self._drain = threading.Thread(
            target=_drain, args=(self._process, self._output), daemon=True
        )
        self._drain.start()
        if function is not None:
            self.call(function, *args)

    def call(self, function: str, *args: Any) -> None:
        """Give the helper its work: ``function`` (``module:function``) called with ``args``."""
        if self._asked:
            raise ValueError("a helper does one piece of work")
        self._asked = True
        if self._process is None:
            return  # result() says the helper never started
        request = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        # Pipes hold 64 KiB: feeding and draining them on threads keeps this one free.
        threading.Thread(target=_feed, args=(self._process, request), daemon=True).start()

    def result(self) -> Any:
        """Wait for the helper's result and return what the function returned. The result
        is whole once the helper closes its output: its exit is not waited for, :meth:`close`
        reaps it."""
        process = self._process
        if process is None:
            raise HelperFailed("no helper process")
        if not self._asked:
            raise HelperFailed("the helper was given no work")
        self._drain.join()
        try:
            result, peak = pickle.loads(self._output[0])
        except Exception as exc:  # nothing written (it failed), or cut short
            raise HelperFailed(f"the helper exited with {process.wait()}") from exc
        if peak is not None:
            HELPER_PEAKS.append(peak)
        return result

    def close(self) -> None:
        """Stop the helper if it still runs (its result, if any, was read) and reap it."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._drain.join()
            if not self._asked and self._process.stdin is not None:
                self._process.stdin.close()  # no thread fed it: it would stay open
            self._process = None

    def __enter__(self) -> Helper:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _feed(process: subprocess.Popen[bytes], request: bytes) -> None:
    assert process.stdin is not None
    try:
        with process.stdin as stdin:
            stdin.write(request)
    except OSError:
        pass  # the helper died: result() says so


def _drain(process: subprocess.Popen[bytes], output: list[bytes]) -> None:
    assert process.stdout is not None
    with process.stdout as stdout:
        output.append(stdout.read())


def main() -> int:
    """The helper's side: run the function named on the command line, if any; then call the
    function read on stdin, write its result on stdout and leave."""
    result_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the result
    if len(sys.argv) > 1:
        _function(sys.argv[1])()
    try:
        function, args = pickle.load(sys.stdin.buffer)
    except EOFError:
        return 0  # started, never given its work: nothing to say
    result = _function(function)(*args)
    with result_out:
        pickle.dump((result, peak_rss_bytes()), result_out, protocol=pickle.HIGHEST_PROTOCOL)
    # Done, and nothing of it to clean up: tearing the interpreter down (a tenth of a CPU
    # second with pandas) would only take a core from the command that is still at work.
    sys.stderr.flush()
    os._exit(0)


def _function(name: str) -> Any:
    module, function = name.split(":")
    return getattr(importlib.import_module(module), function)


if __name__ == "__main__":
    sys.exit(main())
