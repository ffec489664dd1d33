"""`iteralab check`: the pre-flight, before the rented clock starts (and `run`'s first step).

Resolves every variant's model, head and engine, checks the head's encoder hashes, loads
each distinct model once and runs one batch (:mod:`toolkit.runner.preflight.checks`, torch), then
estimates the campaign's hours from those batches and its cost from the Tariffs sheet
(:func:`estimate`, no torch). Also what to say when every attempt of a variant failed
during load (:func:`load_failure_advice`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

WORKBOOK = click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))
#: The corpus's first items the pre-flight's batches are taken from.
SAMPLE_ITEMS = 64
#: How the estimate names the variants without a gpu_slug (a CPU rehearsal): never priced.
UNPRICED = "no gpu_slug"


@dataclass(frozen=True)
class Estimate:
    """The campaign's estimated hours and cost, line by line as printed."""

    lines: list[str]
    hours: Decimal | None
    #: The pre-flight's checks the estimate was made from.
    checks: Sequence[Any] = ()


def estimate(
    data: Any, checks: Sequence[Any], attempts: dict[str, int], corpus_items: int
) -> Estimate:
    """Hours of attempts from each variant's one batch (load + warm-up + corpus per attempt,
    ``attempts[variant]`` times), and per GPU slug the shortest Tariffs plan covering them
    times the linked rental's lots. Rough: one batch is not a measurement."""
    from toolkit.errors import ToolkitError
    from toolkit.money.tariffs import catalog_from_workbook, money
    from toolkit.report.costs import covering_plan
    from toolkit.runner.plan import parse_warmup

    form = data.forms["Protocol"]
    warm = parse_warmup(form.get("warmup_rule"))
    variants = {str(v["variant_id"]): v for v in data.tables["Variants"]}
    rentals = {str(r.get("rental_id")): r for r in data.tables["Rentals"]}
    lines = ["estimate (rough: one batch each after its load, not a measurement):"]
    by_slug: dict[str, list[Decimal | None]] = {}
    total: Decimal | None = Decimal(0)
    for c in checks:
        count = attempts.get(c.variant_id, 0)
        slug = str(variants[c.variant_id].get("gpu_slug") or "") or UNPRICED
        if c.item_s is None:
            lines.append(
                f"  {c.variant_id}: {count} attempt(s), not timed here "
                f"({c.not_loaded}): run `iteralab check` on the rented machine"
            )
            by_slug.setdefault(slug, []).append(None)
            total = None
            continue
        items = corpus_items + warm.items * warm.passes
        per = Decimal(repr(round(c.load_s + c.item_s * items, 3)))
        hours = per * count / 3600
        lines.append(f"  {c.variant_id}: {count} attempt(s) x ~{per:.1f} s = {hours:.3f} h")
        by_slug.setdefault(slug, []).append(hours)
        total = None if total is None else total + hours
    lines.append(
        "  campaign: "
        + (
            f"~{total:.3f} h of attempts, one after another"
            if total is not None
            else "hours not known until every variant is timed on its own machine"
        )
    )
    try:
        catalog = catalog_from_workbook(data)
    except ToolkitError as exc:
        lines.append(f"  cost: not estimated: {exc.message}")
        return Estimate(lines, total)
    for slug, parts in by_slug.items():
        if slug == UNPRICED:
            lines.append(f"  {slug}: no rental price applies (nothing to look up in Tariffs)")
            continue
        if any(p is None for p in parts):
            lines.append(f"  {slug}: cost not estimated (a variant on it is not timed here)")
            continue
        hours = sum((p for p in parts if p is not None), Decimal(0))
        plan, why = covering_plan(catalog, slug, hours)
        if plan is None:
            lines.append(f"  {slug}: no cost: {why}")
            continue
        linked = [
            rentals[r]
            for v in variants.values()
            if str(v.get("gpu_slug")) == slug and (r := str(v.get("rental_id"))) in rentals
        ]
        lots = int(linked[0].get("lots") or 1) if linked else 1
        whose = (
            f"rental {linked[0].get('rental_id')}"
            if linked
            else "1 lot assumed: no Rentals row linked"
        )
        lines.append(
            f"  {slug}: {hours:.3f} h -> {plan.plan_days}-day plan ({why}), {lots} "
            f"lot(s) ({whose}) x {plan.price_text} = "
            f"{money(plan.price_per_lot_usd * lots, plan.currency)}"
        )
    return Estimate(lines, total)


