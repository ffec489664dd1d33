"""Integrity commands: exclude (the one allowed rewrite of an attempt row), verify (the
chains, and a campaign head kept outside the folder)."""

from __future__ import annotations

from pathlib import Path

import click

WORKBOOK = click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))


@click.command()
@WORKBOOK
@click.argument("attempt_id")
@click.option(
    "--reason", required=True, help="The documented external cause (logged in the Audit sheet)."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-exclude/1 JSON document (docs/json.md).",
)
def exclude(workbook: Path, attempt_id: str, reason: str, as_json: bool) -> None:
    """Exclude ATTEMPT_ID of WORKBOOK for a documented external cause.

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


@click.command()
@WORKBOOK
@click.option(
    "--head",
    "head",
    metavar="HASH",
    help="A campaign head kept outside the folder (report.md and the Decision memo "
    "print it): say whether the workbook still holds that state.",
)
@click.option(
    "--reanchor",
    is_flag=True,
    help="Anchor the chains to the rows as they stand (a copy saved over the workbook whose "
    "edits are to be kept), logged in Audit with --reason and the anchor it replaces.",
)
@click.option("--reason", help="Why the anchor moves (with --reanchor; logged in Audit).")
def verify(workbook: Path, head: str | None, reanchor: bool, reason: str | None) -> None:
    """Check WORKBOOK's chains and print its campaign head; with --head, check a kept one.

    The campaign head is one SHA-256 over the attempt rows' and the Audit rows' hash
    chains. Everything inside the campaign folder can be re-sealed by someone who runs
    iteralab's own functions, so keep the head elsewhere (a message, a ticket) when you
    review: `verify --head HASH` then shows whether the workbook still begins with the state
    you saw (exit 0) or was rewritten since (exit 1).

    With --reanchor --reason "...": after a spreadsheet program saved a copy opened
    mid-run over the workbook, `iteralab ingest` restores the attempt rows the journal
    holds; this moves the anchor to the rows as they stand, keeping the copy's edits, and
    logs the reason and the old anchor in Audit (rows only that copy lacked stay lost).
    """
    from toolkit.errors import EvidenceInvalid
    from toolkit.evidence.audit_chain import campaign_head, kept_head
    from toolkit.evidence.integrity import record_checks
    from toolkit.workbook import store

    _reanchor_if_asked(workbook, reanchor, reason)
    data = store.read(workbook)
    findings = record_checks(data, workbook)
    for finding in findings:
        click.echo(f"{finding.location()}: {finding.message}")
    now = campaign_head(data)
    attempts, audit = len(data.tables["Attempts"]), len(data.tables["Audit"])
    click.echo(f"campaign head: {now} ({attempts} attempt row(s), {audit} Audit row(s))")
    if head is not None:
        click.echo(kept_head(data, head, workbook))
    if findings:
        raise EvidenceInvalid(
            f"{workbook}: {len(findings)} integrity finding(s) above",
            hint="`iteralab validate` says what to restore for each",
        )


def _reanchor_if_asked(workbook: Path, reanchor: bool, reason: str | None) -> None:
    """Move the anchor when --reanchor asks it (with its reason); refuse a lone --reason."""
    from toolkit.errors import UsageError

    if reanchor:
        from toolkit.editing import reanchor as move_anchor

        if reason is None:
            raise UsageError("--reanchor needs --reason", hint='e.g. --reason "..."')
        settled = move_anchor(workbook, reason)
        click.echo(
            f"re-anchored {workbook} ({len(settled)} anchor finding(s) settled); "
            "logged in the Audit sheet (action reanchor)"
        )
    elif reason is not None:
        raise UsageError("--reason goes with --reanchor", hint="add --reanchor, or drop --reason")


COMMANDS = [exclude, verify]
