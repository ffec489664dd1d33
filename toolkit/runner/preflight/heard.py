"""Whether Ctrl-C (SIGINT) or SIGTERM reached this process while the pre-flight ran.

The pre-flight runs a ``python:`` predictor's own code. A KeyboardInterrupt (or SystemExit)
coming out of it while no such signal arrived was raised by that code, not by a person
stopping the run: the pre-flight then names the predictor, as an attempt's row does, instead
of stopping like a Ctrl-C or dying as the toolkit's fault. Each signal still goes on to the
handler that was there before (the worker's exit, Python's KeyboardInterrupt, the campaign's
SIGTERM handler), so stopping a run behaves as before.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import Any


class SignalsHeard:
    """A context that notes SIGINT and SIGTERM (``signalled``) and passes each on."""

    def __init__(self) -> None:
        self.signalled = False
        #: False where no handler could be set (not the main thread): nothing can be told.
        self.listening = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalsHeard:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(signum)
            if previous is None:  # a handler set outside Python: left alone
                continue
            self._previous[signum] = previous
            signal.signal(signum, self._heard)
        self.listening = signal.SIGINT in self._previous
        return self

    def _heard(self, signum: int, frame: FrameType | None) -> None:
        self.signalled = True
        previous = self._previous.get(signum, signal.SIG_DFL)
        if previous == signal.SIG_IGN:
            return
        if previous == signal.SIG_DFL:  # the default action (SIGTERM ends the process)
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        previous(signum, frame)

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}
