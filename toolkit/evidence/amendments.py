"""What the protocol's amendments relaxed after attempts had run (R2, R16).

`iteralab amend` logs each amendment in Audit with a snapshot of Protocol and
Variants (:mod:`toolkit.evidence.locking`). Comparing each snapshot with the one
before it tells whether the threshold was lowered or the tolerance widened, and
whether attempts had already run then (their ``protocol_sha256`` is an earlier
lock's). The seed asks that a threshold changed after seeing the final corpus be
backed by a new, independent evaluation: runs on a corpus measured before the
change (its Manifest ``corpus_sha256``) are not that evaluation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolkit.workbook.model import Row, WorkbookData

#: Protocol fields whose change in one direction loosens the quality gate.
LOOSER: dict[str, Callable[[float, float], bool]] = {
    "threshold": lambda old, new: new < old,
    "tolerance": lambda old, new: new > old,
}
VERB = {"threshold": "lowered", "tolerance": "widened"}


@dataclass(frozen=True, kw_only=True)
class Relaxation:
    """A threshold lowered or a tolerance widened by an amendment made after attempts ran."""

    field: str  # "threshold" or "tolerance"
    before: float
    after: float
    at: str  # the amendment's Audit time
    reason: str
    attempts_before: int
    #: Corpus fingerprints of the attempts recorded before the amendment.
    corpora_before: frozenset[str]

    def text(self) -> str:
        """E.g. ``threshold lowered from 0.6 to 0.5 by the amendment of ... after 36 ...``."""
        return (
            f"{self.field} {VERB[self.field]} from {self.before:g} to {self.after:g} by the "
            f"amendment of {self.at} ({self.reason}) after {self.attempts_before} "
            "attempt(s) had run"
        )

    def seen(self, corpora: frozenset[str]) -> list[str]:
        """Which of ``corpora`` were measured before the amendment (sorted)."""
        return sorted(corpora & self.corpora_before)


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _protocol(row: Row) -> dict[str, Any]:
    """The Protocol fields of a lock or amendment's snapshot ({} when unreadable)."""
    try:
        form = json.loads(str(row.get("details") or ""))["snapshot"]["Protocol"]
    except (ValueError, KeyError, TypeError):
        return {}
    return form if isinstance(form, dict) else {}


def relaxations(data: WorkbookData) -> list[Relaxation]:
    """Every loosening of the gate made by an amendment after attempts had run, in order."""
    locks = [r for r in data.tables["Audit"] if r.get("action") in ("lock", "amend")]
    corpus_of = {m.get("manifest_id"): m.get("corpus_sha256") for m in data.tables["Manifest"]}
    found = []
    for k, row in enumerate(locks[1:], start=1):
        earlier = {str(r.get("protocol_sha256")) for r in locks[:k]}
        ran = [a for a in data.tables["Attempts"] if str(a.get("protocol_sha256")) in earlier]
        if row.get("action") != "amend" or not ran:
            continue
        corpora = frozenset(
            str(corpus_of[a.get("manifest_id")]) for a in ran if corpus_of.get(a.get("manifest_id"))
        )
        old, new = _protocol(locks[k - 1]), _protocol(row)
        for name, looser in LOOSER.items():
            before, after = _number(old.get(name)), _number(new.get(name))
            if before is not None and after is not None and looser(before, after):
                found.append(
                    Relaxation(
                        field=name,
                        before=before,
                        after=after,
                        at=str(row.get("at")),
                        reason=str(row.get("reason") or "no reason given"),
                        attempts_before=len(ran),
                        corpora_before=corpora,
                    )
                )
    return found
