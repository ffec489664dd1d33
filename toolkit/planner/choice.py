"""Which card for a need: VRAM first, then bandwidth, read the way seed 004 reads a catalog.

For every card of the GPU catalog: whether it runs the precision natively (R32;
a card that does not is listed apart, with the memory an upcast costs), the
smallest split of one machine that holds the need (R33, :mod:`splits`), the
decode ceiling of that split, and what the price catalog offers (R34,
:mod:`offers`): billing unit, availability against the usage, storage and
egress, tokens/s per dollar. A split is priced only when one lot holds it:
separate lots are never summed into one machine. Of a card's offers, the one
taken holds the split, suits the usage (interruptible capacity only for work
that tolerates it, or when nothing else is offered) and gives the most tok/s
per dollar. A card fits against the memory it reports (:attr:`Gpu.usable_bytes`).
:func:`margins` shows how the answer moves when the allocator margin and the
context grow (R35). Stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from toolkit.money import tariffs
from toolkit.money.tariffs import rules
from toolkit.planner import memory, offers, splits
from toolkit.planner.gpus import GB_LABEL, Gpu, load_catalog
from toolkit.planner.memory import Estimate, gib
from toolkit.planner.need import Need
from toolkit.planner.offers import USAGES, Offer, suits, usage_fit
from toolkit.planner.splits import MAX_CARDS, Split

CEILING_NOTE = (
    "decode tok/s is an upper bound from memory bandwidth alone (weights plus the "
    "KV cache read once per decoding step, at the full context), not a measurement"
)
#: How much the margins grow in :func:`margins`: allocator points added, context multiplied.
MARGIN_STEP_PCT = 10
CONTEXT_FACTOR = 8


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One card kind for the need: its split, its ceiling, its offer."""

    gpu: Gpu
    need: Need
    split: Split | None  # None: more than one machine of MAX_CARDS cards
    tokens_batch1: int | None
    tokens_batch: int | None
    ceiling_reason: str | None
    offer: Offer | None
    price_reason: str | None  # why no budget: no price, or no lot holds the split
    warnings: tuple[str, ...]
    precision_note: str | None = None  # None: the card runs the precision natively

    @property
    def native(self) -> bool:
        """True when the card runs the estimate's precisions natively."""
        return self.precision_note is None

    @property
    def cards(self) -> int | None:
        """Cards of the split, None when no machine of MAX_CARDS holds the need."""
        return self.split.cards if self.split else None

    @property
    def split_label(self) -> str:
        """The split in words: ``1 card``, ``TP2``, ``TP4 x PP2``, ``>8 cards``."""
        return self.split.label if self.split else f">{MAX_CARDS} cards"

    @property
    def per_card_bytes(self) -> int:
        """What each card of the split holds (one card's need when nothing fits)."""
        return splits.per_card(self.need, self.split) if self.split else self.need.per_card()

    @property
    def shortfall_bytes(self) -> int:
        """What one card lacks to hold the need alone; 0 when it does."""
        return max(0, self.need.per_card() - self.gpu.usable_bytes)

    @property
    def replicas(self) -> int | None:
        """Copies of the split one lot holds; None when no lot holds it."""
        if self.offer is None or self.split is None or self.split.cards > self.offer.cards_per_lot:
            return None
        return self.offer.cards_per_lot // self.split.cards

    @property
    def budget_usd(self) -> Decimal | None:
        """The price of the one lot that holds the split (R21): of its flat plan, or of the
        schedule at its metered price; None when no lot holds it."""
        return self.offer.price_per_lot_usd if self.offer and self.replicas else None

    @property
    def tokens_per_usd(self) -> Decimal | None:
        """Decode tokens/s ceiling of the lot (every replica, at the batch) per USD of its plan."""
        if self.budget_usd is None or self.tokens_batch is None or self.replicas is None:
            return None
        return Decimal(self.replicas * self.tokens_batch) / self.budget_usd

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: bytes as integers, money as text with cents."""
        g, s, o = self.gpu, self.split, self.offer
        return {
            "slug": g.slug,
            "name": g.name,
            "vram_gb": str(g.vram_gb),
            "capacity_bytes": g.capacity_bytes,
            "usable_bytes": g.usable_bytes,
            "usable_basis": g.usable_basis,
            "memory_type": g.memory_type,
            "memory_bandwidth_gbps": str(g.bandwidth_gbps),
            "interconnect": g.interconnect,
            "native_precision": self.native,
            "precision_note": self.precision_note,
            "fits_single_card": self.cards == 1,
            "cards": self.cards,
            "split": None
            if s is None
            else {
                "label": s.label,
                "tensor_parallel": s.tp,
                "pipeline_stages": s.pp,
                "link": s.link or None,
                "link_gbps_per_direction": str(s.link_gbps) if s.link_gbps is not None else None,
            },
            "per_card_bytes": self.per_card_bytes,
            "single_card_shortfall_bytes": self.shortfall_bytes,
            "warnings": list(self.warnings),
            "decode_tokens_per_s_batch1": self.tokens_batch1,
            "decode_tokens_per_s_batch": self.tokens_batch,
            "decode_ceiling_reason": self.ceiling_reason,
            "provider": o.provider if o else None,
            "cards_per_lot": o.cards_per_lot if o else None,
            "lot_holds_split": self.replicas is not None,
            "replicas": self.replicas,
            "billing": None if o is None else ("metered" if o.meter else "flat"),
            "plan_days": o.plan_days if o and not o.meter else None,
            "price_per_lot_usd": usd(o.price_per_lot_usd) if o and not o.meter else None,
            "price_per_hour_usd": usd(o.meter.price_per_hour) if o and o.meter else None,
            "billing_seconds": o.meter.billing_seconds if o and o.meter else None,
            "budget_usd": usd(self.budget_usd) if self.budget_usd is not None else None,
            "price_reason": self.price_reason,
            "billing_unit": o.billing_unit if o else None,
            "availability": o.availability if o else None,
            "storage_usd_per_gb_month": _text(o.storage_usd_per_gb_month) if o else None,
            "egress_usd_per_gb": _text(o.egress_usd_per_gb) if o else None,
            "tokens_per_s_per_usd": round(float(self.tokens_per_usd), 6)
            if self.tokens_per_usd is not None
            else None,
        }


@dataclass(frozen=True)
class Margin:
    """The split each card needs at one allocator margin and one context length."""

    allocator_pct: int
    seq_len: int
    splits: dict[str, str]  # slug -> split label

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "allocator_margin_pct": self.allocator_pct,
            "seq_len": self.seq_len,
            "splits": self.splits,
        }


@dataclass(frozen=True)
class Choice:
    """The whole answer: the need, the candidates in order, and how margins move it."""

    need: Need
    estimate: Estimate | None
    candidates: tuple[Candidate, ...]
    plan_days: int
    usage: str | None
    margins: tuple[Margin, ...] = ()
    #: The schedule priced, in hours (``gpus --hours``): flat plans and metered prices
    #: ranked together by what it costs; None: the ``plan_days`` flat plan of each lot.
    hours: Decimal | None = None

    @property
    def native(self) -> list[Candidate]:
        """Cards that run the precision natively, in order."""
        return [c for c in self.candidates if c.native]

    @property
    def cards_per_machine(self) -> dict[str, int]:
        """Each candidate card's split: the cards the need takes on one machine (slug ->
        cards), for the metered prices whose lot holds it (:func:`offers.holding`)."""
        return {c.gpu.slug: c.split.cards for c in self.candidates if c.split is not None}

    @property
    def apart(self) -> list[Candidate]:
        """Cards listed apart: they lack the precision, shown upcast."""
        return [c for c in self.candidates if not c.native]

    @property
    def split_rule(self) -> str:
        """Which splits are allowed for the need, and why."""
        return splits.rule(self.need, _mlp(self.estimate))

    @property
    def kv_note(self) -> str | None:
        """How a low-precision KV cache is sized on cards without that compute, or None."""
        est = self.estimate
        if est is None:
            return None
        without = sorted(c.gpu.slug for c in self.candidates if c.gpu.lacks(est.kv_precision))
        if not without:
            return None
        return (
            f"the {est.kv_precision} KV cache is storage: runtimes keep it at "
            f"{est.kv_precision} and convert it to {est.compute} in their attention "
            f"kernels, which needs no {est.kv_precision} compute, so "
            f"{', '.join(without)} (no native {est.kv_precision} in gpus.csv) are sized "
            f"with it as is; only {est.kv_precision} weights are upcast for want of it"
        )

    def as_dict(self) -> dict[str, Any]:
        """The `gpus --json` document."""
        return {
            "format": "iteralab-gpus/1",
            "need": self.estimate.as_dict()
            if self.estimate
            else {"need_gb": str(Decimal(self.need.tensors_bytes) / GB_LABEL)},
            "need_bytes_one_card": self.need.per_card(),
            "plan_days": None if self.hours is not None else self.plan_days,
            "schedule_hours": None if self.hours is None else str(self.hours),
            "usage": self.usage,
            "split_rule": self.split_rule,
            "kv_cache_note": self.kv_note,
            "ceiling_note": CEILING_NOTE,
            "communication_note": splits.COMMUNICATION_NOTE,
            "gpus": [c.as_dict() for c in self.candidates],
            "margins": [m.as_dict() for m in self.margins],
        }


def usd(amount: Decimal) -> str:
    """An amount for display, exactly (at least the cents: 110.004 is not 110.00)."""
    return rules.amount_text(amount, grouping=False)


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def choose(
    catalog: Sequence[Gpu],
    offers: Mapping[str, Offer],
    *,
    estimate: Estimate | None = None,
    need: Need | None = None,
    price_reason: str = "no price in catalog",
    usage: str | None = None,
    plan_days: int = 7,
    hours: Decimal | None = None,
) -> Choice:
    """The answer for an estimate (or a bare need): candidates and, for an estimate, margins.
    ``hours``: the schedule ``offers`` were priced for (:func:`offers.schedule_offers`)."""
    if need is None:
        if estimate is None:
            raise ValueError("give an estimate or a need")
        need = Need.from_estimate(estimate)
    found = rank(
        catalog, offers, estimate=estimate, need=need, price_reason=price_reason, usage=usage
    )
    grown = margins(estimate, catalog, offers) if estimate is not None else ()
    return Choice(
        need=need,
        estimate=estimate,
        candidates=tuple(found),
        plan_days=plan_days,
        usage=usage,
        margins=grown,
        hours=hours,
    )


def choose_from_files(
    catalog: Path | None,
    prices: Path | None,
    *,
    estimate: Estimate | None,
    need: Need | None,
    usage: str | None,
    plan_days: int,
    hours: Decimal | None = None,
) -> tuple[Choice, dict[str, tuple[tariffs.Meter, ...]]]:
    """:func:`choose` over a GPU catalog CSV and a price CSV (the shipped ones for None),
    priced at ``plan_days``' flat plans (or, for a schedule of ``hours``, at the cheapest of
    the flat plans covering it and the metered prices), and the metered prices of the lots
    that hold the answer's split, by card."""
    if hours is not None:
        found, price_reason = offers.schedule_offers(prices, hours)
    else:
        found, price_reason = offers.load_offers(prices, plan_days)
    answer = choose(
        load_catalog(catalog),
        found,
        estimate=estimate,
        need=need,
        price_reason=price_reason,
        usage=usage,
        plan_days=plan_days,
        hours=hours,
    )
    return answer, offers.holding(offers.load_metered(prices), answer.cards_per_machine)


