"""The card choice as the lines `iteralab gpus` prints (and the memory notebook shows).

One renderer for the command and the notebook, so both read the same numbers.
Plain text, no terminal library. Stdlib only.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolkit.money.tariffs import rules
from toolkit.planner import splits
from toolkit.planner.choice import CEILING_NOTE, Candidate, Choice, usd
from toolkit.planner.memory import RUNTIME_BYTES, gib

#: Per column of the card table: right-aligned (">") or left-aligned ("<").
ALIGN = ("<", ">", "<", ">", "<", "<", ">", ">", ">", ">", ">", "<")


def lines(choice: Choice) -> list[str]:
    """Every line of the answer: the need, the cards, the offers, warnings, margins, notes."""
    out = _need(choice)
    out += _table(choice, choice.native)
    if choice.apart:
        est = choice.estimate
        lacking = est.precision if est else ""
        out.append(
            f"not native for {lacking} (listed apart, as they would run with the weights upcast):"
        )
        out += _table(choice, choice.apart)
        out += [f"note: {c.precision_note}" for c in choice.apart]
    if choice.kv_note:
        out.append(f"note: {choice.kv_note}")
    out += _offers(choice)
    out += [f"warning: {c.gpu.slug}: {w}" for c in choice.candidates for w in c.warnings]
    out += _margins(choice)
    if not any(c.tokens_batch1 for c in choice.candidates):
        reasons = sorted({c.ceiling_reason for c in choice.candidates if c.ceiling_reason})
        out.append(f"tok/s: not computed ({'; '.join(reasons)})")
    out += [
        f"note: {CEILING_NOTE}",
        f"note: {splits.COMMUNICATION_NOTE}",
        "note: GiB/card = tensors split over the split's cards + runtime per card; "
        "'short 1' = what one card lacks against its usable GiB; VRAM as labelled "
        "(GB = GiB)",
        *_usable(choice),
        "note: a split is priced only when one lot holds it; tok/s/USD = the lot's "
        f"replicas x tok/s at b={choice.need.batch} / the lot's plan price",
    ]
    if choice.estimate is not None:
        out += [f"note: {note}" for note in choice.estimate.notes]
    return out


def _need(choice: Choice) -> list[str]:
    est, need = choice.estimate, choice.need
    if est is None:
        head = [
            f"need: {gib(need.tensors_bytes)} GiB (--need-gb) + {gib(need.runtime_bytes)} "
            f"GiB runtime per card = {gib(need.per_card())} GiB on one card"
        ]
    else:
        head = [
            f"need: {est.shape.name}, {est.describe()}",
            f"  tensors {gib(est.subtotal)} GiB + {est.allocator_pct}% allocator + "
            f"{gib(RUNTIME_BYTES)} GiB runtime per card = {gib(need.per_card())} GiB on "
            "one card",
        ]
    return [*head, f"  {choice.split_rule}"]


def _table(choice: Choice, candidates: Sequence[Candidate]) -> list[str]:
    rows = [
        [
            "gpu",
            "VRAM/usable",
            "memory",
            "GB/s",
            "split",
            "link",
            "GiB/card",
            "short 1",
            "tok/s b=1",
            f"b={choice.need.batch}",
            "tok/s/USD",
            _lot_heading(choice),
        ]
    ]
    for c in candidates:
        g = c.gpu
        rows.append(
            [
                g.slug,
                f"{g.vram_gb}/{gib(g.usable_bytes)}",
                g.memory_type,
                str(g.bandwidth_gbps),
                c.split_label,
                (c.split.link if c.split and c.split.link else "-"),
                gib(c.per_card_bytes),
                gib(c.shortfall_bytes) if c.shortfall_bytes else "-",
                _count(c.tokens_batch1),
                _count(c.tokens_batch),
                f"{c.tokens_per_usd:.3f}" if c.tokens_per_usd is not None else "-",
                _price(c),
            ]
        )
    return columns(rows, ALIGN)


def _lot_heading(choice: Choice) -> str:
    """The price column: a flat plan's lot, or the schedule's cost flat or metered."""
    if choice.hours is None:
        return f"{choice.plan_days}-day lot"
    return f"lot for {rules.hours_text(choice.hours)}"


def _count(n: int | None) -> str:
    return f"{n:,}" if n is not None else "-"


def _price(c: Candidate) -> str:
    if c.budget_usd is not None:
        return f"{usd(c.budget_usd)} USD"
    return "not offered" if c.offer else c.price_reason or ""


def _offers(choice: Choice) -> list[str]:
    priced = [c for c in choice.candidates if c.offer]
    if not priced:
        return []
    out = [
        f"offers ({choice.plan_days}-day plan of the price catalog):"
        if choice.hours is None
        else f"offers (the cheapest of flat plans and metered prices for the "
        f"{rules.hours_text(choice.hours)} schedule):"
    ]
    for c in priced:
        o = c.offer
        assert o is not None
        if c.replicas is None or c.split is None:
            out.append(f"  {c.gpu.slug}: {c.price_reason}")
            continue
        seller = f" from provider {o.provider}" if o.provider else ""
        text = (
            f"  {c.gpu.slug}: {usd(o.price_per_lot_usd)} USD{seller}, {o.billing_unit}; "
            f"{o.availability_text}; {o.extras_text()}"
        )
        if c.tokens_per_usd is not None:
            copies = "replica" if c.replicas == 1 else "replicas"
            text += (
                f"; {c.replicas} {copies} of {c.split.label} x {c.tokens_batch:,} tok/s "
                f"at b={choice.need.batch} = {c.tokens_per_usd:.3f} tok/s per USD"
            )
        out.append(text)
    return out


def _usable(choice: Choice) -> list[str]:
    """Which figure each card is fitted against: the total it reports, or the label less
    the driver's reserve."""
    by_basis: dict[str, list[str]] = {}
    for c in choice.candidates:
        basis = (
            "reported total (gpus.csv usable_mib, with its source)"
            if c.gpu.usable_mib is not None
            else c.gpu.usable_basis
        )
        by_basis.setdefault(basis, []).append(c.gpu.slug)
    return [
        f"note: usable GiB (what a card must hold) = {basis}: {', '.join(sorted(slugs))}"
        for basis, slugs in sorted(by_basis.items())
    ]


def _margins(choice: Choice) -> list[str]:
    if not choice.margins:
        return []
    first = choice.margins[0]
    out = [
        f"margins: the table holds at a {first.allocator_pct}% allocator margin and "
        f"{first.seq_len:,} tokens; the split each card needs as they grow:"
    ]
    rows = [["gpu", *(f"{m.allocator_pct}%, {m.seq_len:,} tok" for m in choice.margins)]]
    for c in choice.candidates:
        name = c.gpu.slug if c.native else f"{c.gpu.slug} (upcast)"
        rows.append([name, *(m.splits[c.gpu.slug] for m in choice.margins)])
    out += columns(rows, ("<",) * len(rows[0]))
    longest, most = (
        max(m.seq_len for m in choice.margins),
        choice.estimate and choice.estimate.shape.max_positions,
    )
    if most and longest > most:
        out.append(
            f"note: margins at {longest:,} tokens exceed the model's "
            f"max_position_embeddings {most:,}: memory arithmetic only"
        )
    return out


def columns(rows: list[list[str]], align: Sequence[str]) -> list[str]:
    """Rows as aligned text: each column as wide as its longest value, parted by a space
    (two before the last), however long a value is; trailing spaces removed."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [f"{cell:{a}{w}}" for cell, a, w in zip(row, align, widths, strict=True)]
        out.append((" ".join(cells[:-1]) + "  " + cells[-1]).rstrip())
    return out
