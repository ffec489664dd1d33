"""Seals: short SHA-256 digests of what a save wrote, kept in a defined name's formula, so
that a later read can tell the save's own text from text a person typed over it.

Used for the Summary notes (:mod:`toolkit.workbook.written`) and the Guide and Overview
(:mod:`toolkit.workbook.text_sheets`). Stdlib only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

#: Hex digits kept of each SHA-256: a chance of 1 in 2**40 of missing a typed text.
DIGEST_CHARS = 10
#: Excel holds at most 255 characters in a formula's text literal, 8,192 in a formula.
_PER_LITERAL = 250 // (DIGEST_CHARS + 1)
_FORMULA = 8000
_DIGEST = re.compile(rf"\b[0-9a-f]{{{DIGEST_CHARS}}}\b")


def digest(*parts: Any) -> str:
    """The short digest of ``parts`` (None as empty text), joined by NUL."""
    text = "\x00".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def formula(digests: Iterable[str]) -> str | None:
    """A defined name's formula holding ``digests`` (``="d1 d2 ..."&"..."``), each whole in
    one text literal; None when there is none, or more than one formula holds (about 700)."""
    unique = sorted(set(digests))
    if not unique:
        return None
    literals = [" ".join(unique[i : i + _PER_LITERAL]) for i in range(0, len(unique), _PER_LITERAL)]
    text = "=" + "&".join(f'"{p}"' for p in literals)
    return text if len(text) <= _FORMULA else None


def sealed(text: str | None) -> set[str] | None:
    """The digests a seal's formula holds; None without a seal."""
    return set(_DIGEST.findall(text)) if text else None