def rank(
    catalog: Sequence[Gpu],
    offers: Mapping[str, Offer],
    *,
    estimate: Estimate | None = None,
    need: Need | None = None,
    price_reason: str = "no price in catalog",
    usage: str | None = None,
) -> list[Candidate]:
    """Every card, ordered: native precision first; then one card holds the need (fastest
    memory first), then the smallest splits, then what no machine of MAX_CARDS holds."""
    if need is None:
        if estimate is None:
            raise ValueError("give an estimate or a need")
        need = Need.from_estimate(estimate)
    upcast: dict[str, tuple[Need, str]] = {}
    mlp = _mlp(estimate)
    found = []
    for g in catalog:
        own, note = need, None
        if estimate is not None and g.lacks(estimate.precision):
            if estimate.precision not in upcast:
                upcast[estimate.precision] = _upcast(estimate)
            own, text = upcast[estimate.precision]
            note = f"{g.slug} has no native {estimate.precision} (gpus.csv): {text}"
        offer = offers.get(g.slug)
        lots = offer.all if offer else (None,)
        found.append(
            _best(
                [
                    _candidate(
                        own,
                        g,
                        o,
                        price_reason=price_reason,
                        usage=usage,
                        note=note,
                        mlp=mlp,
                        several=len(lots) > 1,
                    )
                    for o in lots
                ],
                usage,
            )
        )
    return sorted(
        found,
        key=lambda c: (not c.native, c.cards or MAX_CARDS + 1, -c.gpu.bandwidth_gbps, c.gpu.slug),
    )


