"""What must fit on the cards: the tensors, a runtime per card, and what decoding reads.

A :class:`Need` is made from a memory estimate (:mod:`toolkit.planner.memory`)
or from a number of GB typed by the user. It keeps the sizes that decide how a
model may be split (attention heads, KV heads, layers) and what one decoding
step reads and sends (weights, KV cache, hidden size). Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from toolkit.planner.gpus import GB_LABEL
from toolkit.planner.memory import BYTES, RUNTIME_BYTES, Estimate


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, kw_only=True)
class Need:
    """What must fit: the tensors (split across cards) and a per-card runtime."""

    tensors_bytes: int
    runtime_bytes: int
    weights_bytes: int | None = None  # read per decoding step
    kv_per_sequence: int | None = None
    batch: int = 1
    ceiling_reason: str | None = None
    heads: int | None = None
    kv_heads: int | None = None
    layers: int | None = None
    hidden: int | None = None
    compute_bytes: int = 2  # one element of the hidden state, as cards exchange it
    allocator_pct: int | None = None

    def per_card(self, tp: int = 1, pp: int = 1) -> int:
        """Bytes one card holds when the tensors are split over ``tp`` tensor-parallel cards
        in each of ``pp`` pipeline stages: a stage holds at most ceil(layers / pp) layers'
        share of the tensors, spread evenly over its cards, plus the runtime."""
        stage = self.tensors_bytes
        if pp > 1:
            stage = (
                _ceil_div(self.tensors_bytes * _ceil_div(self.layers, pp), self.layers)
                if self.layers
                else _ceil_div(self.tensors_bytes, pp)
            )
        return _ceil_div(stage, tp) + self.runtime_bytes

    @classmethod
    def from_estimate(cls, est: Estimate) -> Need:
        """The need of an estimate: tensors plus its allocator margin, a runtime per card."""
        tensors = est.subtotal + _ceil_div(est.subtotal * est.allocator_pct, 100)
        reason = None
        if est.workload != "inference":
            reason = f"{est.workload} workload: no decoding"
        elif not est.shape.generative:
            reason = "encoder: not generative, no decoding"
        s = est.shape
        return cls(
            tensors_bytes=tensors,
            runtime_bytes=RUNTIME_BYTES,
            weights_bytes=est.term("weights").bytes,
            kv_per_sequence=est.kv_per_sequence,
            batch=est.batch,
            ceiling_reason=reason,
            heads=s.heads,
            kv_heads=s.kv_heads,
            layers=s.layers,
            hidden=s.hidden,
            compute_bytes=BYTES[est.compute],
            allocator_pct=est.allocator_pct,
        )

    @classmethod
    def from_gb(cls, gb: Decimal) -> Need:
        """A total need given in the GB of the card labels (GiB): the tensors; each card of
        a split also holds a runtime, as for a model."""
        return cls(
            tensors_bytes=int(gb * GB_LABEL),
            runtime_bytes=RUNTIME_BYTES,
            ceiling_reason="no model sizes (--need-gb)",
        )
