"""Imports into a workbook: a provider's billing export (``ledger import``), and the
attempts of another machine's copy of the campaign (``merge``).

Each import reads the whole file first and writes nothing when any line is
bad; it adds rows to the workbook's own sheet and leaves the derived sheets
as they were (``iteralab report`` recomputes the Settlement).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.group()
def ledger() -> None:
    """The provider's billing export, reconciled with the Rentals sheet."""


@ledger.command("import")
@click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("export", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="FIELD=HEADER",
    help="Which header holds a field (date, description, reference, amount, "
    "currency) when the export names it otherwise, e.g. --column amount=Total; "
    "repeat it.",
)
@click.option(
    "--tz",
    help="The export's time zone, for date-times written without a UTC offset, e.g. "
    "Europe/Paris or +01:00 (without it such a date-time is refused).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-ledger/1 JSON document (docs/json.md).",
)
def import_ledger(
    workbook: Path, export: Path, columns: tuple[str, ...], tz: str | None, as_json: bool
) -> None:
    """Read a billing export (CSV) into the Ledger sheet and reconcile it with Rentals.

    Lines are matched with Rentals.reference: matched, amount differs, in the
    workbook but not in the ledger, in the ledger but not in the workbook.
    Importing a file again replaces its earlier lines. Writes the Ledger sheet
    only; `iteralab report` shows the differences in the Settlement and report.md.
    """
    from toolkit import editing
    from toolkit.money import tariffs
    from toolkit.money.ledger import LedgerError

    with tariffs.translated(LedgerError):  # an unknown --tz
        zone = tariffs.rules.parse_zone(tz)
    done = editing.import_ledger(workbook, export, columns, zone)
    if as_json:
        from toolkit.commands import documents

        documents.emit(documents.ledger_document(workbook, export, done))
        return
    click.echo(
        f"imported {len(done.entries)} line(s) from {export.name} into {workbook.name} "
        f"(Ledger sheet, {done.kept} earlier line(s) kept)"
    )
    for rental_id, text in done.status.items():
        click.echo(f"  {rental_id}: {text}")
    for entry in done.extra:
        click.echo(
            f"  in the ledger, not in the workbook: {entry.get('reference') or '-'} "
            f"{_amount_text(entry)} ({entry.get('source')})"
        )
    click.echo(f"run `iteralab report {workbook}` to show them in the Settlement")


def _amount_text(entry: dict[str, Any]) -> str:
    """A ledger line's amount as the JSON document and the report write it (``4.20 USD``)."""
    from toolkit.money import incurred, tariffs

    number = incurred.decimal(entry.get("amount"))
    if number is None:  # not an amount the rules can round: shown as read
        return f"{entry.get('amount')} {entry.get('currency')}"
    return tariffs.money(number, str(entry.get("currency")))


@click.command()
@click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("other", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-merge/1 JSON document (docs/json.md).",
)
def merge(workbook: Path, other: Path, as_json: bool) -> None:
    """Join the attempts another rented machine ran on its copy of this campaign.

    OTHER is that copy's workbook (its NAME.journal.jsonl and predictions folder
    beside it) or its journal. Each record must run under a protocol this
    workbook locked, its predictions file must hash as recorded; an id already
    here with other content is refused, never overwritten. Any problem refuses
    the whole merge. The attempts join the chain with their machine (Manifest
    host) and the merge is logged in Audit; merging twice adds nothing.
    """
    from toolkit import editing

    plan = editing.merge(workbook, other)
    if as_json:
        from toolkit.commands import documents

        documents.emit(documents.merge_document(workbook, plan))
        return
    if not plan.records:
        click.echo(
            f"nothing to merge from {plan.source}: {plan.already} attempt(s) already "
            f"in {workbook.name}"
        )
        return
    click.echo(
        f"merged {len(plan.records)} attempt(s) from {plan.source} into {workbook.name} "
        f"(ran on {', '.join(plan.hosts)}); {len(plan.files)} predictions file(s) "
        f"copied; {plan.already} already here; logged in Audit"
    )
    click.echo(f"run `iteralab report {workbook}` to compare them")


COMMANDS = [ledger, merge]