def _mlp(estimate: Estimate | None) -> int | None:
    """The MLP width a tensor-parallel degree must divide, when the model is known."""
    return estimate.shape.intermediate if estimate is not None else None


def _upcast(est: Estimate) -> tuple[Need, str]:
    """The need with the weights upcast from a precision the card cannot compute in, and
    what that costs. The KV cache is storage and is never upcast (:attr:`Choice.kv_note`)."""
    target = "int4" if est.workload == "qlora" else est.compute
    wider = memory.again(est, precision=target)
    text = (
        f"shown with the weights to {target}, "
        f"{gib(wider.subtotal)} GiB of tensors instead of {gib(est.subtotal)}; a runtime "
        f"that keeps {est.precision} weights and dequantizes them in its kernels "
        f"(weight-only) needs the smaller size but computes at the {est.compute} rate, "
        f"not the {est.precision} one"
    )
    return Need.from_estimate(wider), text


def _best(found: list[Candidate], usage: str | None) -> Candidate:
    """Of one card's candidates (one per offer), the one to show: a lot that holds the
    split, of capacity that suits the usage when there is one (R34), the most tok/s per
    USD, then the cheapest per replica; when no lot holds the split, the largest lot's."""
    holding = [c for c in found if c.replicas]
    if not holding:
        return max(found, key=lambda c: c.offer.cards_per_lot if c.offer else 0)
    suitable = [c for c in holding if c.offer and suits(c.offer, usage)]
    best = min(suitable or holding, key=_value)
    aside = [c for c in holding if c not in suitable and _value(c) < _value(best)]
    if suitable and aside:
        left = aside[0].offer
        assert left is not None and left.availability is not None
        words = USAGES[usage][0] if usage else "work whose usage is not stated (say --usage)"
        best = replace(
            best,
            warnings=(
                *best.warnings,
                (
                    f"a cheaper {left.availability} lot ({left.seller}, "
                    f"{usd(left.price_per_lot_usd)} USD) is left aside: unsuitable for {words}"
                ),
            ),
        )
    return best


