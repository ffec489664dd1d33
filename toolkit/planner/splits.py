"""How a model spreads over the cards of ONE machine, and what that costs in speed (R33).

A model split over several cards needs them in one machine: separately rented
lots are separate machines, and summing them says nothing of how they would
talk. A split is a tensor-parallel degree times a number of pipeline stages
(each holding a block of layers), over the machine's link: NVLink where the
card has it, else PCIe. The degree divides the attention heads and the MLP
width, and either divides the KV heads or is a multiple of them: then each KV
head is replicated on degree / KV heads cards, which costs KV-cache memory
(:func:`per_card`). Machines are taken with 1, 2, 4 or 8 cards, or a priced lot's own count.

The decode ceiling is an upper bound: per-card memory bandwidth over the bytes
each card reads per step, plus the all-reduce volume over the link; latency is
not counted (:data:`COMMUNICATION_NOTE`). Stdlib only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from toolkit.planner.gpus import Gpu
from toolkit.planner.need import Need

#: Cards in the largest machine planned for; beyond it, several machines (not planned here).
MAX_CARDS = 8
#: Machine sizes taken when the price catalog has none of its own for the card.
MACHINE_SIZES = (1, 2, 4, 8)
#: Tensor-parallel degrees assumed when the model's heads are unknown (--need-gb).
ASSUMED_DEGREES = (1, 2, 4, 8)
COMMUNICATION_NOTE = (
    "split tok/s count the communication as volume only: per token, 2 all-reduces per layer "
    "of the hidden state (ring: 2 x (TP-1)/TP x batch x hidden x bytes per card) and one "
    "hand-off per pipeline boundary, over the link's bandwidth per direction (the catalog's "
    "NVLink figures are bidirectional: halved; PCIe x16 by generation: 32 GB/s Gen4, 64 Gen5); "
    "the latency of those all-reduces is not counted (on PCIe it can dominate): measure"
)


@dataclass(frozen=True)
class Split:
    """``tp`` tensor-parallel cards in each of ``pp`` pipeline stages, in one machine."""

    tp: int
    pp: int
    link: str  # what the cards talk over; "" for one card
    link_gbps: Decimal | None  # per direction; None when unknown or one card

    @property
    def cards(self) -> int:
        """Cards the split occupies."""
        return self.tp * self.pp

    @property
    def label(self) -> str:
        """``1 card``, ``TP2``, ``PP3`` or ``TP4 x PP2``."""
        if self.cards == 1:
            return "1 card"
        parts = ([f"TP{self.tp}"] if self.tp > 1 else []) + (
            [f"PP{self.pp}"] if self.pp > 1 else []
        )
        return " x ".join(parts)


def degrees(need: Need, intermediate: int | None = None) -> tuple[int, ...]:
    """Tensor-parallel degrees allowed: those dividing the heads and the MLP width
    ``intermediate`` (when known), that divide the KV heads or are a multiple of them."""
    if need.heads is None or need.kv_heads is None:
        return ASSUMED_DEGREES
    kv = need.kv_heads
    return tuple(
        t
        for t in range(1, MAX_CARDS + 1)
        if need.heads % t == 0
        and (kv % t == 0 or t % kv == 0)
        and (intermediate is None or intermediate % t == 0)
    )


def rule(need: Need, intermediate: int | None = None) -> str:
    """One line saying which splits are allowed, and why."""
    if need.heads is None or need.kv_heads is None:
        return (
            "splits: no model sizes, so tensor-parallel degrees 1, 2, 4, 8 are assumed; "
            "give the model to check that they divide its heads and KV heads"
        )
    allowed = degrees(need, intermediate)
    mlp = f" and the MLP width {intermediate}" if intermediate is not None else ""
    copied = [t for t in allowed if t > need.kv_heads]
    replicas = (
        (
            f"; at TP {', '.join(map(str, copied))} each KV head is replicated on "
            "TP / KV heads cards (its KV cache counted on each)"
        )
        if copied
        else ""
    )
    return (
        f"splits: tensor-parallel degrees divide {need.heads} heads{mlp}, and divide "
        f"{need.kv_heads} KV heads or are a multiple of them "
        f"({', '.join(map(str, allowed))}){replicas}; beyond, pipeline stages of "
        f"{need.layers} layers; one machine of at most {MAX_CARDS} cards"
    )


def split_of(need: Need, gpu: Gpu, cards: int, intermediate: int | None = None) -> Split | None:
    """The split of ``cards`` cards in one machine: the largest allowed tensor-parallel
    degree dividing ``cards``, the rest as pipeline stages; None if no layers are left
    for a stage."""
    tp = max(t for t in degrees(need, intermediate) if cards % t == 0)
    pp = cards // tp
    if need.layers is not None and pp > need.layers:
        return None
    link, gbps = _link(gpu, cards)
    return Split(tp, pp, link, gbps)


def smallest(
    need: Need, gpu: Gpu, lot_cards: int | None = None, intermediate: int | None = None
) -> Split | None:
    """The smallest machine's split that holds the need on every card (against the memory
    the card reports, :attr:`Gpu.usable_bytes`); None beyond :data:`MAX_CARDS`. Sizes are
    :data:`MACHINE_SIZES` and the card's lot size."""
    sizes = set(MACHINE_SIZES)
    if lot_cards is not None and lot_cards <= MAX_CARDS:
        sizes.add(lot_cards)
    for cards in sorted(sizes):
        split = split_of(need, gpu, cards, intermediate)
        if split is not None and per_card(need, split) <= gpu.usable_bytes:
            return split
    return None


