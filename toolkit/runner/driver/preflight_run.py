"""The pre-flight run for `iteralab check` and as `run`'s first step: in this process or in
a worker (:mod:`toolkit.runner.driver.preflight_apart`), each model's load and first batch
within a time limit, then the campaign's estimate (:mod:`toolkit.runner.preflight.estimate`).

The checks themselves (torch) are :mod:`toolkit.runner.preflight.checks`; this module
imports them only where they run in this process.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.evidence import corpus
from toolkit.evidence.protocol import current_lock
from toolkit.runner.driver import campaign, preflight_apart
from toolkit.runner.driver.campaign import Campaign
from toolkit.runner.driver.worker import alarm, stdout_to_stderr
from toolkit.runner.preflight.estimate import Estimate, estimate
from toolkit.runner.preflight.result import VariantCheck
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

#: The corpus's first items the pre-flight's batches are taken from.
SAMPLE_ITEMS = 64


def preflight(
    workbook: Path,
    data: WorkbookData,
    variants: Sequence[dict[str, Any]],
    attempts: Mapping[str, int],
    echo: Callable[[str], None],
    *,
    apart: bool = False,
    step_limit_s: float | None = None,
) -> Estimate:
    """Run the pre-flight on ``variants`` (raises PreflightError naming each problem) and
    return the estimate for ``attempts`` per variant. ``apart``: in a worker process
    (:mod:`toolkit.runner.driver.preflight_apart`), not this one, each model's load and
    first batch within ``step_limit_s`` (its default when None)."""
    form = data.forms["Protocol"]
    locked = current_lock(data) is not None
    items = corpus.read_corpus(workbook.parent / str(form["corpus_path"]))
    # The whole corpus's label set: the sample's predictions must stay inside it.
    labels = sorted({i.label for i in items if i.label is not None})
    sample = items[:SAMPLE_ITEMS]
    if apart:
        limit = {} if step_limit_s is None else {"step_limit_s": step_limit_s}
        checks = preflight_apart.check(
            variants,
            form,
            workbook,
            items=sample,
            locked=locked,
            progress=echo,
            labels=labels,
            **limit,
        )
    else:
        checks = _preflight_here(
            variants,
            form,
            workbook,
            items=sample,
            locked=locked,
            echo=echo,
            step_limit_s=step_limit_s,
            labels=labels,
        )
    for c in checks:
        timed = (
            f"loaded in {c.load_s:.1f} s, one batch of {c.batch_items} in {c.batch_s:.3f} s"
            if c.batch_s is not None
            else str(c.not_loaded)
        )
        echo(f"  {c.variant_id}: {c.engine}; {timed}")
    return replace(estimate(data, checks, attempts, len(items)), checks=checks)


def _preflight_here(
    variants: Sequence[dict[str, Any]],
    form: dict[str, Any],
    workbook: Path,
    *,
    items: Sequence[corpus.Item],
    locked: bool,
    echo: Callable[[str], None],
    step_limit_s: float | None,
    labels: Sequence[str] = (),
) -> list[VariantCheck]:
    """The pre-flight in this process (``labels``: the corpus's label set): what the models'
    or predictors' code prints goes to stderr, not among our lines; each model's load and
    first batch within ``step_limit_s`` (an alarm makes a step that runs past it that
    variant's problem)."""
    from toolkit.runner.preflight import checks as flight  # torch, in this process

    def expired() -> None:
        raise ToolkitError(
            f"its load and first batch took more than {step_limit_s:g} s: stopped",
            hint="a model or predictor that hangs while it loads or on its first batch: fix "
            "it, or give `run` a longer --timeout (each step may take that plus 30 s)",
        )

    with stdout_to_stderr() as original, alarm(step_limit_s, expired) as restart:

        def said(line: str) -> None:
            restart()  # a step begins
            with original():
                echo(line)

        return list(
            flight.check(
                variants,
                form,
                workbook,
                items=items,
                locked=locked,
                progress=said,
                labels=labels,
            )
        )


def before_run(
    workbook: Path, prepared: Campaign, echo: Callable[[str], None], timeout_s: float | None
) -> list[VariantCheck]:
    """`run`'s first step: the pre-flight of the variants ``prepared`` is about to run, and their
    estimate; raises PreflightError before any attempt starts. In a worker process when the
    attempts run in worker processes (process policy ``fresh``), so this one never imports
    torch, each model's load and first batch within the attempts' ``timeout_s`` and their
    kill grace (a default limit without one); returns the checks."""
    todo = Counter(s.variant_id for s in prepared.todo)
    chosen = [prepared.variants[vid] for vid in todo]
    apart = (prepared.protocol.get("process_policy") or "fresh") != "shared"
    echo(f"pre-flight of {len(chosen)} variant(s) (`iteralab check`):")
    grace = campaign.KILL_GRACE_S  # as an attempt's worker gets
    limit = preflight_apart.STEP_LIMIT_S if timeout_s is None else timeout_s + grace
    result = preflight(
        workbook, store.read(workbook), chosen, todo, echo, apart=apart, step_limit_s=limit
    )
    for line in result.lines:
        echo(line)
    return list(result.checks)
