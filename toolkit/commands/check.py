"""`iteralab check`: the pre-flight, before the rented clock starts (and `run`'s first step).

Resolves every variant's model, head and engine, checks the head's encoder hashes, loads
each distinct model once and runs one batch (:mod:`toolkit.runner.preflight.checks`, torch), then
estimates the campaign's hours from those batches and its cost from the Tariffs sheet
(:mod:`toolkit.runner.preflight.estimate`, no torch); :mod:`toolkit.runner.driver.preflight_run`
runs it. Also what to say when every attempt of a variant failed during load
(:func:`load_failure_advice`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from toolkit.runner.driver.campaign import Campaign
    from toolkit.runner.preflight.result import VariantCheck

WORKBOOK = click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))


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
    from toolkit.runner.driver import preflight_run
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
    todo = Counter(s.variant_id for s in slots)
    result = preflight_run.preflight(workbook, data, chosen, todo, click.echo)
    for line in result.lines:
        click.echo(line)
    click.echo("ready: every variant resolves, loads and runs a batch")


COMMANDS = [check]


def before_run(
    workbook: Path,
    campaign: Campaign,
    echo: Callable[[str], None],
    timeout_s: float | None = None,
) -> list[VariantCheck]:
    """`run`'s first step: the pre-flight of the variants it is about to run, and their
    estimate (:func:`toolkit.runner.driver.preflight_run.before_run`); raises
    PreflightError before any attempt starts; returns the checks."""
    from toolkit.runner.driver import preflight_run

    return preflight_run.before_run(workbook, campaign, echo, timeout_s)
