"""Money commands: cost (flat-rate plans, cost per accepted result) and schedule (R19-R21).

``iteralab cost`` runs the very code of ``tariffs/calcul_forfaits.py`` with the
same options; ``iteralab schedule`` computes the access window from phases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.command()
@click.option("--gpu", help="GPU slug from the catalog, e.g. rtx-4090 or b200.")
@click.option("--days", help="Plan length: 3, 7 or 30.")
@click.option(
    "--lots",
    default="1",
    show_default=True,
    help="Number of lots (not cards: a B200 lot holds two).",
)
@click.option(
    "--accepted-results",
    "accepted",
    metavar="N",
    help="Distinct validated corpora (an integer >= 0); adds the cost per accepted "
    "result. Leave it out until outputs are validated.",
)
@click.option("--hours", help="The whole schedule in hours, e.g. 96.")
@click.option("--start", help="Schedule start, ISO 8601, e.g. 2026-12-07T09:00+01:00.")
@click.option("--end", help="Schedule end, ISO 8601.")
@click.option(
    "--tz", help="Time zone for times without an offset, e.g. Europe/Paris (default UTC)."
)
@click.option(
    "--catalog",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Catalog CSV (default: the shipped tariffs/tarifs-forfaits.csv).",
)
@click.option("--catalog-date", help="Snapshot date to use (default: the newest).")
@click.option(
    "--provider",
    help="Whose prices to use when the catalog holds several providers' (its provider column).",
)
@click.option(
    "--metered",
    is_flag=True,
    help="Price the schedule (--hours or --start/--end) of --gpu by the hour or second with "
    "the catalog's metered prices, instead of flat plans; with --list, list those prices.",
)
@click.option("--market", help="With --metered: on-demand or spot (default: both).")
@click.option(
    "--list", "list_catalog", is_flag=True, help="List the catalog's GPUs, plans and prices."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-cost/1 JSON document (docs/json.md): a priced plan "
    "(--gpu --days) or the catalog (--list).",
)
def cost(catalog: Path | None, as_json: bool, **asked: Any) -> None:
    """Flat price of N lots, cost per accepted result, plans covering a schedule.

    The same calculator as `python tariffs/calcul_forfaits.py`, e.g.
    `iteralab cost --gpu rtx-4090 --days 7 --lots 2`.
    """
    from toolkit.money import tariffs

    request = tariffs.rules.Request(**asked)  # the options are the calculator's, by name

    def load() -> tariffs.Catalog:
        return tariffs.load_catalog(catalog).only(request.provider)

    name = str(catalog) if catalog else tariffs.rules.CATALOG_FILE
    with tariffs.translated():
        lines = tariffs.rules.report(load, request, name)  # checks every option, as the script
        if as_json:
            from toolkit.commands import documents
            from toolkit.money.quote import quote

            documents.emit(
                documents.metered_document(load(), request, name)
                if request.metered
                else documents.cost_document(quote(load(), request), name)
            )
            return
    click.echo("\n".join(lines))


@click.command()
@click.argument("workbook", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--start", help="Start of the whole window, ISO 8601.")
@click.option("--end", help="End of the whole window, ISO 8601.")
@click.option(
    "--phase",
    "phases",
    multiple=True,
    metavar="NAME=START/END",
    help="A phase (install, check, warm-up, comparison, planned resume, "
    "evaluation, export, waiting); repeat it.",
)
@click.option(
    "--tz", help="Time zone for times without an offset, e.g. Europe/Paris (default UTC)."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-schedule/1 JSON document (docs/json.md).",
)
def schedule(
    workbook: Path | None,
    start: str | None,
    end: str | None,
    phases: tuple[str, ...],
    tz: str | None,
    as_json: bool,
) -> None:
    """Access window from phases (union: overlaps count once) and the plans covering it.

    Phases come from WORKBOOK's Schedule sheet, or from --start/--end and
    --phase, e.g. `iteralab schedule --start 2026-12-07T09:00 --end 2026-12-11T09:00`.
    """
    from toolkit.errors import UsageError
    from toolkit.money import schedule as sched
    from toolkit.money import tariffs

    with tariffs.translated(UsageError):
        zone = tariffs.rules.parse_zone(tz)
    data = None
    if workbook is not None:
        from toolkit.workbook import store

        data = store.read(workbook)
    found, texts = sched.asked_phases(
        data=data, workbook=workbook, start=start, end=end, specs=phases, zone=zone
    )
    win = sched.window(found)
    if as_json:
        from toolkit.commands import documents

        click.echo(tariffs.rules.zone_line(texts, tz), err=True)
        documents.emit(documents.schedule_document(win))
        return
    lines = [tariffs.rules.zone_line(texts, tz)] + sched.window_lines(win)
    click.echo("\n".join(line for line in lines if line))


COMMANDS = [cost, schedule]
