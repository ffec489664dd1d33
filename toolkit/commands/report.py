"""The ``report`` command: refresh the computed sheets and write the reviewer's folder."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # for the checker: the modules load in the bodies (a fast --help)
    from toolkit.evidence.schemas_beside import SchemasBeside
    from toolkit.report.refresh import Refreshed
    from toolkit.report.reviewer import Outputs


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]


def _named_folder(value: str | None) -> Path | None:
    """``--out ""`` names no folder (it would be the current one): refused."""
    if value is not None and not value.strip():
        raise click.BadParameter("names no folder; give one, or leave --out out")
    return None if value is None else Path(value)


@click.command()
@click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "folder",
    type=click.Path(file_okay=False),
    callback=lambda ctx, param, value: _named_folder(value),
    help="Folder for report.md, the PNG charts and the CSV archive. "
    "[default: WORKBOOK's stem + _report/, beside it]",
)
@click.option("--no-png", is_flag=True, help="Skip the PNG charts (matplotlib).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-report/1 JSON document (docs/json.md) instead of text.",
)
def report(workbook: Path, folder: Path | None, no_png: bool, as_json: bool = False) -> None:
    """Refresh Summary, Memory, Settlement and the Decision draft of WORKBOOK from its attempts.

    Validates WORKBOOK first, as `iteralab validate` does; findings are printed
    and stated in report.md, but only an unlocked or edited protocol stops it.
    Medians, mins, maxes and costs are live formulas with the values this
    generator computed; the protocol must be locked and unchanged. Memo fields
    you edited are kept. Also writes report.md, charts and the archive list.
    """
    from toolkit.evidence.schemas_beside import SchemasBeside

    with SchemasBeside() as schemas:  # pandera's imports beside this command's own
        result, outputs = _build(workbook, folder, not no_png, schemas)
    if as_json:
        from toolkit.commands import documents

        for finding in result.findings[:5]:
            click.echo(f"warning: {finding.location()}: {finding.message}", err=True)
        documents.emit(documents.report_document(workbook, result, outputs))
        return
    _echo_saved_and_findings(workbook, result, outputs)
    for line in _table(_stats_rows(result)):
        click.echo(line)
    _echo_separations(result)
    _echo_incurred(result)
    _echo_decision(result)
    names = ", ".join(f.name for f in outputs.files)
    click.echo(f"wrote {outputs.folder}/: {names}")
    if outputs.png_skipped:
        click.echo(f"note: {outputs.png_skipped}")


def _build(
    workbook: Path, folder: Path | None, pngs: bool, schemas: SchemasBeside
) -> tuple[Refreshed, Outputs]:
    """The lost attempts put on the record, a note on a report stopped half-way, then the
    report (:func:`toolkit.reporting.build`)."""
    from toolkit.reporting import build, default_folder, unfinished

    _record_lost(workbook)
    earlier = unfinished(folder or default_folder(workbook))
    if earlier is not None:
        click.echo(f"note: {earlier}; this report writes a whole one", err=True)
    return build(workbook, folder, pngs=pngs, schemas=schemas)


def _record_lost(workbook: Path) -> None:
    """Attempts killed with their run go on the record, as interrupted, before anything is
    computed; says which on stderr."""
    from toolkit import editing
    from toolkit.runner.lost import record_lost_attempts

    lost = record_lost_attempts(workbook) if workbook.exists() else []
    if lost:
        editing.ingest(workbook, refresh_derived=False)
        click.echo(
            f"recorded {len(lost)} attempt(s) killed with their run as interrupted: "
            + ", ".join(str(r["attempt"]["attempt_id"]) for r in lost),
            err=True,
        )


def _echo_saved_and_findings(workbook: Path, result: Refreshed, outputs: Outputs) -> None:
    """Whether the workbook was saved, and the findings it holds (the first five on stderr)."""
    if outputs.workbook_saved:
        click.echo(
            f"refreshed {workbook} (protocol {result.protocol_sha256[:12]}): Summary, "
            "Memory, Settlement, Schedule, Decision draft"
        )
    else:
        click.echo(
            f"up to date: {workbook} (protocol {result.protocol_sha256[:12]}) already "
            "holds these figures; nothing saved"
        )
    if result.findings:
        for finding in result.findings[:5]:
            click.echo(f"warning: {finding.location()}: {finding.message}", err=True)
        click.echo(
            f"warning: {len(result.findings)} finding(s) in the workbook as read: the "
            f"report states them; `iteralab validate {workbook}` lists them all",
            err=True,
        )
    else:
        click.echo("integrity: no findings (validate's checks, every predictions file hashed)")


#: The per-variant table's header.
STATS_HEADER: tuple[str, ...] = (
    "variant",
    "attempts",
    "successes",
    "failed",
    "interrupted",
    "excluded",
    "median_s",
    "min_s",
    "max_s",
    "quality",
    "equal quality",
)


def _stats_rows(result: Refreshed) -> list[tuple[str, ...]]:
    """The per-variant table: header, then one row per variant."""
    rows: list[tuple[str, ...]] = [STATS_HEADER]
    return rows + [
        (
            st.variant_id,
            str(st.attempts),
            str(st.successes),
            str(st.failed),
            str(st.interrupted),
            str(st.excluded),
            _seconds(st.median) if st.median is not None else "no data",
            _seconds(st.minimum),
            _seconds(st.maximum),
            st.quality_verdict,
            "yes" if st.equal_quality else "no",
        )
        for st in result.stats
    ]


def _echo_separations(result: Refreshed) -> None:
    click.echo("separation:")
    for s in result.decision.separations:
        click.echo(f"  {s.sentence()}")
    if not result.decision.separations:
        click.echo("  no pair of variants in one series")


def _echo_incurred(result: Refreshed) -> None:
    """What was spent, each rental once, with its grounds; a total with its bridge."""
    from toolkit.money.incurred import BRIDGE

    click.echo("incurred (each rental once):")
    for row in result.incurred:
        click.echo(
            f"  {row.get('item')}: {_amount(row)}"
            + (f" [{row['ledger_status']}]" if row.get("ledger_status") else "")
        )
        if row.get("kind") != "total incurred":
            click.echo(f"    {row.get('grounds')}")
        else:  # the bridge: incurred total -> accepted corpora -> spent per corpus
            click.echo(
                f"    spent per accepted corpus: {str(row.get('grounds')).split(BRIDGE, 1)[-1]}"
            )
    if not result.incurred:
        click.echo("  nothing: no Rentals row (each lot rented, once)")


def _echo_decision(result: Refreshed) -> None:
    """The projection per configuration, the money comparisons, the notes and the draft."""
    from toolkit.report.stats import SEPARATED

    click.echo(
        "decision (projection of the expected outputs; projected cost per expected "
        "corpus, a forecast):"
    )
    for c in result.costs:
        plan = f"{c.lots} lot(s) x {c.plan_text}, " if c.plan else ""
        click.echo(f"  {c.stats.variant_id}: {plan}{c.cost_text}")
    for m in result.decision.money:
        click.echo(f"  money: {m.sentence()}")
    for note in result.notes:
        click.echo(f"note: {note}")
    memo = result.decision.suggestions["chosen_configuration"]
    click.echo(f"decision draft: {memo}")
    if result.decision.kept_fields:
        click.echo(f"  kept as typed: {', '.join(result.decision.kept_fields)}")
    separated = sum(s.verdict == SEPARATED for s in result.decision.separations)
    click.echo(f"{separated} of {len(result.decision.separations)} pair(s) separated")


def _amount(row: dict[str, object]) -> str:
    value = getattr(row.get("amount"), "value", row.get("amount"))
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        cents = Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        return f"{cents:,} {row.get('currency') or ''}"
    return str(value or "no amount (see the Settlement's grounds)")


COMMANDS = [report]
