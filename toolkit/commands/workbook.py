"""Workbook commands: init, validate, lock, amend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolkit.findings import Finding

if TYPE_CHECKING:
    from toolkit.report.validation import Validation

WORKBOOK = click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))
#: What to do with a new workbook (``{workbook}``: its path).
NEXT_STEPS = (
    "fill Protocol, Variants, Rentals and Schedule (blue cells), then "
    "`iteralab validate {workbook}`, `iteralab lock {workbook}` and `iteralab "
    "check {workbook}`; after the runs, confirm the outputs you checked in "
    "Verification"
)


@click.command()
@WORKBOOK
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-init/1 JSON document (docs/json.md).",
)
def init(workbook: Path, as_json: bool) -> None:
    """Create a new campaign WORKBOOK from the template (never overwrites).

    Its Tariffs sheet holds the shipped catalog snapshot (tariffs/tarifs-forfaits.csv),
    so that the Settlement can price flat plans from the start; edit it to your quotes.
    """
    from toolkit.money import new_workbook

    catalog = new_workbook.create(workbook)
    following = NEXT_STEPS.format(workbook=workbook)
    if as_json:
        from toolkit.commands import documents

        documents.emit(
            documents.init_document(
                workbook, catalog.dates(), len(catalog.plans), following, len(catalog.meters)
            )
        )
        return
    metered = sorted({m.catalog_date for m in catalog.meters})
    by_hour = (
        f"; {len(catalog.meters)} metered price(s) of {', '.join(metered)}, EXAMPLE figures"
        if metered
        else ""
    )
    click.echo(
        f"created {workbook} (Tariffs: the shipped catalog of "
        f"{', '.join(catalog.dates())}, {len(catalog.plans)} plan(s){by_hour})"
    )
    click.echo(f"next: {following}")


@click.command()
@WORKBOOK
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-validate/1 JSON document (docs/json.md).",
)
def validate(workbook: Path, as_json: bool) -> None:
    """Check every sheet of WORKBOOK; exit 1 when anything is wrong.

    Lists each finding with its sheet, Excel row, column, check and what to do.
    """
    from toolkit.evidence.schemas_beside import SchemasBeside

    with SchemasBeside() as schemas:  # pandera's imports beside this command's own
        from toolkit.report.validation import validate_workbook
        from toolkit.reporting import default_folder, unfinished

        checked = validate_workbook(workbook, schemas)
    if as_json:
        from toolkit.commands.documents import validate_document

        click.echo(json.dumps(validate_document(workbook, checked), indent=2))
    else:
        _say_validation(workbook, checked)
    stopped = unfinished(default_folder(workbook))
    if stopped is not None:  # the evidence is whole; the reviewer's folder is not
        click.echo(f"note: {stopped}: run `iteralab report {workbook}` again", err=True)
    if not checked.valid:
        raise click.exceptions.Exit(1)


def _say_validation(workbook: Path, checked: Validation) -> None:
    """The findings as a table (or that there are none), then the notes and warnings."""
    findings = checked.findings
    if findings:
        click.echo(_table(findings))
        sheets = len({f.sheet for f in findings})
        click.echo(f"{len(findings)} finding(s) in {sheets} sheet(s): {workbook} is not valid")
    else:
        click.echo(
            f"{workbook}: valid ({len(checked.data.tables['Variants'])} variants, "
            f"{len(checked.data.tables['Attempts'])} attempts, no findings)"
        )
    if checked.inferred is not None:  # older rows: judged as their cells allow
        click.echo(f"note: {checked.inferred}", err=True)
    for note in checked.notes:
        click.echo(f"note: {note}", err=True)
    for warning in checked.warnings:
        click.echo(f"warning: {warning}", err=True)


def _table(findings: list[Finding]) -> str:
    rows = [("sheet", "row", "column", "check", "message")]
    rows += [
        (f.sheet, "" if f.row is None else str(f.row), f.column, f.check, f.message)
        for f in findings
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:4])) + "  " + r[4] for r in rows
    )


@click.command()
@WORKBOOK
@click.option(
    "--acknowledge-overlap",
    "acknowledge",
    metavar="REASON",
    help="Lock although the tuning data shares ids or texts with the corpus, "
    "for this reason (logged in Audit; validate keeps naming the overlap).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-lock/1 JSON document (docs/json.md).",
)
def lock(workbook: Path, acknowledge: str | None, as_json: bool) -> None:
    """Lock Protocol and Variants of WORKBOOK before any measurement.

    Records a SHA-256 of their content, the time and the tool version in the
    Audit sheet; later edits show up in `validate` and stop `run` and `report`.
    Refuses tuning data that overlaps the corpus unless --acknowledge-overlap
    says why. Writes only the Audit sheet: Summary, Settlement and the
    Decision memo stay as they were until `run` or `report`.
    """
    from toolkit.editing import change
    from toolkit.evidence import locking
    from toolkit.report.protocol_warnings import protocol_warnings

    with change(workbook, refresh_derived=False) as edit:
        sha = locking.lock(edit.data, workbook, acknowledge_overlap=acknowledge)
        note = edit.data.tables["Audit"][-1].get("reason")
        warnings = protocol_warnings(edit.data, workbook)
    if as_json:
        from toolkit.commands import documents

        documents.emit(documents.lock_document(workbook, sha, note, warnings))
        return
    click.echo(f"locked {workbook}: protocol sha256 {sha}")
    if note:
        click.echo(f"logged in Audit: {note}")
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)


@click.command()
@WORKBOOK
@click.option("--reason", required=True, help="Why the locked protocol changes (logged).")
@click.option(
    "--acknowledge-overlap",
    "acknowledge",
    metavar="REASON",
    help="Amend although the tuning data shares ids or texts with the corpus, "
    "for this reason (logged in Audit; validate keeps naming the overlap).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-amend/1 JSON document (docs/json.md).",
)
def amend(workbook: Path, reason: str, acknowledge: str | None, as_json: bool) -> None:
    """Record edits to a locked protocol in WORKBOOK, with their reason.

    Earlier attempts are marked as measured under the old protocol: a
    changed threshold needs a new, independent evaluation. Writes the Audit
    sheet and the pre_amendment marks; the derived sheets wait for `report`.
    """
    from toolkit.editing import change
    from toolkit.evidence import locking

    with change(workbook, refresh_derived=False) as edit:
        sha, changed, marked = locking.amend(
            edit.data, reason, workbook, acknowledge_overlap=acknowledge
        )
        logged = edit.data.tables["Audit"][-1].get("reason")
    if as_json:
        from toolkit.commands import documents

        documents.emit(documents.amend_document(workbook, sha, changed, marked, logged))
        return
    click.echo(f"amended {workbook}: protocol sha256 {sha}")
    if acknowledge is not None:
        click.echo(f"logged in Audit: {logged}")
    for finding in changed:
        click.echo(f"  changed {finding.location()}")
    click.echo(f"{marked} earlier attempt(s) marked pre_amendment = yes")


COMMANDS = [init, validate, lock, amend]
