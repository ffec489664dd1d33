"""The JSON documents that `--json` prints: one versioned format per command (docs/json.md).

The same numbers as the text output and the workbook: amounts as strings with
their currency ("220.00 USD"), durations in seconds, an empty measurement as
``null`` beside its reason. Only the document goes to stdout; progress and
warnings go to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolkit import layout
from toolkit.evidence.ingest import IngestResult
from toolkit.findings import Finding
from toolkit.money import schedule
from toolkit.money.quote import Quote
from toolkit.money.tariffs import rules
from toolkit.report.costs import Costing
from toolkit.report.refresh import Refreshed
from toolkit.report.reviewer import Outputs
from toolkit.report.stats import Separation
from toolkit.report.summary import VariantStats

if TYPE_CHECKING:  # for the checker: these load where they run (pandera, the driver)
    from toolkit.editing import LedgerImport
    from toolkit.report.validation import Validation
    from toolkit.runner.driver.campaign import Result

REPORT = "iteralab-report/1"
ATTEMPT = "iteralab-attempt/1"
RUN = "iteralab-run/1"
INGEST = "iteralab-ingest/1"
SCHEDULE = "iteralab-schedule/1"
COST = "iteralab-cost/1"
LEDGER = "iteralab-ledger/1"
MERGE = "iteralab-merge/1"
LOCK = "iteralab-lock/1"
AMEND = "iteralab-amend/1"
EXCLUDE = "iteralab-exclude/1"
INIT = "iteralab-init/1"
VALIDATE = "iteralab-validate/1"
ENV = "iteralab-env/1"
MEMORY_ESTIMATE = "iteralab-memory-estimate/1"


def emit(document: dict[str, Any]) -> None:
    """Print one document (or one JSON line of a stream) on stdout."""
    click.echo(json.dumps(document, ensure_ascii=False, sort_keys=False))


def money(amount: Decimal | None) -> str | None:
    """An amount in USD exactly (at least the cents), no thousands separator:
    ``"2071.00 USD"``, ``"110.004 USD"``."""
    return None if amount is None else f"{rules.amount_text(amount, grouping=False)} USD"


def amount(value: Any, currency: Any) -> str | None:
    """An amount in its own currency, exactly (at least the cents): ``"110.00 USD"``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    return f"{rules.amount_text(number, grouping=False)} {currency or '(no currency)'}"


def finding(f: Finding) -> dict[str, Any]:
    """A finding: sheet, Excel row, column, check, message."""
    return f.as_dict()


def report_document(workbook: Path, result: Refreshed, outputs: Outputs) -> dict[str, Any]:
    """What `iteralab report` found: per variant, the pairs, the costs, the memo draft."""
    return {
        "format": REPORT,
        "workbook": str(workbook),
        "protocol_sha256": result.protocol_sha256,
        "findings": [finding(f) for f in result.findings],
        "variants": [_variant_entry(st) for st in result.stats],
        "separations": [_separation_entry(s) for s in result.decision.separations],
        "costs": [_cost_entry(c) for c in result.costs],
        "incurred": [_incurred_entry(r) for r in result.incurred],
        "money_comparisons": [m.sentence() for m in result.decision.money],
        "decision": dict(result.decision.suggestions),
        "notes": list(result.notes),
        "workbook_saved": outputs.workbook_saved,
        "files": [str(p) for p in outputs.files],
        "png_skipped": outputs.png_skipped,
    }


def _variant_entry(st: VariantStats) -> dict[str, Any]:
    """One variant's counts, runs, median, min, max and quality."""
    return {
        "variant_id": st.variant_id,
        "series": st.series,
        "attempts": st.attempts,
        "completed": st.completed,
        "failed": st.failed,
        "interrupted": st.interrupted,
        "excluded": st.excluded,
        "pre_amendment": st.pre_amendment,
        "successes": st.successes,
        "runs_s": list(st.runs),
        "median_s": st.median,
        "min_s": st.minimum,
        "max_s": st.maximum,
        "median_s_reason": None if st.median is not None else "no data: no successful run",
        "quality_verdict": st.quality_verdict,
        "equal_quality": st.equal_quality,
        "metric_value": st.metric_value,
    }


