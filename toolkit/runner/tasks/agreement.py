"""Quality of a generation attempt: agreement with the reference variant, and chrF (R16).

Two outputs of the same model for the same prompt, e.g. bf16 against fp32, are compared
token by token (the token ids the predictions file holds):

- ``exact_agreement``: the share of prompts whose outputs are identical token for token;
- ``token_agreement``: over all prompts, positions where both outputs hold the same token
  divided by the positions of the longer output (a missing token counts as a difference),
  so that an output that drifts after its tenth token still agrees on its first nine.

Different tokenizers give incomparable ids: the comparison is then refused (None with its
reason), never made on text that merely looks alike.

chrF against the corpus's ``reference`` continuations comes from sacrebleu (a maintained
implementation, never hand-written), reported on a 0-1 scale (sacrebleu's score / 100)
so that the Protocol's threshold and tolerance read like the classification metrics'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolkit.evidence import corpus


@dataclass(frozen=True)
class Agreement:
    """Agreement of one attempt's outputs with the reference's, over the shared ids."""

    exact: float
    tokens: float
    compared: int


def agreement(
    rows: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]]
) -> tuple[Agreement | None, str | None]:
    """Compare outputs by id; (None, reason) when no id is shared or ids lack token ids."""
    theirs = {str(r["id"]): r for r in reference}
    pairs = [(r, theirs[str(r["id"])]) for r in rows if str(r["id"]) in theirs]
    if not pairs:
        return None, "no prompt id shared with the reference's predictions"
    same = 0
    matched = 0
    positions = 0
    for ours, ref in pairs:
        a, b = ours.get("token_ids"), ref.get("token_ids")
        if not isinstance(a, list) or not isinstance(b, list):
            return None, "a predictions row has no token_ids: token agreement needs them"
        same += a == b
        matched += sum(x == y for x, y in zip(a, b, strict=False))
        positions += max(len(a), len(b))
    tokens = matched / positions if positions else 1.0
    return Agreement(same / len(pairs), tokens, len(pairs)), None


def chrf(
    outputs: Sequence[str], references: Sequence[str | None]
) -> tuple[float | None, str | None]:
    """Corpus chrF (sacrebleu, default settings: character 6-grams, beta 2) on a 0-1 scale;
    (None, reason) when a reference is missing or sacrebleu is not installed."""
    if not outputs:
        return None, "no outputs"
    if any(not r for r in references):
        missing = sum(not r for r in references)
        return None, f"{missing} of {len(references)} prompts have no reference text"
    try:
        from sacrebleu.metrics import CHRF
    except ImportError:
        return None, "sacrebleu is not installed (pip install 'iteragpu-lab[runner]')"
    score = CHRF().corpus_score(list(outputs), [[str(r) for r in references]])
    return float(score.score) / 100.0, None


def chrf_scores(
    rows: Sequence[Mapping[str, Any]], references: Mapping[str, str | None], kinds: Sequence[str]
) -> tuple[float | None, str | None, dict[str, tuple[float, int]]]:
    """chrF of predictions rows against the corpus's references by id, with its reason when
    empty, and per predeclared subgroup (none without an overall score): the figures an
    attempt reports and its reference variant's, which R16 compares."""
    score, reason = chrf(
        [str(r["prediction"]) for r in rows], [references.get(str(r["id"])) for r in rows]
    )
    groups = chrf_by_subgroup(rows, references, kinds) if score is not None else {}
    return score, reason, groups


def chrf_by_subgroup(
    rows: Sequence[Mapping[str, Any]], references: Mapping[str, str | None], kinds: Sequence[str]
) -> dict[str, tuple[float, int]]:
    """chrF and size of each predeclared subgroup (``kind=value``, e.g. ``stratum=short``)
    over predictions rows, which carry their subgroup fields; a subgroup with a prompt
    lacking its reference is left out."""
    out: dict[str, tuple[float, int]] = {}
    for kind in kinds:
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for row in rows:
            groups.setdefault(str(row.get(kind)), []).append(row)
        for value in sorted(
            groups, key=lambda v: (corpus.stratum_rank(v) if kind == corpus.STRATUM else (0, 0), v)
        ):
            members = groups[value]
            score, _ = chrf(
                [str(r["prediction"]) for r in members],
                [references.get(str(r["id"])) for r in members],
            )
            if score is not None:
                out[f"{kind}={value}"] = (score, len(members))
    return out


def sacrebleu_signature() -> str | None:
    """sacrebleu's chrF signature (version and settings), None when not installed."""
    try:
        from sacrebleu.metrics import CHRF
    except ImportError:
        return None
    return str(CHRF().get_signature())