def per_card(need: Need, split: Split) -> int:
    """Bytes one card of the split holds: its share of the tensors and its runtime, plus,
    when the degree exceeds the KV heads, the KV cache of the head it holds a copy of."""
    return need.per_card(split.tp, split.pp) + _replicated_kv(need, split)


def _replicated_kv(need: Need, split: Split) -> int:
    """What KV-head replication adds to a card: its head's KV cache (with the allocator
    margin) less the even share :meth:`Need.per_card` already counts."""
    kv = need.kv_heads
    if kv is None or split.tp <= kv or need.kv_per_sequence is None:
        return 0
    cache = Fraction(need.kv_per_sequence * need.batch * (100 + (need.allocator_pct or 0)), 100)
    if split.pp > 1 and need.layers:
        cache *= Fraction(math.ceil(need.layers / split.pp), need.layers)
    return math.ceil(cache / kv - cache / split.tp)


def _link(gpu: Gpu, cards: int) -> tuple[str, Decimal | None]:
    """What ``cards`` cards of ``gpu`` talk over, in short, and its GB/s per direction."""
    if cards == 1:
        return "", None
    pcie = f"PCIe Gen{gpu.pcie_generation}" if gpu.pcie_generation else "PCIe"
    if gpu.pcie_only:
        return pcie, gpu.pcie_gbps
    if gpu.bridge_pairs_two and cards > 2:
        return pcie, gpu.pcie_gbps  # the bridge joins two: the all-reduces cross PCIe
    gbps = gpu.interconnect_gbps / 2 if gpu.interconnect_gbps is not None else None
    return gpu.interconnect.split(" (")[0], gbps


def warnings(need: Need, gpu: Gpu, split: Split) -> list[str]:
    """What the split costs: PCIe-only traffic, a bridge of two, pipeline stages (R33)."""
    out = []
    if split.cards > 1 and gpu.pcie_only:
        out.append(
            f"{split.label} over PCIe only ({split.link}), no NVLink: every all-reduce "
            "crosses PCIe (through host memory when peer-to-peer is off: check "
            "`nvidia-smi topo -p2p r`); a model split this way runs far below its "
            "bandwidth ceiling"
        )
    elif split.cards > 2 and gpu.bridge_pairs_two:
        out.append(
            f"{split.label}: the NVLink bridge pairs two cards, the rest of the traffic "
            "crosses PCIe"
        )
    if split.pp > 1:
        most = f" (at most {math.ceil(need.layers / split.pp)} layers each)" if need.layers else ""
        out.append(
            f"{split.label}: pipeline of {split.pp} stages{most}: a token passes them one "
            "after the other, so one sequence decodes at the speed of one stage"
        )
    return out


def decode_ceiling(need: Need, gpu: Gpu, split: Split) -> tuple[int | None, int | None, str | None]:
    """Upper bounds on decode tokens/s at batch 1 and at the need's batch, or the reason.

    Per step each card of a stage reads its share of the weights and KV cache
    (the stages run one after the other), then the split sends its all-reduces
    and hand-offs over the link (:data:`COMMUNICATION_NOTE`).
    """
    if need.ceiling_reason is not None:
        return None, None, need.ceiling_reason
    if need.weights_bytes is None or need.kv_per_sequence is None:
        return None, None, "no model sizes"
    if split.cards > 1 and split.link_gbps is None:
        return None, None, f"bandwidth of the link ({split.link or 'unknown'}) not in the catalog"
    rates = [_tokens(need, gpu, split, b) for b in (1, need.batch)]
    return rates[0], rates[1], None


def _tokens(need: Need, gpu: Gpu, split: Split, batch: int) -> int:
    # A card reads its share of the weights and the KV heads it holds (one, replicated,
    # when the degree exceeds them).
    kv_cards = min(split.tp, need.kv_heads) if need.kv_heads else split.tp
    read = Fraction(need.weights_bytes or 0, split.tp)
    read += Fraction(batch * (need.kv_per_sequence or 0), kv_cards)
    step = read / (Fraction(gpu.bandwidth_gbps) * 10**9)
    if split.cards > 1 and split.link_gbps is not None:
        state = batch * (need.hidden or 0) * need.compute_bytes
        sent = Fraction(2 * (need.layers or 0) * 2 * (split.tp - 1) * state, split.tp)
        sent += (split.pp - 1) * state
        step += sent / (Fraction(split.link_gbps) * 10**9)
    return math.floor(batch / step)
