"""A realistic constructed campaign for the report tests (until and beside the real demo).

Series 1: batch 1, 4 and 8 in fp32 on a rented RTX 4090; series 2: batch 8 on a
B200 lot (hardware changed) and batch 8 in bf16 on the RTX 4090, whose quality
falls outside the tolerance; batch 16 runs out of memory every time; a CPU
variant has no rental price. Failures, an interruption re-run, an exclusion
for a documented external cause, and one corpus fingerprint throughout.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.support.builders import PROTOCOL, SAMPLES, variant
from toolkit.evidence import audit, chain, locking
from toolkit.money import tariffs
from toolkit.reporting import build
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

CORPUS_SHA = "c0ffee" + "0" * 58
EXCLUSION = "host maintenance announced by the provider at 10:14 (ticket 4711)"

#: measured_s per repetition; None = no successful measurement in that slot.
DURATIONS: dict[str, list[float | None]] = {
    "b1-fp32": [41.2, 40.8, 41.5, 40.9, 41.1],
    "b4-fp32": [15.3, 15.9, None, 16.2, 15.6],  # repetition 3 failed
    "b8-fp32": [15.4, 14.9, 15.8, 30.0, 15.2],  # repetition 4 excluded
    "b8-b200": [9.1, 9.3, 9.0, 9.2, 9.4],
    "b8-bf16": [8.1, 8.3, 8.0, 8.2, 8.4],  # quality outside tolerance
    "b16-fp32": [None, None, None, None, None],  # out of memory every time
    "b8-cpu": [120.5, 118.25, 119.75, 121.0, 119.0],
}
METRIC = {"b8-bf16": 0.5312}
ALLOCATED = {
    "b1-fp32": 512_000_000,
    "b4-fp32": 640_000_000,
    "b8-fp32": 800_000_000,
    "b8-b200": 800_000_000,
    "b8-bf16": 420_000_000,
    "b16-fp32": None,
    "b8-cpu": None,
}


#: What was rented, once each: every RTX 4090 variant ran on one lot, b8-b200 on a B200 lot.
RENTALS = [
    {
        "rental_id": "r-4090",
        "provider": "IteraGPU",
        "reference": "ORD-1001",
        "gpu_slug": "rtx-4090",
        "cards_per_lot": 1,
        "lots": 1,
        "billing": "flat-7d",
        "market": "on-demand",
        "start": "2026-12-07T09:00+01:00",
        "end": "2026-12-14T09:00+01:00",
        "currency": "USD",
        "source": "order confirmation ORD-1001",
    },
    {
        "rental_id": "r-b200",
        "provider": "IteraGPU",
        "reference": "ORD-1002",
        "gpu_slug": "b200",
        "cards_per_lot": 2,
        "lots": 1,
        "billing": "flat-7d",
        "market": "on-demand",
        "start": "2026-12-07T09:00+01:00",
        "end": "2026-12-14T09:00+01:00",
        "currency": "USD",
        "source": "order confirmation ORD-1002",
    },
]
#: A metered rental no variant names, its amount not typed yet: the total it joins is incomplete.
METERED_RENTAL = {
    "rental_id": "r-h100",
    "provider": "Other cloud",
    "gpu_slug": "h100",
    "cards_per_lot": 1,
    "lots": 1,
    "billing": "hourly",
    "market": "spot",
    "currency": "USD",
}


def quoted_meter(price: float = 0.75, billing_seconds: int = 1) -> dict[str, Any]:
    """A Tariffs row: a quoted on-demand RTX 4090 price per hour, billed per
    ``billing_seconds``, dated after the shipped catalog (so it is the card's price)."""
    return {
        "catalog_date": "2026-12-06",
        "gpu_slug": "rtx-4090",
        "gpu_name": "RTX 4090",
        "cards_per_lot": 1,
        "market": "on-demand",
        "price_per_hour": price,
        "billing_seconds": billing_seconds,
        "source": "quote Q-9 of 2026-12-06",
    }


#: The user's own check of the outputs (seed 000): variant -> confirmed corpora.
CONFIRMED = {
    "b1-fp32": 1,
    "b4-fp32": 1,
    "b8-fp32": 1,
    "b8-b200": 1,
    "b8-bf16": 0,
    "b16-fp32": 0,
    "b8-cpu": 1,
}


def variants() -> list[dict[str, Any]]:
    """The Variants rows."""
    gpu = {"device": "cuda", "gpu_slug": "rtx-4090", "rental_id": "r-4090"}
    return [
        variant("b1-fp32", 1, **gpu),
        variant("b4-fp32", 4, **gpu),
        variant("b8-fp32", 8, **gpu),
        variant(
            "b8-b200",
            8,
            series=2,
            device="cuda",
            gpu_slug="b200",
            rental_id="r-b200",
            description="b8-fp32 on one B200 lot",
            base_variant="b8-fp32",
            changes="gpu_slug",
        ),
        variant(
            "b8-bf16",
            8,
            series=2,
            precision="bf16",
            **gpu,
            description="b8-fp32 in bf16",
            base_variant="b8-fp32",
            changes="precision",
        ),
        variant(
            "b16-fp32",
            16,
            series=3,
            **gpu,
            description="batch 16",
            base_variant="b8-fp32",
            changes="batch_size",
        ),
        variant(
            "b8-cpu",
            8,
            series=4,
            description="b8-fp32 on the CPU",
            base_variant="b8-fp32",
            changes="device, gpu_slug",
        ),
    ]


def campaign_attempt(
    vid: str, rep: int, measured: float | None, **overrides: Any
) -> dict[str, Any]:
    """One Attempts row of this campaign as the runner writes it; a None duration is a
    failure. (builders.attempt is the generic accepted CPU row.)"""
    ok = measured is not None
    metric = METRIC.get(vid, 0.8421)
    verdict = "fail" if vid in METRIC else "pass"
    gpu = vid != "b8-cpu"
    allocated = ALLOCATED.get(vid)
    row: dict[str, Any] = {
        "attempt_id": f"{vid}-r{rep}",
        "variant_id": vid,
        "repetition": rep,
        "order_position": 1,
        "started_at": f"2026-12-08T{9 + rep:02d}:00+01:00",
        "status": "completed" if ok else "failed",
        "protocol_sha256": "x",
        "manifest_id": f"m-{vid}",
        "load_s": 3.2,
        "warmup_s": 0.4,
        "measured_s": measured,
        "measured_s_reason": None if ok else "CUDA out of memory after 312 items",
        "device_s": measured if ok and gpu else None,
        "device_s_reason": None if ok and gpu else "no device span",
        "evaluation_s": 0.3,
        "export_s": 0.1,
        "items_completed": 1000 if ok else 312,
        "expected_ids": 1000,
        "observed_ids": 1000 if ok else 312,
        "ids_match": "yes" if ok else "no",
        "metric_value": metric if ok else None,
        "metric_value_reason": None if ok else "run failed",
        "quality_verdict": verdict if ok else "not evaluated",
        "reference_agreement": (1.0 if vid == "b1-fp32" else 0.9875) if ok else None,
        "reference_agreement_reason": None if ok else "run failed",
        "corpus_accepted": "yes" if ok and verdict == "pass" else "no",
        "mem_allocated_peak_bytes": allocated,
        "mem_allocated_peak_bytes_reason": None if allocated else "not measured",
        "mem_reserved_peak_bytes": None if allocated is None else allocated + 64_000_000,
        "mem_reserved_peak_bytes_reason": None if allocated else "not measured",
        "host_rss_peak_bytes": 1_500_000_000 + rep,
        "padded_tokens": 90_112 if ok else None,
        "padded_tokens_reason": None if ok else "run failed",
        "padding_efficiency": 0.8125 if ok else None,
        "padding_efficiency_reason": None if ok else "run failed",
        "truncated": 7,
        "predictions_path": None,
        "excluded": "no",
        "pre_amendment": "no",
    }
    row.update(overrides)
    return row


def manifest(vid: str) -> dict[str, Any]:
    """The Manifest row of a variant (one environment each)."""
    return {
        "manifest_id": f"m-{vid}",
        "recorded_at": "2026-12-08T09:00+01:00",
        "variant_id": vid,
        "corpus_path": "corpus.jsonl",
        "corpus_sha256": CORPUS_SHA,
        "corpus_items": 1000,
    }


#: The resume variant of b4-fp32 (R13), declared by ``campaign(resume=True)``: it covers
#: b4-fp32's one failure (repetition 3, out of memory) with one completed run.
RESUME_VARIANT = variant(
    "b4-resume",
    2,
    series=3,
    device="cuda",
    gpu_slug="rtx-4090",
    rental_id="r-4090",
    base_variant="b4-fp32",
    changes="batch_size",
    resume_of="b4-fp32",
    description="b4-fp32 resumed at batch 2",
)


def campaign(resume: bool = False, **protocol: Any) -> WorkbookData:
    """The whole campaign, locked, with attempts, manifest, tariffs and a 96 h schedule;
    ``protocol`` overrides Protocol fields before the lock; ``resume`` declares
    :data:`RESUME_VARIANT` and records its run."""
    data = WorkbookData.empty()
    data.forms["Protocol"].update(PROTOCOL, **protocol)
    for row in variants() + ([RESUME_VARIANT] if resume else []):
        data.append("Variants", row)
    for row in tariffs.tariff_rows(tariffs.load_catalog()):
        data.append("Tariffs", row)
    for rental in RENTALS:
        data.append("Rentals", dict(rental))
    data.append(
        "Schedule",
        {"phase": "install", "start": "2026-12-07T09:00+01:00", "end": "2026-12-07T12:00+01:00"},
    )
    data.append(
        "Schedule",
        {"phase": "comparison", "start": "2026-12-07T12:00+01:00", "end": "2026-12-11T09:00+01:00"},
    )
    sha = locking.lock(data)
    for vid, runs in DURATIONS.items():
        data.append("Manifest", manifest(vid))
        for rep, measured in enumerate(runs, start=1):
            if vid == "b1-fp32" and rep == 2:
                # Interrupted (Ctrl-C), then the slot ran again: both rows stay (R12).
                data.append(
                    "Attempts",
                    campaign_attempt(
                        vid,
                        rep,
                        None,
                        attempt_id="b1-fp32-r2a",
                        status="interrupted",
                        measured_s_reason="interrupted by the user",
                    ),
                )
            data.append("Attempts", campaign_attempt(vid, rep, measured))
    if resume:
        data.append("Manifest", manifest("b4-resume"))
        data.append("Attempts", campaign_attempt("b4-resume", 1, 20.5))
    for row in data.tables["Attempts"]:
        row["protocol_sha256"] = sha
    chain.seal_new_rows(data)  # as the runner seals rows: the campaign validates clean
    audit.exclude(data, "b8-fp32-r4", EXCLUSION)
    for vid, count in CONFIRMED.items():
        data.append(
            "Verification",
            {
                "variant_id": vid,
                "verified": "yes",
                "confirmed_corpora": count,
                "verified_by": "A. Reviewer",
                "verified_at": "2026-12-11T10:00+01:00",
                "checked": "ids, format, accuracy, 20 predictions read",
            },
        )
    return data


def write(path: Path) -> Path:
    """The campaign saved as a workbook at ``path``."""
    store.save(campaign(), path)
    return path


def priced_report(folder: Path) -> Path:
    """:func:`priced` saved as ``folder/priced.xlsx`` beside the sample head folder it names,
    then reported (no pictures): Settlement, Overview, memo and names written."""
    path = folder / "priced.xlsx"
    store.save(priced(), path)
    shutil.copytree(SAMPLES / "head", folder / "head")
    build(path, pngs=False)
    return path


def priced() -> WorkbookData:
    """The campaign as a finance reviewer prices it: 20 expected outputs, a EUR snapshot and
    a EUR rental priced from it, a ledger whose line for the B200 lot differs from the
    workbook, a storage line recorded as another cost (matched by its item), and another
    cost in EUR."""
    data = campaign(expected_outputs=20)
    for slug, cards, price in (("rtx-4090", 1, 104.0), ("b200", 2, 1930.0)):
        data.append(
            "Tariffs",
            {
                "catalog_date": "2026-11-20",
                "gpu_slug": slug,
                "gpu_name": slug,
                "cards_per_lot": cards,
                "plan_days": 7,
                "price_per_lot_usd": price,
                "source": "example figure",
                "provider": "Example Cloud EU",
                "currency": "EUR",
            },
        )
    data.append(
        "Rentals",
        {
            "rental_id": "r-eu",
            "provider": "Example Cloud EU",
            "reference": "EU-7",
            "gpu_slug": "rtx-4090",
            "cards_per_lot": 1,
            "lots": 2,
            "billing": "flat-7d",
            "market": "on-demand",
            "currency": "EUR",
        },
    )
    for date, reference, amount, currency in (
        ("2026-12-07", "ORD-1001", 110.0, "USD"),
        ("2026-12-07", "ORD-1002", 2072.0, "USD"),
        ("2026-12-08", "EU-7", 208.0, "EUR"),
        ("2026-12-11", "S3-12", 12.5, "USD"),
    ):
        data.append(
            "Ledger",
            {
                "date": date,
                "description": f"charge {reference}",
                "reference": reference,
                "amount": amount,
                "currency": currency,
                "source": f"billing.csv:{reference}",
            },
        )
    data.append(
        "Settlement",
        {
            "item": "S3-12",
            "kind": "other cost",
            "amount": 12.5,
            "currency": "USD",
            "grounds": "storage, invoice S3-12",
        },
    )
    data.append(
        "Settlement",
        {
            "item": "labour",
            "kind": "other cost",
            "amount": 300,
            "currency": "EUR",
            "grounds": "set-up, contract 7",
        },
    )
    return data