def _separation_entry(s: Separation) -> dict[str, Any]:
    """One pair of variants: the verdict, its reason and advice, the gap and spread."""
    return {
        "first": s.first,
        "second": s.second,
        "verdict": s.verdict,
        "reason": s.reason,
        "advice": s.advice,
        "faster": s.faster,
        "gap_s": s.gap_s,
        "spread_s": s.spread_s,
        "chance": s.chance,
    }


def _cost_entry(c: Costing) -> dict[str, Any]:
    """One configuration's Settlement decision part: plan, budget, projection, forecast."""
    cost = c.forecast_per_expected if c.stats.equal_quality else None
    return {
        "variant_id": c.stats.variant_id,
        "gpu_slug": c.gpu_slug,
        "lots": c.lots,
        "plan_days": getattr(c.plan, "plan_days", None),
        "billed_seconds": c.billed_seconds,
        "rental_id": c.rental_id,
        "budget": money(c.budget),
        "campaign_s": c.stats.campaign,
        "projected_corpora": c.projected_corpora,
        "projected_hours_per_lot": (
            None if c.projected_hours is None else float(c.projected_hours)
        ),
        "deadline_check": c.deadline_check,
        "runner_accepted_corpora": c.runner_accepted,
        "accepted_corpora": c.accepted_count,
        "accepted_corpora_reason": None if c.accepted_count is not None else c.confirm_reason,
        "projected_cost_per_expected": money(None if cost is None else rules.to_cent(cost)),
        "projected_cost_per_expected_reason": None if cost is not None else c.cost_text,
    }


def _incurred_entry(r: dict[str, Any]) -> dict[str, Any]:
    """One incurred row of the Settlement: its amount, or why none, and the ledger's word."""
    return {
        "item": r.get("item"),
        "kind": r.get("kind"),
        "variants": r.get("variants"),
        "amount": amount(_plain(r.get("amount")), r.get("currency")),
        "amount_reason": r.get("grounds") if _plain(r.get("amount")) in (None, "") else None,
        "ledger_status": r.get("ledger_status"),
        # A total's incurred amount / the corpora accepted and confirmed (the bridge
        # is in its reason when there is no figure); null on the other rows.
        "spent_per_accepted": amount(_cents(r.get("spent_per_accepted")), r.get("currency")),
        "spent_per_accepted_reason": _spent_reason(r),
    }


def _plain(cell: Any) -> Any:
    return getattr(cell, "value", cell)


def _cents(cell: Any) -> Decimal | None:
    """A quotient to the cent, as the CLI prints it; None when the cell holds no number."""
    value = _plain(cell)
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    return rules.to_cent(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))


def _spent_reason(row: dict[str, Any]) -> str | None:
    """Why a total has no spent per accepted corpus (``undefined``: none confirmed; empty:
    an incomplete total, or nothing confirmed yet): its grounds, which hold the bridge."""
    if row.get("kind") != "total incurred":
        return None
    spent = _plain(row.get("spent_per_accepted"))
    if isinstance(spent, (int, float, Decimal)) and not isinstance(spent, bool):
        return None
    return (f"{spent}: " if spent else "") + str(row.get("grounds") or "")


def ledger_document(workbook: Path, export: Path, done: LedgerImport) -> dict[str, Any]:
    """What `iteralab ledger import` read, and the reconciliation with Rentals."""
    return {
        "format": LEDGER,
        "workbook": str(workbook),
        "export": str(export),
        "imported": len(done.entries),
        "rentals": [{"rental_id": k, "status": v} for k, v in done.status.items()],
        "ledger_only": [
            {
                "date": e.get("date"),
                "reference": e.get("reference"),
                "description": e.get("description"),
                "amount": amount(e.get("amount"), e.get("currency")),
                "source": e.get("source"),
            }
            for e in done.extra
        ],
    }


