"""The Protocol's warm-up rule read as numbers: the one reader of it.

`validate` and `lock` parse it as the runner will, so that a rule the runner cannot apply is
found before the protocol is locked (fixing its wording afterwards needs an amend).
Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolkit.errors import ProtocolError


@dataclass(frozen=True)
class Warmup:
    """The warm-up rule as numbers: the first ``items`` inputs, ``passes`` times, untimed."""

    items: int
    passes: int
    text: str

    @property
    def none(self) -> bool:
        """No warm-up at all."""
        return self.items == 0 or self.passes == 0


_WORDS = {"once": 1, "twice": 2, "thrice": 3}
_RULE = re.compile(
    r"first\s+(?P<items>\d+)\s+(?:items?|inputs?|texts?)\b.*?"
    r"(?:(?P<word>once|twice|thrice)|(?P<count>\d+)\s*(?:x\b|times|passes|runs))",
    re.IGNORECASE | re.DOTALL,
)


def parse_warmup(text: str | None) -> Warmup:
    """Read the protocol's warm-up rule, e.g. ``first 16 items once, not timed``.

    Accepted: ``none``, or ``first N items`` followed by ``once``, ``twice`` or
    ``K times``/``K passes``/``K runs``. Anything else is a ProtocolError: the
    runner never guesses a rule (R8).
    """
    rule = (text or "").strip()
    if rule.lower() in ("none", "no warm-up", "no warmup"):
        return Warmup(0, 0, rule)
    match = _RULE.search(rule)
    if not match:
        raise ProtocolError(
            f"Protocol warmup_rule {rule!r} is not a rule the runner can apply",
            hint="write it as 'first 16 items once, not timed' (or '... 3 times'), or 'none'",
        )
    passes = _WORDS[match["word"].lower()] if match["word"] else int(match["count"])
    return Warmup(int(match["items"]), passes, rule)
