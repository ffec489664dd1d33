"""``iteralab tariffs import``: another provider's dated price snapshot into the Tariffs sheet.

The file is read whole first (:mod:`toolkit.money.tariff_import`): one bad
line and nothing is written. Importing the same snapshot again replaces it
in place, so a second import of one file changes nothing; other snapshots are
kept. Once attempts exist the edit is logged in Audit (action ``prices``), as
``report`` logs a Tariffs edit typed by hand. The derived sheets are left as
they were: ``iteralab report`` recomputes the Settlement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolkit.money.tariffs import Meter, Plan, rules

FORMAT = "iteralab-tariffs-import/1"


@click.group()
def tariffs() -> None:
    """The Tariffs sheet: providers' dated snapshots of flat and metered prices."""


@tariffs.command("import")
@click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("snapshot", metavar="CSV", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--provider", help="Who sells these lots, for a file without a provider column.")
@click.option(
    "--currency",
    metavar="ISO",
    help="ISO 4217 code of the prices, for a file without a currency column.",
)
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="FIELD=HEADER",
    help="Which header holds a field (catalog_date, provider, gpu_slug, gpu_name, "
    "cards_per_lot, plan_days, price_per_lot, market, price_per_hour, billing_seconds, "
    "currency, source) when the file names it otherwise, e.g. --column "
    "price_per_hour=Hourly; repeat it.",
)
@click.option(
    "--json", "as_json", is_flag=True, help=f"Print one {FORMAT} JSON document (docs/json.md)."
)
def import_tariffs(
    workbook: Path,
    snapshot: Path,
    provider: str | None,
    currency: str | None,
    columns: tuple[str, ...],
    as_json: bool,
) -> None:
    """Add a provider's dated price snapshot (CSV) to the Tariffs sheet.

    Each line: catalog_date, provider, gpu_slug, gpu_name, cards_per_lot,
    currency, source, and either a flat plan (plan_days 3, 7 or 30 and
    price_per_lot) or a metered price (market on-demand or spot,
    price_per_hour of one lot, billing_seconds: 1 to the second, 3600 by the
    started hour). Every line is checked first and nothing is written when
    one is bad. The same snapshot
    (provider and date) imported again replaces its rows; other snapshots stay.
    Prices in different currencies are never compared or converted.
    """
    from toolkit import editing, layout
    from toolkit.evidence import money_log
    from toolkit.evidence.protocol import current_lock
    from toolkit.money import tariff_import

    plans = tariff_import.read_snapshot(
        snapshot, tariff_import.parse_mapping(columns), provider=provider, currency=currency
    )
    logged: list[str] = []
    with editing.change(workbook, refresh_derived=False) as edit:
        data = edit.data
        merged = tariff_import.merge(data.tables[layout.TARIFFS.name], plans)
        edit.save = merged.changed
        if merged.changed:
            lock = current_lock(data)
            sha = lock.sha256 if lock else ""
            # The prices as they stood, if never recorded since the attempts began; then the
            # import itself, as an edit made after the first attempt.
            before = money_log.log_money_edits(data, sha)
            data.tables[layout.TARIFFS.name] = []
            data.row_numbers[layout.TARIFFS.name] = []
            for row in merged.rows:
                data.append(layout.TARIFFS.name, row)
            after = money_log.log_money_edits(data, sha)
            logged = [text for text in (before, after) if text]
    if as_json:
        from toolkit.commands import documents

        documents.emit(_document(workbook, snapshot, plans, merged, logged))
        return
    for line in _lines(workbook, snapshot, plans, merged, logged):
        click.echo(line)


def _snapshots(plans: list[Any]) -> list[dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for p in plans:
        entry = found.setdefault(
            (p.provider, p.catalog_date),
            {"provider": p.provider, "catalog_date": p.catalog_date, "currencies": [], "rows": 0},
        )
        entry["rows"] += 1
        if p.currency not in entry["currencies"]:
            entry["currencies"].append(p.currency)
    return list(found.values())


def _lines(
    workbook: Path, snapshot: Path, plans: list[Any], merged: Any, logged: list[str]
) -> list[str]:
    names = "; ".join(
        f"{s['provider']}'s snapshot of {s['catalog_date']} ({s['rows']} row(s), "
        f"{', '.join(s['currencies'])})"
        for s in _snapshots(plans)
    )
    if not merged.changed:
        return [
            f"{names} from {snapshot.name}: already in {workbook.name} as it is; nothing changed"
        ]
    lines = [
        f"imported {names} from {snapshot.name} into {workbook.name} (Tariffs sheet: "
        f"{merged.replaced} earlier row(s) of that snapshot replaced, {merged.kept} row(s) "
        "of other snapshots kept)"
    ]
    for p in plans:
        cards = f"{p.cards_per_lot} card{'s' if p.cards_per_lot > 1 else ''}"
        if isinstance(p, Meter):
            lines.append(
                f"  {p.gpu_slug}: {p.market}, {p.price_text} an hour per lot of {cards}, "
                f"billed {rules.billing_text(p.billing_seconds)}"
            )
        else:
            lines.append(f"  {p.gpu_slug}: {p.plan_days} days, {p.price_text} per lot of {cards}")
    if logged:  # the full reasons are in the Audit sheet and the JSON document
        lines.append(
            f"logged in Audit (action prices, {len(logged)} record(s)): the Tariffs "
            "changed after the first attempt, each cell that changed is named there"
        )
    lines.append(
        f"run `iteralab report {workbook}` to price the Settlement with it (prices in "
        "different currencies are never compared or converted)"
    )
    return lines


def _document(
    workbook: Path, snapshot: Path, plans: list[Any], merged: Any, logged: list[str]
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "workbook": str(workbook),
        "csv": str(snapshot),
        "snapshots": _snapshots(plans),
        "imported": len(plans),
        "changed": merged.changed,
        "replaced": merged.replaced,
        "kept": merged.kept,
        "logged_in_audit": logged,
        "rows": [_row_document(p) for p in plans],
    }


def _row_document(p: Plan | Meter) -> dict[str, Any]:
    """One imported line: a flat plan's length and price per lot, or a metered price's
    market, price per hour and billing step (the other kind's keys null)."""
    amount = f"{rules.amount_text(p.amount, grouping=False)} {p.currency}"
    plan = p if isinstance(p, Plan) else None
    meter = p if isinstance(p, Meter) else None
    return {
        "provider": p.provider,
        "catalog_date": p.catalog_date,
        "gpu_slug": p.gpu_slug,
        "gpu_name": p.gpu_name,
        "plan_days": plan.plan_days if plan else None,
        "cards_per_lot": p.cards_per_lot,
        "price_per_lot": amount if plan else None,
        "market": meter.market if meter else None,
        "price_per_hour": amount if meter else None,
        "billing_seconds": meter.billing_seconds if meter else None,
        "currency": p.currency,
        "source": p.source,
    }


COMMANDS = [tariffs]