def merge_document(workbook: Path, plan: Any) -> dict[str, Any]:
    """What `iteralab merge` joined, and from where."""
    return {
        "format": MERGE,
        "workbook": str(workbook),
        "source": str(plan.source),
        "journal_sha256": plan.journal_sha256,
        "hosts": plan.hosts,
        "merged": [str(r["attempt"].get("attempt_id")) for r in plan.records],
        "files_copied": len(plan.files),
        "already": plan.already,
    }


def attempt_document(record: dict[str, Any], own: Sequence[str] = ()) -> dict[str, Any]:
    """One finished attempt, as `iteralab run --json` streams it; also ``own``, the columns
    only the Protocol's task kind fills (generation's, serving's), each beside its reason,
    keyed as the Attempts sheet names them."""
    row = record["attempt"]
    keys = [
        "attempt_id",
        "variant_id",
        "repetition",
        "status",
        "items_completed",
        "measured_s",
        "measured_s_reason",
        "metric_value",
        "metric_value_reason",
        "quality_verdict",
        "ids_match",
        "corpus_accepted",
        "predictions_path",
    ]
    for name in own:
        keys += [name, layout.ATTEMPTS.column(name).reason]
    return {"format": ATTEMPT, **{k: row.get(k) for k in [*keys, "notes"]}}


def run_document(workbook: Path, result: Result) -> dict[str, Any]:
    """The summary line that ends `iteralab run --json`: counts by status (``interrupted``
    counts rows), ``stopped`` when Ctrl-C ended the run, and ``time``: where the wall time
    went (null when nothing ran, or on a cluster)."""
    return {
        "format": RUN,
        "workbook": str(workbook),
        "recorded": len(result.records),
        **result.counts(),
        "elapsed_s": round(result.elapsed_s, 3),
        "predictions": str(result.predictions_dir),
        "stopped": result.interrupted,
        "ingest_pending": result.ingest_pending,
        "time": result.time,
    }


def init_document(
    workbook: Path, dates: list[str], plans: int, following: str, metered: int = 0
) -> dict[str, Any]:
    """What `iteralab init` created: the workbook, the Tariffs it starts with (flat plans and
    metered prices), what next."""
    return {
        "format": INIT,
        "workbook": str(workbook),
        "tariff_snapshots": dates,
        "tariff_plans": plans,
        "tariff_metered": metered,
        "next": following,
    }


def validate_document(workbook: Path, checked: Validation) -> dict[str, Any]:
    """What `iteralab validate` found: every finding, the notes and the protocol's warnings."""
    return {
        "format": VALIDATE,
        "workbook": str(workbook),
        "valid": checked.valid,
        "findings": [f.as_dict() for f in checked.findings],
        "notes": ([] if checked.inferred is None else [checked.inferred]) + checked.notes,
        "warnings": checked.warnings,
    }


def lock_document(
    workbook: Path, sha: str, logged: Any, warnings: Sequence[str] = ()
) -> dict[str, Any]:
    """What `iteralab lock` recorded: the protocol's hash, the Audit reason it logged, and
    what the locked protocol cannot answer (repetitions, subgroups)."""
    return {
        "format": LOCK,
        "workbook": str(workbook),
        "protocol_sha256": sha,
        "logged_in_audit": logged or None,
        "warnings": list(warnings),
    }


def amend_document(
    workbook: Path, sha: str, changed: list[Finding], marked: int, logged: Any
) -> dict[str, Any]:
    """What `iteralab amend` recorded: the new hash, each changed cell, the attempts marked."""
    return {
        "format": AMEND,
        "workbook": str(workbook),
        "protocol_sha256": sha,
        "changed": [finding(f) for f in changed],
        "pre_amendment_marked": marked,
        "logged_in_audit": logged or None,
    }


def exclude_document(workbook: Path, attempt_id: str, row: int, reason: str) -> dict[str, Any]:
    """What `iteralab exclude` recorded: the attempt, its Excel row, the logged cause."""
    return {
        "format": EXCLUDE,
        "workbook": str(workbook),
        "attempt_id": attempt_id,
        "row": row,
        "reason": reason,
        "logged_in_audit": True,
    }


