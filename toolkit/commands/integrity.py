"""Integrity commands: exclude (the one allowed rewrite of an attempt row)."""

from __future__ import annotations

from pathlib import Path

import click

WORKBOOK = click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))


@click.command()
@WORKBOOK
@click.argument("attempt_id")
@click.option("--reason", required=True,
              help="The documented external cause (logged in the Audit sheet).")
@click.option("--json", "as_json", is_flag=True,
              help="Print one iteralab-exclude/1 JSON document (docs/json.md).")
def exclude(workbook: Path, attempt_id: str, reason: str, as_json: bool) -> None:
    """Exclude ATTEMPT_ID of WORKBOOK for a documented external cause (R14).

    Sets excluded = yes and exclusion_reason, and logs the exclusion in the
    Audit sheet. The row stays, its hash chain unbroken; the same exclusion
    rule applies to every variant. An exclusion is never undone. Writes only
    that row and the Audit sheet; Summary and Settlement change at `report`.
    """
    from toolkit.editing import change
    from toolkit.evidence import audit

    with change(workbook, refresh_derived=False) as edit:
        row = audit.exclude(edit.data, attempt_id, reason)
    if as_json:
        from toolkit.commands import documents

        documents.emit(documents.exclude_document(workbook, attempt_id, row, reason))
        return
    click.echo(f"excluded attempt {attempt_id} (Attempts!{row}) in {workbook}")
    click.echo("logged in the Audit sheet (action exclude)")


COMMANDS = [exclude]
