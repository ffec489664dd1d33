"""Check a predictions file against the corpus and the protocol (R7, R12, R16). Stdlib only.

:func:`check_ids` compares its ids with the corpus (set equality, duplicates and
missing listed); :func:`evaluate` computes the protocol's metric, the
predeclared subgroups and the verdict against the threshold and the reference
variant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.evidence import corpus
from toolkit.evidence.corpus import read_predictions

#: How many ids a note lists before saying "and N more".
LISTED_IDS = 10
#: Metric comparisons forgive this much floating-point noise.
EPSILON = 1e-12


@dataclass(frozen=True)
class IdCheck:
    """Set equality of the expected ids and those of a predictions file (R7, R12)."""

    expected: int
    observed: int
    duplicates: tuple[tuple[str, int], ...]
    missing: tuple[str, ...]
    unexpected: tuple[str, ...]

    @property
    def match(self) -> bool:
        """Exactly the expected ids, each once."""
        return not (self.duplicates or self.missing or self.unexpected)

    def notes(self) -> str:
        """What is wrong, with the first ids of each kind; empty when the ids match."""
        parts = []
        if self.duplicates:
            parts.append(
                f"{len(self.duplicates)} duplicated id(s): "
                + _listed(f"{i} x{n}" for i, n in self.duplicates)
            )
        if self.missing:
            parts.append(f"{len(self.missing)} missing id(s): " + _listed(self.missing))
        if self.unexpected:
            parts.append(f"{len(self.unexpected)} unexpected id(s): " + _listed(self.unexpected))
        return "; ".join(parts)


def _listed(values: Iterable[str]) -> str:
    values = list(values)
    shown = ", ".join(values[:LISTED_IDS])
    return shown + (f" and {len(values) - LISTED_IDS} more" if len(values) > LISTED_IDS else "")


def check_ids(expected: Sequence[str], observed: Sequence[str]) -> IdCheck:
    """Compare corpus ids with the ids of a predictions file (order ignored)."""
    counts = Counter(observed)
    wanted = set(expected)
    return IdCheck(
        expected=len(wanted),
        observed=len(counts),
        duplicates=tuple((i, n) for i, n in counts.items() if n > 1),
        missing=tuple(i for i in expected if i not in counts),
        unexpected=tuple(i for i in counts if i not in wanted),
    )


# ---------------------------------------------------------------- quality


def metric(name: str, gold: Sequence[str], predicted: Sequence[str]) -> float:
    """``accuracy`` or ``macro_f1`` (over the classes seen in gold or predictions)."""
    if len(gold) != len(predicted) or not gold:
        raise ValueError("metric needs as many predictions as gold labels, at least one")
    if name == "accuracy":
        return sum(g == p for g, p in zip(gold, predicted, strict=False)) / len(gold)
    if name == "macro_f1":
        scores = []
        for cls in sorted(set(gold) | set(predicted)):
            tp = sum(g == cls and p == cls for g, p in zip(gold, predicted, strict=False))
            fp = sum(g != cls and p == cls for g, p in zip(gold, predicted, strict=False))
            fn = sum(g == cls and p != cls for g, p in zip(gold, predicted, strict=False))
            scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
        return sum(scores) / len(scores)
    raise ValueError(f"unknown metric {name!r}")


def parse_subgroups(text: str | None) -> tuple[str, ...]:
    """The subgroups declared by the protocol, e.g. ``"stratum,label,genre"``: the length
    stratum and corpus fields (:func:`toolkit.evidence.corpus.parse_subgroups`).

    Raises ProtocolError for a name no input can be grouped by (id, text, prediction).
    """
    return corpus.parse_subgroups(text)


def subgroup_metrics(
    name: str, rows: Sequence[dict[str, Any]], kinds: Sequence[str]
) -> dict[str, tuple[float, int]]:
    """Metric and size of each predeclared subgroup, keyed ``kind=value``."""
    out: dict[str, tuple[float, int]] = {}
    for kind in kinds:
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(str(row.get(kind)), []).append(row)
        order = sorted(
            groups, key=lambda v: (corpus.stratum_rank(v) if kind == corpus.STRATUM else (0, 0), v)
        )
        for value in order:
            members = groups.get(value)
            if members:
                out[f"{kind}={value}"] = (
                    metric(
                        name,
                        [str(r["label"]) for r in members],
                        [str(r["prediction"]) for r in members],
                    ),
                    len(members),
                )
    return out


def subgroups_text(values: dict[str, tuple[float, int]]) -> str:
    """Subgroup metrics as the Attempts sheet shows them: ``stratum=short 0.5367 (n=600); ...``."""
    return "; ".join(f"{key} {value:.4f} (n={n})" for key, (value, n) in values.items())


@dataclass(frozen=True)
class Reference:
    """The reference variant's predictions, metric and subgroup metrics."""

    variant_id: str
    attempt_id: str
    predictions: dict[str, str]
    metric: float | None
    subgroups: dict[str, tuple[float, int]]


@dataclass
class Evaluation:
    """Checks of one predictions file: ids, metric, subgroups, reference, verdict."""

    ids: IdCheck
    metric: float | None = None
    metric_reason: str | None = None
    subgroups: dict[str, tuple[float, int]] = field(default_factory=dict)
    agreement: float | None = None
    agreement_reason: str | None = None
    verdict: str = "not evaluated"
    notes: list[str] = field(default_factory=list)