def _value(c: Candidate) -> tuple[Decimal, Decimal]:
    """Sort key of a priced candidate: most tok/s per USD first, then cheapest per replica."""
    assert c.budget_usd is not None and c.replicas
    return -(c.tokens_per_usd or Decimal(0)), c.budget_usd / c.replicas


def _candidate(
    need: Need,
    g: Gpu,
    offer: Offer | None,
    *,
    price_reason: str,
    usage: str | None,
    note: str | None,
    mlp: int | None = None,
    several: bool = False,
) -> Candidate:
    split = splits.smallest(need, g, offer.cards_per_lot if offer else None, mlp)
    said: list[str] = []
    if split is None:
        t1 = tb = None
        reason: str | None = "does not fit one machine"
        said.append(
            f"does not fit one machine of {MAX_CARDS} cards: several machines (a "
            "node fabric, multi-node parallelism) are not planned here"
        )
    else:
        t1, tb, reason = splits.decode_ceiling(need, g, split)
        said += splits.warnings(need, g, split)
    why: str | None = None if offer else price_reason
    if offer is not None:
        if split is None:
            why = "not offered: no machine of the catalog holds it"
        elif split.cards > offer.cards_per_lot:
            largest = "the largest lot" if several else "a lot"
            seller = f"{offer.seller}; " if offer.provider else ""
            why = (
                f"not offered: {split.label} needs one machine of {split.cards} cards, "
                f"{largest} holds {offer.cards_per_lot} ({seller}separate lots are "
                "separate machines)"
            )
        else:
            if split.cards > 1:
                said.append(
                    f"the price catalog does not state how the lot's {split.cards} cards "
                    f"are linked: {g.interconnect} (gpus.csv) assumed; check with "
                    "`nvidia-smi topo -m`"
                )
            fit = usage_fit(offer, usage)
            if fit:
                said.append(fit)
    return Candidate(
        gpu=g,
        need=need,
        split=split,
        tokens_batch1=t1,
        tokens_batch=tb,
        ceiling_reason=reason,
        offer=offer,
        price_reason=why,
        warnings=tuple(said),
        precision_note=note,
    )


def margins(
    est: Estimate, catalog: Sequence[Gpu], offers: Mapping[str, Offer]
) -> tuple[Margin, ...]:
    """The split each card needs at the estimate's allocator margin and context, and when
    the margin grows by :data:`MARGIN_STEP_PCT` points and the context by
    :data:`CONTEXT_FACTOR` (R35: a rule of thumb checked at one margin says little)."""
    pct, seq = est.allocator_pct, est.seq_len
    out = []
    for length in (seq, seq * CONTEXT_FACTOR):
        for margin in (pct, min(100, pct + MARGIN_STEP_PCT)):
            grown = (
                est
                if (margin, length) == (pct, seq)
                else memory.again(est, seq_len=length, allocator_pct=margin)
            )
            found = rank(catalog, offers, estimate=grown)
            out.append(Margin(margin, length, {c.gpu.slug: c.split_label for c in found}))
    return tuple(out)
