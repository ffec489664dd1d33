"""A memory estimate as the lines `iteralab memory estimate` prints: the model, the workload,
then every term with its bytes, GiB and formula, the margin, the total and the notes.

Plain text, no terminal library. Stdlib only.
"""

from __future__ import annotations

from toolkit.planner.memory import Estimate, gib


def lines(est: Estimate) -> list[str]:
    """Every line of the estimate; the columns widen with their longest value, so huge sizes
    never run together."""
    p = est.shape.params
    out = [
        f"model: {est.shape.name} ({est.shape.family}), {p.total:,} parameters",
        f"  parameters: {p.formula}",
        f"estimate: {est.describe()}",
    ]
    m = est.margin
    rows = [(t.name, t.bytes, t.formula) for t in est.terms]
    rows += [
        ("tensors", est.subtotal, "sum of the terms above (compare with max_memory_allocated)"),
        (m.name, m.bytes, m.formula),
        ("total", est.total, "tensors + margin"),
    ]
    width = max(len(f"{n:,}") for _, n, _ in rows) + 2
    gib_width = max(9, max(len(gib(n)) for _, n, _ in rows) + 2)
    out.append(f"{'term':<17}{'bytes':>{width}}{'GiB':>{gib_width}}  formula")
    out += [f"{name:<17}{n:>{width},}{gib(n):>{gib_width}}  {formula}" for name, n, formula in rows]
    return out + [f"note: {note}" for note in est.notes]
