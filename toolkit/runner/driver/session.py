"""One `iteralab run` of a prepared campaign, start to finish: on this machine the fork server
starts first (it imports torch on the other core meanwhile), the pre-flight runs, then the
campaign; a run that stopped short says why.

What to show is the caller's (a display); how to pre-flight too (``preflight``), so that the
command decides what the pre-flight prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from toolkit.errors import ToolkitError, WorkbookBusyError
from toolkit.evidence import journal
from toolkit.runner.driver import breakdown, campaign, forkserver
from toolkit.runner.driver.campaign import Campaign, Executor, Options, Progress, Result
from toolkit.runner.preflight.result import VariantCheck


def run(
    prepared: Campaign,
    options: Options,
    display: Progress,
    executor: Executor | None,
    preflight: Callable[[], Sequence[VariantCheck]],
) -> Result:
    """Run ``prepared`` through ``executor`` (None: on this machine, after ``preflight``,
    which raises PreflightError before any attempt starts); the run's clock counts what
    came before the fork server's imports as start-up, then the pre-flight apart."""
    if executor is None and campaign.forks(prepared):
        # The fork server imports torch and transformers on the other core meanwhile, then
        # the model classes (before the pre-flight's fork, which needs them too).
        forkserver.prestart()
        forkserver.preload_prestarted(prepared.workbook.parent, campaign.model_paths(prepared))
    clock = breakdown.Timeline()  # from the process's start: what came before is start-up
    try:
        if executor is None:  # models load and run one batch here before any attempt
            forkserver.prestarted()  # waits for the server's imports: start-up
            clock.enter("preflight_s")
            checks = preflight()
            clock.preflight_work_s = sum(c.work_s or 0.0 for c in checks)
            clock.conversion_s = sum(c.conversion_s for c in checks)
            clock.enter("startup_s")
        return campaign.run(prepared, options, display, executor, clock)
    finally:
        # A refusal before the campaign took the prestarted server (pre-flight, a resume
        # refused) leaves it running: close it. After a campaign took it, nothing is left.
        forkserver.discard()


def refuse_short_stop(workbook: Path, result: Result, resume: str) -> None:
    """Raise why the run left work undone, other than Ctrl-C: attempts only in the journal
    (a busy workbook), or a CUDA error that leaves this process's context untrusted;
    ``resume``: the command that continues it."""
    if result.ingest_pending:
        raise WorkbookBusyError(
            f"{workbook}: busy, so the attempts are only in {journal.journal_path(workbook).name}",
            hint=f"close the workbook, then `iteralab ingest {workbook}`",
        )
    if result.cuda_broken:
        raise ToolkitError(
            f"{workbook}: stopped after a CUDA error other than out-of-memory: this process's "
            "CUDA context cannot be trusted (the failed attempt's row says which)",
            hint=f"continue in a new process: `{resume}`",
        )
