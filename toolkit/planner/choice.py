"""Which card for a need: VRAM first, then bandwidth, read the way seed 004 reads a catalog.

For every card of the GPU catalog: whether it runs the precision natively (R32;
a card that does not is listed apart, with the memory an upcast costs), the
smallest split of one machine that holds the need (R33, :mod:`splits`), the
decode ceiling of that split, and what the price catalog offers (R34,
:mod:`offers`): billing unit, availability against the usage, storage and
egress, tokens/s per dollar. A split is priced only when one lot holds it:
separate lots are never summed into one machine. :func:`margins` shows how the
answer moves when the allocator margin and the context grow (R35). Stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from toolkit.money.tariffs import rules
from toolkit.planner import memory, splits
from toolkit.planner.gpus import GB_LABEL, Gpu
from toolkit.planner.memory import Estimate, gib
from toolkit.planner.need import Need
from toolkit.planner.offers import Offer, usage_fit
from toolkit.planner.splits import MAX_CARDS, Split

CEILING_NOTE = ("decode tok/s is an upper bound from memory bandwidth alone (weights plus the "
                "KV cache read once per decoding step, at the full context), not a measurement")
#: How much the margins grow in :func:`margins`: allocator points added, context multiplied.
MARGIN_STEP_PCT = 10
CONTEXT_FACTOR = 8


@dataclass(frozen=True)
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
        return self.need.per_card(self.split.tp, self.split.pp) if self.split else \
            self.need.per_card()

    @property
    def shortfall_bytes(self) -> int:
        """What one card lacks to hold the need alone; 0 when it does."""
        return max(0, self.need.per_card() - self.gpu.capacity_bytes)

    @property
    def replicas(self) -> int | None:
        """Copies of the split one lot holds; None when no lot holds it."""
        if self.offer is None or self.split is None or \
                self.split.cards > self.offer.cards_per_lot:
            return None
        return self.offer.cards_per_lot // self.split.cards

    @property
    def budget_usd(self) -> Decimal | None:
        """The price of the one lot that holds the split (R21), or None."""
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
            "slug": g.slug, "name": g.name, "vram_gb": str(g.vram_gb),
            "capacity_bytes": g.capacity_bytes, "memory_type": g.memory_type,
            "memory_bandwidth_gbps": str(g.bandwidth_gbps), "interconnect": g.interconnect,
            "native_precision": self.native, "precision_note": self.precision_note,
            "fits_single_card": self.cards == 1, "cards": self.cards,
            "split": None if s is None else {
                "label": s.label, "tensor_parallel": s.tp, "pipeline_stages": s.pp,
                "link": s.link or None, "link_gbps_per_direction":
                str(s.link_gbps) if s.link_gbps is not None else None},
            "per_card_bytes": self.per_card_bytes,
            "single_card_shortfall_bytes": self.shortfall_bytes,
            "warnings": list(self.warnings),
            "decode_tokens_per_s_batch1": self.tokens_batch1,
            "decode_tokens_per_s_batch": self.tokens_batch,
            "decode_ceiling_reason": self.ceiling_reason,
            "cards_per_lot": o.cards_per_lot if o else None,
            "lot_holds_split": self.replicas is not None, "replicas": self.replicas,
            "price_per_lot_usd": usd(o.price_per_lot_usd) if o else None,
            "budget_usd": usd(self.budget_usd) if self.budget_usd is not None else None,
            "price_reason": self.price_reason,
            "billing_unit": o.billing_unit if o else None,
            "availability": o.availability if o else None,
            "storage_usd_per_gb_month": _text(o.storage_usd_per_gb_month) if o else None,
            "egress_usd_per_gb": _text(o.egress_usd_per_gb) if o else None,
            "tokens_per_s_per_usd": round(float(self.tokens_per_usd), 6)
            if self.tokens_per_usd is not None else None,
        }


@dataclass(frozen=True)
class Margin:
    """The split each card needs at one allocator margin and one context length."""

    allocator_pct: int
    seq_len: int
    splits: dict[str, str]  # slug -> split label

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"allocator_margin_pct": self.allocator_pct, "seq_len": self.seq_len,
                "splits": self.splits}


@dataclass(frozen=True)
class Choice:
    """The whole answer: the need, the candidates in order, and how margins move it."""

    need: Need
    estimate: Estimate | None
    candidates: tuple[Candidate, ...]
    plan_days: int
    usage: str | None
    margins: tuple[Margin, ...] = ()

    @property
    def native(self) -> list[Candidate]:
        """Cards that run the precision natively, in order."""
        return [c for c in self.candidates if c.native]

    @property
    def apart(self) -> list[Candidate]:
        """Cards listed apart: they lack the precision, shown upcast."""
        return [c for c in self.candidates if not c.native]

    def as_dict(self) -> dict[str, Any]:
        """The `gpus --json` document."""
        return {
            "format": "iteralab-gpus/1",
            "need": self.estimate.as_dict() if self.estimate else
            {"need_gb": str(Decimal(self.need.tensors_bytes) / GB_LABEL)},
            "need_bytes_one_card": self.need.per_card(), "plan_days": self.plan_days,
            "usage": self.usage, "split_rule": splits.rule(self.need),
            "ceiling_note": CEILING_NOTE, "communication_note": splits.COMMUNICATION_NOTE,
            "gpus": [c.as_dict() for c in self.candidates],
            "margins": [m.as_dict() for m in self.margins],
        }


def usd(amount: Decimal) -> str:
    """An amount rounded half-up to the cent, for display."""
    return str(rules.to_cent(amount))


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def choose(catalog: Sequence[Gpu], offers: Mapping[str, Offer], *,
           estimate: Estimate | None = None, need: Need | None = None,
           price_reason: str = "no price in catalog", usage: str | None = None,
           plan_days: int = 7) -> Choice:
    """The answer for an estimate (or a bare need): candidates and, for an estimate, margins."""
    if need is None:
        if estimate is None:
            raise ValueError("give an estimate or a need")
        need = Need.from_estimate(estimate)
    found = rank(catalog, offers, estimate=estimate, need=need, price_reason=price_reason,
                 usage=usage)
    grown = margins(estimate, catalog, offers) if estimate is not None else ()
    return Choice(need, estimate, tuple(found), plan_days, usage, grown)


def rank(catalog: Sequence[Gpu], offers: Mapping[str, Offer], *,
         estimate: Estimate | None = None, need: Need | None = None,
         price_reason: str = "no price in catalog", usage: str | None = None) -> list[Candidate]:
    """Every card, ordered: native precision first; then one card holds the need (fastest
    memory first), then the smallest splits, then what no machine of MAX_CARDS holds."""
    if need is None:
        if estimate is None:
            raise ValueError("give an estimate or a need")
        need = Need.from_estimate(estimate)
    upcast: dict[tuple[str, ...], tuple[Need, str]] = {}
    found = []
    for g in catalog:
        own, note = need, None
        lacking = tuple(p for p in dict.fromkeys((estimate.precision, estimate.kv_precision))
                        if g.lacks(p)) if estimate is not None else ()
        if estimate is not None and lacking:
            if lacking not in upcast:
                upcast[lacking] = _upcast(estimate, lacking)
            own, text = upcast[lacking]
            note = f"{g.slug} has no native {' or '.join(lacking)} (gpus.csv): {text}"
        found.append(_candidate(own, g, offers.get(g.slug), price_reason, usage, note))
    return sorted(found, key=lambda c: (not c.native, c.cards or MAX_CARDS + 1,
                                        -c.gpu.bandwidth_gbps, c.gpu.slug))


def _upcast(est: Estimate, lacking: tuple[str, ...]) -> tuple[Need, str]:
    """The need with what the card lacks upcast to the compute dtype, and what that costs."""
    changes: dict[str, str] = {}
    if est.precision in lacking:
        changes["precision"] = "int4" if est.workload == "qlora" else est.compute
    if est.kv_precision in lacking:
        changes["kv_precision"] = est.compute
    wider = memory.again(est, **changes)
    what = " and ".join(("weights to " + changes["precision"]) if k == "precision" else
                        ("KV cache to " + changes["kv_precision"]) for k in changes)
    text = (f"shown with the {what}, {gib(wider.subtotal)} GiB of tensors instead of "
            f"{gib(est.subtotal)}; a runtime that keeps {est.precision} weights and dequantizes "
            f"them in its kernels (weight-only) needs the smaller size but computes at the "
            f"{est.compute} rate, not the {est.precision} one")
    return Need.from_estimate(wider), text


def _candidate(need: Need, g: Gpu, offer: Offer | None, price_reason: str, usage: str | None,
               note: str | None) -> Candidate:
    split = splits.smallest(need, g, offer.cards_per_lot if offer else None)
    said: list[str] = []
    if split is None:
        t1 = tb = None
        reason: str | None = "does not fit one machine"
        said.append(f"does not fit one machine of {MAX_CARDS} cards: several machines (a "
                    "node fabric, multi-node parallelism) are not planned here")
    else:
        t1, tb, reason = splits.decode_ceiling(need, g, split)
        said += splits.warnings(need, g, split)
    why: str | None = None if offer else price_reason
    if offer is not None:
        if split is None:
            why = "not offered: no machine of the catalog holds it"
        elif split.cards > offer.cards_per_lot:
            why = (f"not offered: {split.label} needs one machine of {split.cards} cards, a lot "
                   f"holds {offer.cards_per_lot} (separate lots are separate machines, R33)")
        else:
            if split.cards > 1:
                said.append(f"the price catalog does not state how the lot's {split.cards} cards "
                            f"are linked: {g.interconnect} (gpus.csv) assumed; check with "
                            "`nvidia-smi topo -m`")
            fit = usage_fit(offer, usage)
            if fit:
                said.append(fit)
    return Candidate(g, need, split, t1, tb, reason, offer, why, tuple(said), note)


def margins(est: Estimate, catalog: Sequence[Gpu], offers: Mapping[str, Offer]) \
        -> tuple[Margin, ...]:
    """The split each card needs at the estimate's allocator margin and context, and when
    the margin grows by :data:`MARGIN_STEP_PCT` points and the context by
    :data:`CONTEXT_FACTOR` (R35: a rule of thumb checked at one margin says little)."""
    pct, seq = est.allocator_pct, est.seq_len
    out = []
    for length in (seq, seq * CONTEXT_FACTOR):
        for margin in (pct, min(100, pct + MARGIN_STEP_PCT)):
            grown = est if (margin, length) == (pct, seq) else \
                memory.again(est, seq_len=length, allocator_pct=margin)
            found = rank(catalog, offers, estimate=grown)
            out.append(Margin(margin, length, {c.gpu.slug: c.split_label for c in found}))
    return tuple(out)
