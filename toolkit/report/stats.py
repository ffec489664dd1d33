"""Statistics for five runs: median, min, max, and whether a series separates two variants.

Pure functions on plain numbers (R14-R15); stdlib only.

The discrimination rule, chosen for five runs per variant and documented here
once: two variants are *separated* when their ranges do not overlap (every run
of one is faster than every run of the other) **and** enough runs were made for
that to be unlikely by chance. Without a real difference, every ordering of the
n + m runs is equally likely, so the chance that the two sets fall wholly apart,
in either direction, is 2 / C(n + m, n): 2/252 = 0.8% for 5 runs against 5,
2/20 = 10% for 3 against 3. This is the exact permutation (Mann-Whitney) test
at its most extreme outcome; the rule asks for that chance to be at most 5%.
With overlapping ranges the spread is comparable to the gap between medians
and the series does not yet tell the two apart. No p95 is ever computed from
five runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from toolkit.money.tariffs import rules

#: Largest chance of a clean split without a real difference that still counts as separated.
SIGNIFICANCE = 0.05
#: A variant whose runs spread by more than this share of its median is named as noisy.
NOISY_SPREAD = 0.10
#: What to try when a series does not separate two variants (R15).
CAUSES = "loading, input shape, compilation, concurrent activity"

SEPARATED = "separated"
NOT_SEPARATED = "not separated"
NO_DATA = "no data"
#: A pair one of whose variants has attempt rows with integrity findings (edited, copied,
#: unsealed, changed predictions): its numbers are shown, never trusted for a verdict.
UNTRUSTED = "cannot be trusted"
#: A pair measured on different corpora (or a variant whose runs span several): their
#: durations are different work, never compared.
NOT_COMPARABLE = "not comparable"


def median(values: Sequence[float]) -> float | None:
    """The median (the mean of the two middle values for an even count); None when empty.

    Same definition as the spreadsheet's MEDIAN.
    """
    return statistics.median(values) if values else None


def minimum(values: Sequence[float]) -> float | None:
    """The smallest value; None when empty (never 0)."""
    return min(values) if values else None


def maximum(values: Sequence[float]) -> float | None:
    """The largest value; None when empty (never 0)."""
    return max(values) if values else None


def chance_of_clean_split(n: int, m: int) -> float:
    """Chance that n and m exchangeable runs fall wholly apart, either way: 2 / C(n+m, n)."""
    if n < 1 or m < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n + m, n))


def runs_needed() -> int:
    """Smallest equal number of runs per variant for which a clean split can be significant."""
    k = 1
    while chance_of_clean_split(k, k) > SIGNIFICANCE:
        k += 1
    return k


@dataclass(frozen=True)
class Separation:
    """Whether a series separates two variants, with the numbers behind the verdict."""

    first: str
    second: str
    verdict: str  # SEPARATED, NOT_SEPARATED or NO_DATA
    reason: str  # e.g. "ranges overlap"
    advice: str  # what to do next; empty when separated
    faster: str | None = None
    gap_s: float | None = None  # |median difference|
    spread_s: float | None = None  # the wider of the two min-max ranges
    chance: float | None = None  # 2 / C(n+m, n)

    def sentence(self) -> str:
        """One line a reviewer reads, e.g. ``b4 vs b8: not separated (ranges overlap); ...``."""
        text = f"{self.first} vs {self.second}: {self.verdict} ({self.reason})"
        return f"{text}; {self.advice}" if self.advice else text


def not_run(first: str, second: str, idle: Sequence[str]) -> Separation:
    """The verdict of a pair one of whose variants has no attempt yet: nothing failed, so
    the advice is to run it, not to fix failures."""
    return Separation(
        first,
        second,
        NO_DATA,
        f"{' and '.join(idle)} not run yet",
        "run it under the same protocol",
    )


def separation(
    first: str, first_runs: Sequence[float], second: str, second_runs: Sequence[float]
) -> Separation:
    """Compare two variants' measured durations by the rule in this module's docstring."""
    missing = [name for name, runs in ((first, first_runs), (second, second_runs)) if not runs]
    if missing:
        return Separation(
            first,
            second,
            NO_DATA,
            f"no successful run of {' and '.join(missing)}",
            "fix the failures, then measure again under the same protocol",
        )
    a_med, b_med = statistics.median(first_runs), statistics.median(second_runs)
    gap = abs(a_med - b_med)
    spread = max(max(first_runs) - min(first_runs), max(second_runs) - min(second_runs))
    chance = chance_of_clean_split(len(first_runs), len(second_runs))
    faster = first if a_med < b_med else second if b_med < a_med else None
    apart = max(first_runs) < min(second_runs) or max(second_runs) < min(first_runs)
    numbers: dict[str, Any] = dict(faster=faster, gap_s=gap, spread_s=spread, chance=chance)
    counts = f"{len(first_runs)} vs {len(second_runs)} runs"
    if apart and chance <= SIGNIFICANCE:
        reason = (
            f"ranges apart, {faster} faster by {gap:.3f} s at the median; "
            f"{counts}, chance {chance:.1%}"
        )
        return Separation(first, second, SEPARATED, reason, "", **numbers)
    noisy = [
        f"{name}'s runs spread {(max(r) - min(r)) / statistics.median(r):.0%} of its median"
        for name, r in ((first, first_runs), (second, second_runs))
        if statistics.median(r) > 0 and (max(r) - min(r)) / statistics.median(r) > NOISY_SPREAD
    ]
    if apart:
        reason = f"ranges apart but only {counts}: chance {chance:.0%} without a real difference"
        advice = (
            f"add repetitions under the same protocol ({runs_needed()} or more per "
            "variant make a clean split meaningful)"
        )
    else:
        reason = f"ranges overlap: gap {gap:.3f} s between medians, spread up to {spread:.3f} s"
        advice = f"add repetitions under the same protocol, or look at {CAUSES}"
        if noisy:
            advice += " (" + "; ".join(noisy) + ")"
    return Separation(first, second, NOT_SEPARATED, reason, advice, **numbers)


@dataclass(frozen=True)
class CostComparison:
    """Whether two configurations' costs differ by more than the measurement noise moves them."""

    first: str
    second: str
    verdict: str  # BEYOND_NOISE, SAME_COST, WITHIN_NOISE or NO_DATA
    reason: str

    def sentence(self) -> str:
        """One line a reviewer reads."""
        return f"{self.first} vs {self.second}: {self.verdict} ({self.reason})"


