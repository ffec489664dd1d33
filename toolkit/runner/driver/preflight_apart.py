"""`iteralab run`'s pre-flight in a worker process, as its attempts run (issue 34).

Run in the campaign's own process, the pre-flight imported torch there (competing with the
fork server's imports for a core), kept torch and its allocator's pools for the whole run,
made the process's exit seconds slower, and on a GPU held a CUDA context on the card while
every attempt ran. In a worker (forked by the run's fork server, whose imports it reuses, or
``python -m toolkit.runner.driver.worker``) it leaves the campaign's process without torch;
the worker exits when it is done, with everything it loaded.

Same checks, same lines, same refusal (:mod:`toolkit.runner.preflight`); the outcome comes
back as JSON (:mod:`toolkit.runner.preflight_result`). A worker that dies without an outcome
is the toolkit's fault: its stderr's last lines are the error.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.evidence import corpus
from toolkit.runner.driver import forkserver, worker
from toolkit.runner.preflight_result import VariantCheck, from_json


def check(
    variants: Sequence[dict[str, Any]],
    protocol: dict[str, Any],
    workbook: Path,
    items: Sequence[corpus.Item],
    locked: bool,
    progress: Callable[[str], None],
    labels: Sequence[str] = (),
) -> list[VariantCheck]:
    """:func:`toolkit.runner.preflight.check` of ``variants`` on ``items`` (``labels``: the
    corpus's label set), in a worker process; raises its PreflightError, or ToolkitError
    when the worker died."""
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
        try:
            proc.stdin.write(json.dumps({"preflight": request}, ensure_ascii=False, default=str))
            proc.stdin.close()
            for event in worker.read_events(proc.stdout):
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
            proc.stdout.close()
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