def ingest_document(workbook: Path, journal: Path, result: IngestResult) -> dict[str, Any]:
    """What `iteralab ingest` added."""
    return {
        "format": INGEST,
        "workbook": str(workbook),
        "journal": str(journal),
        "attempts_added": result.attempts_added,
        "manifests_added": result.manifests_added,
        "already": result.already,
        "refused": dict(result.refused),
    }


def metered_document(catalog: rules.Catalog, request: rules.Request, name: str) -> dict[str, Any]:
    """`iteralab cost --metered --json`: each metered price of the GPU with the schedule's
    billed seconds and charge (checked by :func:`calcul_forfaits.report` first)."""
    hours, _ = rules.schedule_hours(request)
    document: dict[str, Any] = {"format": COST, "catalog": name, "metered": []}
    if request.gpu is None or hours is None:  # --metered --list
        return document | {"metered": [_meter(m) for m in catalog.meters]}
    lots = int(request.lots)
    seconds = int((hours * 3600).to_integral_value(rounding="ROUND_CEILING"))
    found = catalog.metered(request.gpu, request.catalog_date)
    document.update({"schedule_seconds": seconds, "lots": lots})
    document["metered"] = [
        _meter(m)
        | {
            "billed_seconds": m.billed_seconds(seconds),
            "charge": amount(m.charge(seconds, lots), m.currency),
        }
        for m in found
        if request.market in (None, m.market)
    ]
    return document


def _meter(m: rules.Meter) -> dict[str, Any]:
    return {
        "gpu_slug": m.gpu_slug,
        "catalog_date": m.catalog_date,
        "market": m.market,
        "cards_per_lot": m.cards_per_lot,
        "price_per_hour": amount(m.price_per_hour, m.currency),
        "billing_seconds": m.billing_seconds,
        "provider": m.provider or None,
        "source": m.source,
    }


def cost_document(answer: Quote, name: str) -> dict[str, Any]:
    """`iteralab cost`: the plan priced for the lots asked, or the catalog's plans."""
    document: dict[str, Any] = {"format": COST, "catalog": name, "snapshot": answer.snapshot}
    priced = answer.priced
    if priced is None:
        document["plans"] = [_plan(p) for p in answer.plans]
    else:
        currency = priced.plan.currency
        document |= {
            "plan": _plan(priced.plan),
            "lots": priced.lots,
            "cards": priced.lots * priced.plan.cards_per_lot,
            "flat_price": amount(priced.total, currency),
            "billing": "flat: the whole plan is due however short the run",
            "accepted_results": priced.accepted,
            "cost_per_accepted": amount(priced.per_accepted, currency),
            "cost_per_accepted_reason": priced.per_accepted_reason,
        }
    if answer.schedule_hours is not None:
        document["schedule_hours"] = float(answer.schedule_hours)
        document["coverage"] = [
            {"plan_days": c.days, "hours": c.hours, "covers": c.covers} for c in answer.coverage
        ]
    return document


def _plan(plan: rules.Plan) -> dict[str, Any]:
    return {
        "gpu_slug": plan.gpu_slug,
        "gpu_name": plan.gpu_name,
        "plan_days": plan.plan_days,
        "cards_per_lot": plan.cards_per_lot,
        "price_per_lot": amount(plan.price_per_lot_usd, plan.currency),
        "provider": plan.provider or None,
        "source": plan.source,
    }


def schedule_document(win: schedule.Window) -> dict[str, Any]:
    """The access window and the plans that cover it."""
    return {
        "format": SCHEDULE,
        "phases": [
            {
                "phase": p.name,
                "start": rules.stamp(p.start),
                "end": rules.stamp(p.end),
                "hours": float(Decimal(p.seconds) / 3600),
            }
            for p in win.phases
        ],
        "start": rules.stamp(win.start),
        "end": rules.stamp(win.end),
        "window_hours": float(win.hours),
        "span_hours": float(win.span_hours),
        "plans": [
            {
                "plan_days": c.days,
                "hours": c.hours,
                "covers": c.covers,
                "short_by_hours": float(c.short_by) if not c.covers else None,
            }
            for c in rules.coverage(win.span_hours)
        ],
    }
