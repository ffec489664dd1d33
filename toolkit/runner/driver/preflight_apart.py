"""`iteralab run`'s pre-flight in a worker process, as its attempts run.

Run in the campaign's own process, the pre-flight imported torch there (competing with the
fork server's imports for a core), kept torch and its allocator's pools for the whole run,
made the process's exit seconds slower, and on a GPU held a CUDA context on the card while
every attempt ran. In a worker (forked by the run's fork server, whose imports it reuses, or
``python -m toolkit.runner.driver.worker``) it leaves the campaign's process without torch;
the worker exits when it is done, with everything it loaded.

Same checks, same lines, same refusal (:mod:`toolkit.runner.preflight.checks`); the outcome comes
back as JSON (:mod:`toolkit.runner.preflight.result`). A worker that dies without an outcome
is the toolkit's fault: its stderr's last lines are the error.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.evidence import corpus
from toolkit.runner.driver import forkserver, worker
from toolkit.runner.preflight.result import VariantCheck, from_json

#: How long one step of the pre-flight (a model's load and first batch) may take when the
#: run has no --timeout: a model that hangs while loading stops the run with a message.
STEP_LIMIT_S = 900.0


class _Watchdog:
    """Kills the pre-flight's worker once a step runs past its limit; each event the
    worker sends starts the next step's clock."""

    def __init__(self, proc: forkserver.Worker, limit_s: float) -> None:
        self.proc, self.limit_s = proc, limit_s
        self.step = "starting the worker"
        self.expired = False
        self._timer: threading.Timer | None = None
        self.reset(None)

    def reset(self, step: object) -> None:
        self.stop()
        if step is not None:
            self.step = str(step)
        self._timer = threading.Timer(self.limit_s, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        self.proc.kill()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def check(
    variants: Sequence[dict[str, Any]],
    protocol: dict[str, Any],
    workbook: Path,
    *,
    items: Sequence[corpus.Item],
    locked: bool,
    progress: Callable[[str], None],
    labels: Sequence[str] = (),
    step_limit_s: float = STEP_LIMIT_S,
) -> list[VariantCheck]:
    """:func:`toolkit.runner.preflight.checks.check` of ``variants`` on ``items`` (``labels``:
    the corpus's label set), in a worker process; raises its PreflightError, or ToolkitError
    when the worker died or one step (a model's load and first batch) ran past
    ``step_limit_s`` (the worker is killed)."""
    request = {
        "workbook": str(workbook),
        "variants": list(variants),
        "protocol": protocol,
        "items": [asdict(item) for item in items],  # the corpus is not read again there
        "locked": locked,
        "labels": list(labels),
    }
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stderr:
        # A server that fails here is closed: the campaign then finds it gone and falls back.
        proc = forkserver.launch(forkserver.prestarted(), forkserver.worker_env(), stderr)
        outcome: dict[str, Any] | None = None
        watchdog = _Watchdog(proc, step_limit_s)
        assert proc.stdin is not None and proc.stdout is not None  # piped, as launched
        try:
            proc.stdin.write(json.dumps({"preflight": request}, ensure_ascii=False, default=str))
            proc.stdin.close()
            for event in worker.read_events(proc.stdout, skipped=progress):
                watchdog.reset(event.get("text"))
                if event.get("event") == "line":
                    progress(str(event["text"]))
                elif event.get("event") == "preflight":
                    outcome = event
            code = proc.wait()
        except BaseException:  # Ctrl-C, or a broken pipe: the worker goes with the run
            proc.kill()
            proc.wait()
            raise
        finally:
            watchdog.stop()
            proc.stdout.close()
        if watchdog.expired:
            raise ToolkitError(
                f"{workbook}: the pre-flight stopped: {watchdog.step} took more than "
                f"{step_limit_s:g} s, and its worker process was killed; no attempt was run "
                "or recorded",
                hint="a model or predictor that hangs while it loads or on its first batch: "
                "fix it (`iteralab check` runs the same steps without a limit), or give "
                "`run` a longer --timeout (each step may take that plus 30 s)",
            )
        if outcome is None:
            stderr.seek(0)
            tail = " | ".join(stderr.read().strip().splitlines()[-3:])[-600:]
            raise ToolkitError(
                f"{workbook}: the pre-flight's worker process exited with code {code} "
                f"before saying its outcome; stderr: {tail or '(empty)'}",
                hint="this is the toolkit's fault: run `iteralab check "
                f"{workbook}` to see the whole traceback, and report it",
            )
    return from_json(outcome, locked, str(workbook))
