"""A Variants row's padding policy, as the runner applies it and validate checks it (stdlib only).

``dynamic`` pads each batch to its longest input; ``max_length`` pads every batch to
max_length; ``bucket-N`` pads each batch to the next multiple of N tokens, capped at
max_length, so that the widths a batch can have are known before any corpus is read (the
load phase warms each of them on synthetic token ids).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DYNAMIC = "dynamic"
MAX_LENGTH = "max_length"
BUCKET = "bucket"
BUCKET_PREFIX = f"{BUCKET}-"
#: What the template's dropdown offers; any bucket-N with N a whole number of tokens is
#: accepted too (validate checks it).
SUGGESTED = (DYNAMIC, MAX_LENGTH, "bucket-16", "bucket-32", "bucket-64")
#: What to type, for a message.
SPELLING = "dynamic, max_length or bucket-N (N a whole number of tokens, e.g. bucket-32)"


@dataclass(frozen=True)
class Padding:
    """A parsed padding policy: ``dynamic``, ``max_length`` or ``bucket`` with its step."""

    kind: str
    #: The bucket step in tokens (0 unless ``kind`` is :data:`BUCKET`).
    step: int = 0

    def width(self, longest: int, max_length: int) -> int:
        """The width a batch whose longest input has ``longest`` tokens is padded to."""
        if self.kind == MAX_LENGTH:
            return max_length
        if self.kind == DYNAMIC:
            return longest
        return min(math.ceil(longest / self.step) * self.step, max_length)

    def widths(self, max_length: int) -> list[int] | None:
        """Every width a batch can have under ``max_length``, narrowest first; None for
        dynamic padding (the corpus decides)."""
        if self.kind == MAX_LENGTH:
            return [max_length]
        if self.kind == DYNAMIC:
            return None
        steps = math.ceil(max_length / self.step)
        return sorted({min(k * self.step, max_length) for k in range(1, steps + 1)})


def parse(value: Any) -> Padding:
    """The policy a padding cell names; ValueError saying what is wrong otherwise."""
    text = str(value).strip() if value is not None else ""
    if text in (DYNAMIC, MAX_LENGTH):
        return Padding(text)
    if text.startswith(BUCKET_PREFIX):
        step = text[len(BUCKET_PREFIX) :]
        if step.isascii() and step.isdigit() and int(step) >= 1:
            return Padding(BUCKET, int(step))
        raise ValueError(f"{text!r}: the bucket size after 'bucket-' must be a whole number >= 1")
    raise ValueError(f"{text!r} is not a padding policy")


def problem(value: Any, max_length: Any) -> str | None:
    """Why a Variants row's padding cannot run under its max_length; None when it can (a
    blank cell is the required-column check's)."""
    if value is None or str(value).strip() == "":
        return None
    try:
        policy = parse(value)
    except ValueError as exc:
        return str(exc)
    if policy.kind == BUCKET and isinstance(max_length, int) and policy.step > max_length:
        return (
            f"bucket-{policy.step} is wider than max_length {max_length}: every batch would "
            "be padded to max_length"
        )
    return None
