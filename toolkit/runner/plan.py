"""The campaign plan: which variant runs when, what counts as done, the warm-up rule.

Pure functions (no torch): the rotation of R11 (1-4-8, 4-8-1, 8-1-4, ...),
run once per declared seed within each repetition (R17: seeds kept apart),
the slots still to run on ``--resume``, attempt ids, and the protocol's
warm-up rule read as numbers.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolkit.errors import UsageError
from toolkit.evidence.warmup import Warmup as Warmup  # the one reader, validate's too
from toolkit.evidence.warmup import parse_warmup as parse_warmup

#: Statuses that settle a slot: a failure is a result (R13) and is never retried silently.
SETTLED = ("completed", "failed")


@dataclass(frozen=True)
class Slot:
    """One planned attempt: repetition (1-based), position in it (1-based), variant, and
    the seed it runs with (None when the protocol declares none)."""

    repetition: int
    position: int
    variant_id: str
    seed: int | None = None


def rotation(
    variant_ids: Sequence[str], repetitions: int, rotate: bool = True, seeds: Sequence[int] = ()
) -> list[Slot]:
    """Every slot of the campaign in running order.

    With ``rotate`` the order shifts by one each repetition, starting from the
    declared order: [1, 4, 8] gives 1-4-8, 4-8-1, 8-1-4, 1-4-8, ... Each repetition
    runs that order once per seed, in declared order (seeds 0, 7: rep 1 seed 0, rep 1
    seed 7, rep 2 seed 0, ...), so every seed sees the same rotation.
    """
    slots = []
    count = len(variant_ids)
    each: list[int | None] = [*seeds] or [None]  # no seed declared: one slot, seed None
    for rep in range(1, repetitions + 1):
        shift = (rep - 1) % count if rotate and count else 0
        order = list(variant_ids[shift:]) + list(variant_ids[:shift])
        for seed in each:
            slots += [Slot(rep, pos, vid, seed) for pos, vid in enumerate(order, start=1)]
    return slots


def pending(
    slots: Sequence[Slot], attempts: Iterable[dict[str, Any]], unrecorded_seed: int | None = None
) -> list[Slot]:
    """Slots without a settled attempt (completed or failed); interrupted ones run again.

    An attempt recorded without a seed (before layout 3 the runner applied the first
    declared seed and did not record it) counts as ``unrecorded_seed``.
    """
    done = set()
    for a in attempts:
        if a.get("status") in SETTLED:
            seed = a.get("seed")
            done.add(
                (
                    a.get("variant_id"),
                    a.get("repetition"),
                    unrecorded_seed if seed is None else seed,
                )
            )
    return [s for s in slots if (s.variant_id, s.repetition, s.seed) not in done]


def attempt_id(sequence: int, slot: Slot, run_tag: str, with_seed: bool = False) -> str:
    """A readable id unique across machines: ``a007-b8-fp32-r3-5c1e`` (sequence over the
    whole workbook, then the run's random tag: two copies of a campaign run on two rented
    boxes never give the same id, so their evidence merges). ``with_seed`` (a protocol of
    several seeds) names the seed too: ``a007-b8-fp32-r3-s7-5c1e``."""
    seed = f"-s{slot.seed}" if with_seed and slot.seed is not None else ""
    return f"a{sequence:03d}-{slot.variant_id}-r{slot.repetition}{seed}-{run_tag}"


def run_tag() -> str:
    """Four random hex digits naming one `iteralab run` (a clash is refused by merge)."""
    return secrets.token_hex(2)


def select(
    variants: Sequence[dict[str, Any]], series: int | None = None, variant_ids: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The declared variants to run, in declared order, filtered by series or ids."""
    chosen = list(variants)
    if series is not None:
        chosen = [v for v in chosen if v.get("series") == series]
        if not chosen:
            found = sorted({str(v.get("series")) for v in variants})
            raise UsageError(
                f"no variant of series {series} is declared (series: {', '.join(found) or 'none'})",
                hint="pick a declared series",
            )
    if variant_ids:
        known = {v.get("variant_id") for v in variants}
        unknown = [i for i in variant_ids if i not in known]
        if unknown:
            raise UsageError(
                f"variant(s) {', '.join(unknown)} not declared in Variants",
                hint="declared: " + ", ".join(sorted(str(k) for k in known)),
            )
        chosen = [v for v in chosen if v.get("variant_id") in variant_ids]
        if not chosen:
            raise UsageError(
                "no variant matches both --series and --variant", hint="drop one of the two options"
            )
    return chosen


def seeds(text: object) -> list[int]:
    """The protocol's integer seeds, in order, each once (``"0, 7, 0"`` -> [0, 7])."""
    values: list[int] = []
    for part in re.split(r"[,;\s]+", "" if text is None else str(text)):
        if part.strip().lstrip("-").isdigit() and int(part) not in values:
            values.append(int(part))
    return values
