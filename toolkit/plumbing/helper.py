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
unpickled. A helper that fails or cannot start raises :class:`HelperFailed`
from :meth:`Helper.result`; callers then do the work themselves, which raises
the real error if there is one.
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

PACKAGE_PARENT = Path(__file__).resolve().parents[1]
#: The peak resident memory (bytes) of each helper this process ran, for the benchmarks.
HELPER_PEAKS: list[int] = []


class HelperFailed(Exception):
    """The helper could not start, or exited without a result."""


class Helper:
    """``module:function`` called with ``args`` in a helper process, started now.

    Use as a context manager: leaving it stops a helper still at work (after
    an error nobody waits for its result).
    """

    def __init__(self, function: str, *args: Any) -> None:
        self._output: list[bytes] = []
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PACKAGE_PARENT), env.get("PYTHONPATH")) if p
        )
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-m", "toolkit.plumbing.helper"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError:
            self._process = None
            return
        request = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        # Pipes hold 64 KiB: feeding and draining them on threads keeps this one free.
        threading.Thread(target=_feed, args=(self._process, request), daemon=True).start()
        self._drain = threading.Thread(
            target=_drain, args=(self._process, self._output), daemon=True
        )
        self._drain.start()

    def result(self) -> Any:
        """Wait for the helper and return what the function returned."""
        process = self._process
        if process is None:
            raise HelperFailed("no helper process")
        self._drain.join()
        code = process.wait()
        self._process = None
        if code != 0 or not self._output:
            raise HelperFailed(f"the helper exited with {code}")
        result, peak = pickle.loads(self._output[0])
        if peak is not None:
            HELPER_PEAKS.append(peak)
        return result

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._drain.join()
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
    """The helper's side: call the function read on stdin, write its result on stdout."""
    result_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the result
    function, args = pickle.load(sys.stdin.buffer)
    module, name = function.split(":")
    result = getattr(importlib.import_module(module), name)(*args)
    with result_out:
        pickle.dump((result, peak_rss_bytes()), result_out, protocol=pickle.HIGHEST_PROTOCOL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