def load_reference(
    path: str | Path, variant_id: str, attempt_id: str, metric_name: str, kinds: Sequence[str]
) -> Reference:
    """Read the reference attempt's predictions file and recompute its metrics."""
    rows = _first_per_id(read_predictions(path))
    labelled = [r for r in rows if r.get("label") is not None]
    value = (
        metric(
            metric_name,
            [str(r["label"]) for r in labelled],
            [str(r["prediction"]) for r in labelled],
        )
        if labelled and len(labelled) == len(rows)
        else None
    )
    groups = subgroup_metrics(metric_name, rows, kinds) if value is not None else {}
    return Reference(
        variant_id, attempt_id, {r["id"]: str(r["prediction"]) for r in rows}, value, groups
    )


def _first_per_id(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for row in rows:
        if row["id"] not in seen:
            seen.add(row["id"])
            out.append(row)
    return out


def evaluate(
    rows: Sequence[dict[str, Any]],
    expected_ids: Sequence[str],
    *,
    complete: bool,
    metric_name: str,
    threshold: float,
    tolerance: float,
    kinds: Sequence[str],
    reference: Reference | None,
    reference_variant: str,
    variant_id: str,
) -> Evaluation:
    """Check a predictions file (its rows) against the corpus and the protocol.

    ``complete`` says whether the attempt processed the whole corpus; a partial
    run gets its ids checked but no metric. The verdict is ``pass`` only when the
    ids match, the metric reaches the threshold and, against the reference, the
    metric and every subgroup stay within the tolerance; ``not evaluated`` when a
    check could not be made (no labels, reference not yet measured).
    """
    result = Evaluation(check_ids(expected_ids, [r["id"] for r in rows]))
    if result.ids.notes():
        result.notes.append(result.ids.notes())
    if not complete:
        result.metric_reason = "attempt did not finish: a metric needs the whole corpus"
        result.agreement_reason = result.metric_reason
        return result
    if not result.ids.match:
        result.metric_reason = "ids do not match the corpus: no metric on a wrong set"
        result.agreement_reason = result.metric_reason
        result.verdict = "fail"
        return result
    if any(r.get("label") is None for r in rows):
        result.metric_reason = "the corpus has no labels"
        result.agreement_reason = None
    else:
        result.metric = metric(
            metric_name, [str(r["label"]) for r in rows], [str(r["prediction"]) for r in rows]
        )
        result.subgroups = subgroup_metrics(metric_name, rows, kinds)
    _compare_reference(result, rows, reference, reference_variant, variant_id, tolerance)
    if result.metric is None:
        result.verdict = "not evaluated"
        return result
    failures = []
    if result.metric + EPSILON < threshold:
        failures.append(f"{metric_name} {result.metric:.4f} below threshold {threshold:.4f}")
    below, unchecked = tolerance_failures(
        metric_name, result.metric, result.subgroups, reference, reference_variant, tolerance
    )
    failures.extend(below)
    result.notes.extend(failures)
    if failures:
        result.verdict = "fail"
    elif unchecked and variant_id != reference_variant:
        result.verdict = "not evaluated"
        result.notes.append(unchecked)
    else:
        result.verdict = "pass"
    return result


def tolerance_failures(
    metric_name: str,
    value: float,
    subgroups: dict[str, tuple[float, int]],
    reference: Reference | None,
    reference_variant: str,
    tolerance: float,
) -> tuple[list[str], str | None]:
    """R16, for classification and generation alike: the metric and every predeclared
    subgroup stay within ``tolerance`` of the reference variant's. Returns the failures and,
    when the reference has no metric to compare with, the note saying the tolerance went
    unchecked (None when it was checked)."""
    if reference is None:
        return [], (
            f"reference {reference_variant} not yet measured: tolerance unchecked "
            "(`iteralab report` checks again)"
        )
    if reference.metric is None:
        return [], (
            f"reference {reference.attempt_id} has no {metric_name}: tolerance "
            f"unchecked for {metric_name} (`iteralab report` checks again)"
        )
    failures = []
    if value + EPSILON < reference.metric - tolerance:
        failures.append(
            f"{metric_name} {value:.4f} below reference {reference.metric:.4f} - "
            f"tolerance {tolerance:.4f}"
        )
    for key, (group_value, size) in subgroups.items():
        ref = reference.subgroups.get(key)
        if ref is not None and group_value + EPSILON < ref[0] - tolerance:
            # A subgroup whose one flip exceeds the tolerance fails on any single change.
            small = (
                f" ({size} items: one changed prediction moves it by {1 / size:.4f}, more "
                "than the tolerance)"
                if size and 1 / size > tolerance
                else ""
            )
            failures.append(
                f"subgroup {key} {group_value:.4f} below reference {ref[0]:.4f} - "
                f"tolerance {tolerance:.4f}{small}"
            )
    return failures, None


def _compare_reference(
    result: Evaluation,
    rows: Sequence[dict[str, Any]],
    reference: Reference | None,
    reference_variant: str,
    variant_id: str,
    tolerance: float,
) -> None:
    if reference is None:
        result.agreement_reason = (
            "this is the reference variant's first completed attempt"
            if variant_id == reference_variant
            else f"reference {reference_variant} has no completed attempt yet"
        )
        return
    same = sum(reference.predictions.get(r["id"]) == str(r["prediction"]) for r in rows)
    result.agreement = same / len(rows)
    result.agreement_reason = None
    result.notes.append(f"reference {reference.attempt_id}: {same}/{len(rows)} predictions agree")