BEYOND_NOISE = "differ beyond the measurement noise"
WITHIN_NOISE = "within the measurement noise"
SAME_COST = "same cost"


def cost_comparison(
    first: str,
    first_costs: tuple[Decimal, Decimal] | None,
    second: str,
    second_costs: tuple[Decimal, Decimal] | None,
) -> CostComparison:
    """Compare two budget intervals (budget at the fastest run, at the slowest run).

    The budgets are the projection's (the plans that cover the expected outputs), not the
    cost per accepted corpus, which divides by the corpora a person confirmed: noise moves
    the plan, not the confirmation.

    The costs differ beyond the noise when the intervals do not overlap; when they
    overlap, which one is cheaper depends on which run is typical.
    """
    missing = [n for n, c in ((first, first_costs), (second, second_costs)) if c is None]
    if missing or first_costs is None or second_costs is None:
        return CostComparison(first, second, NO_DATA, f"no cost for {' and '.join(missing)}")
    a_lo, a_hi = sorted(first_costs)
    b_lo, b_hi = sorted(second_costs)
    fixed = a_lo == a_hi and b_lo == b_hi
    if a_hi < b_lo or b_hi < a_lo:
        cheaper, dearer = (first, second) if a_hi < b_lo else (second, first)
        diff = (b_lo - a_hi) if a_hi < b_lo else (a_lo - b_hi)
        how = (
            "the runs' spread does not change either plan"
            if fixed
            else "even at the least favourable runs"
        )
        return CostComparison(
            first,
            second,
            BEYOND_NOISE,
            f"{cheaper} cheaper than {dearer} by at least "
            f"{_money(diff)} for the expected outputs; {how}",
        )
    if fixed:
        return CostComparison(
            first,
            second,
            SAME_COST,
            f"{_money(a_lo)} each for the expected outputs; the runs' spread changes neither plan",
        )
    return CostComparison(
        first,
        second,
        WITHIN_NOISE,
        f"budgets {_money(a_lo)}-{_money(a_hi)} and "
        f"{_money(b_lo)}-{_money(b_hi)} overlap: which is cheaper depends "
        "on which run is typical",
    )


def _money(amount: Decimal) -> str:
    """A budget for the expected outputs (a forecast): to the cent."""
    return rules.usd(rules.to_cent(amount))