def preflight(
    workbook: Path,
    data: Any,
    variants: Sequence[dict[str, Any]],
    attempts: dict[str, int],
    echo: Callable[[str], None],
    apart: bool = False,
    step_limit_s: float | None = None,
) -> Estimate:
    """Run the pre-flight on ``variants`` (raises PreflightError naming each problem) and
    return the estimate for ``attempts`` per variant. ``apart``: in a worker process
    (:mod:`toolkit.runner.driver.preflight_apart`), not this one, each model's load and
    first batch within ``step_limit_s`` (its default when None)."""
    from toolkit.evidence import corpus
    from toolkit.evidence.protocol import current_lock

    form = data.forms["Protocol"]
    locked = current_lock(data) is not None
    items = corpus.read_corpus(workbook.parent / str(form["corpus_path"]))
    # The whole corpus's label set: the sample's predictions must stay inside it.
    labels = sorted({i.label for i in items if i.label is not None})
    sample = items[:SAMPLE_ITEMS]
    if apart:
        from toolkit.runner.driver import preflight_apart

        limit = {} if step_limit_s is None else {"step_limit_s": step_limit_s}
        checks = preflight_apart.check(
            variants, form, workbook, sample, locked, echo, labels, **limit
        )
    else:
        checks = _preflight_here(
            variants, form, workbook, sample, locked, echo, step_limit_s, labels
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
    items: Sequence[Any],
    locked: bool,
    echo: Callable[[str], None],
    step_limit_s: float | None,
    labels: Sequence[str] = (),
) -> list[Any]:
    """The pre-flight in this process (``labels``: the corpus's label set): what the models'
    or predictors' code prints goes to stderr, not among our lines; each model's load and
    first batch within ``step_limit_s`` (an alarm makes a step that runs past it that
    variant's problem)."""
    from toolkit.errors import ToolkitError
    from toolkit.runner.driver.worker import alarm, stdout_to_stderr
    from toolkit.runner.preflight import checks as flight

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

        return list(flight.check(variants, form, workbook, items, locked, said, labels))


def load_failure_advice(
    workbook: Path, rows: Sequence[dict[str, Any]], protocol_sha256: str
) -> list[str]:
    """One line per variant whose every attempt under this protocol failed during load: the
    model never ran, so --resume has nothing to do; what to do instead."""
    mine = [r for r in rows if r.get("protocol_sha256") == protocol_sha256]
    tried = Counter(str(r.get("variant_id")) for r in mine)
    at_load = Counter(
        str(r.get("variant_id"))
        for r in mine
        if r.get("status") == "failed"
        and str(r.get("load_s_reason") or "").startswith("failed during load")
    )
    advice = []
    for vid, count in tried.items():
        if at_load[vid] == count:
            note = next(str(r.get("notes") or "") for r in mine if r.get("variant_id") == vid)
            advice.append(
                f"variant {vid}: all {count} attempt(s) failed during load "
                f"({note[:200]}): the model never ran. Fix model_path/head_path "
                f"(`iteralab check {workbook}` says what is wrong), then `iteralab "
                f"amend {workbook} --reason ...`: its slots run again under the "
                "amended protocol"
            )
    return advice


@click.command()
@WORKBOOK
@click.option("--series", type=int, help="Check only the variants of this series.")
@click.option(
    "--variant",
    "variant_ids",
    multiple=True,
    metavar="ID",
    help="Check only this variant (repeatable).",
)
def check(workbook: Path, series: int | None, variant_ids: tuple[str, ...]) -> None:
    """Pre-flight WORKBOOK before the rented clock starts; exit 1 naming what would fail.

    Resolves every variant's model, head and engine, checks that each head was fitted on
    its encoder (file hashes), loads each distinct model once and runs one batch, then
    estimates the campaign's hours and, from the Tariffs sheet, its cost. Writes nothing.
    `iteralab run` runs the same check first.
    """
    from toolkit.runner.plan import rotation, seeds, select
    from toolkit.workbook import store

    data = store.read(workbook)
    form = data.forms["Protocol"]
    chosen = select(data.tables["Variants"], series, variant_ids)
    declared = form.get("repetitions")
    repetitions = declared if isinstance(declared, int) and declared > 0 else 1
    slots = rotation(
        [str(v["variant_id"]) for v in chosen], repetitions, True, seeds(form.get("seeds"))
    )
    click.echo(f"{workbook}: pre-flight of {len(chosen)} variant(s)")
    result = preflight(workbook, data, chosen, Counter(s.variant_id for s in slots), click.echo)
    for line in result.lines:
        click.echo(line)
    click.echo("ready: every variant resolves, loads and runs a batch")


COMMANDS = [check]


def before_run(
    workbook: Path, campaign: Any, echo: Callable[[str], None], timeout_s: float | None = None
) -> list[Any]:
    """`run`'s first step: the pre-flight of the variants it is about to run, and their
    estimate; raises PreflightError before any attempt starts. In a worker process when the
    attempts run in worker processes (process policy ``fresh``), so this one never imports
    torch, each model's load and first batch within the attempts' ``timeout_s`` and their
    kill grace (a default limit without one); returns the checks."""
    from toolkit.workbook import store

    todo = Counter(s.variant_id for s in campaign.todo)
    chosen = [campaign.variants[vid] for vid in todo]
    apart = (campaign.protocol.get("process_policy") or "fresh") != "shared"
    echo(f"pre-flight of {len(chosen)} variant(s) (`iteralab check`):")
    from toolkit.runner.driver.campaign import KILL_GRACE_S  # as an attempt's worker gets
    from toolkit.runner.driver.preflight_apart import STEP_LIMIT_S

    limit = STEP_LIMIT_S if timeout_s is None else timeout_s + KILL_GRACE_S
    result = preflight(workbook, store.read(workbook), chosen, todo, echo, apart, limit)
    for line in result.lines:
        echo(line)
    return list(result.checks)
