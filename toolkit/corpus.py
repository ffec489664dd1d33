"""Read a corpus, fingerprint it, and check a predictions file against it. Stdlib only.

A corpus is JSONL (one object per line) or CSV (a header row) with ``id``,
``text`` and an optional ``label``. Ids are stable text; every id is present,
non-empty and unique; every text is non-empty; the file is UTF-8. A broken rule
stops the reading with an error that names the file and line (R3).

The fingerprint is the SHA-256 of ``json.dumps([id, text]) + "\\n"`` (compact,
non-ASCII kept) for each item in file order: the same ids and texts in the same
order give the same fingerprint whatever the file format.

A predictions file holds one JSON object per line (``id``, ``prediction``,
``label``, ``stratum``). :func:`check_ids` compares its ids with the corpus
(set equality, duplicates and missing listed); :func:`evaluate` computes the
protocol's metric, the predeclared subgroups and the verdict against the
threshold and the reference variant (R7, R12, R16). Reading, validating and
reporting use this module without torch.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.errors import CorpusError

#: Length strata, by the variant's tokenizer (special tokens included): name, last token count.
STRATA: tuple[tuple[str, int | None], ...] = (("short", 32), ("medium", 128), ("long", None))
#: Subgroup kinds a protocol may declare.
SUBGROUP_KINDS = ("stratum", "label")
#: How many ids a note lists before saying "and N more".
LISTED_IDS = 10
#: Metric comparisons forgive this much floating-point noise.
EPSILON = 1e-12


@dataclass(frozen=True)
class Item:
    """One corpus input: its stable id, its text, its gold label (None when unlabelled)."""

    id: str
    text: str
    label: str | None = None
    line: int = 0


def read_corpus(path: str | Path) -> list[Item]:
    """Read and check a JSONL or CSV corpus; return its items in file order.

    Raises CorpusError naming the file and line for undecodable bytes, a
    malformed line, a missing, empty or duplicate id, an empty text, or labels
    given on some lines only.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".ndjson", ".csv"):
        raise CorpusError(f"{path}: a corpus is a .jsonl or .csv file",
                          hint="convert it to JSONL (id, text, label per line) or CSV with "
                          "a header row id,text,label")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the corpus ({exc.strerror or exc})",
                          hint="check Protocol.corpus_path (relative to the workbook)") from exc
    text = _decode(raw, path)
    items = _read_csv(text, path) if suffix == ".csv" else _read_jsonl(text, path)
    if not items:
        raise CorpusError(f"{path}: the corpus holds no item",
                          hint="one input per line, each with an id and a text")
    _check_items(items, path)
    return items


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CorpusError(
            f"{path}: line {line}, byte column {column}: bytes that are not UTF-8 "
            f"({raw[exc.start:exc.start + 4]!r})",
            hint="save the corpus as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)",
        ) from exc


def _scalar(value: Any) -> str | None:
    """An id or label as text: strings and whole numbers are accepted, nothing else."""
    if value is None:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    return None


def _read_jsonl(text: str, path: Path) -> list[Item]:
    items: list[Item] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}: line {number}: not a JSON object ({exc.msg} at "
                              f"column {exc.colno})",
                              hint="each line holds one object such as "
                              '{"id": "a1", "text": "...", "label": "..."}') from exc
        if not isinstance(record, dict):
            raise CorpusError(f"{path}: line {number}: a JSON {type(record).__name__}, not an "
                              "object", hint='write {"id": ..., "text": ..., "label": ...}')
        items.append(_item(record, number, path))
    return items


def _read_csv(text: str, path: Path) -> list[Item]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = [f.strip() for f in (reader.fieldnames or [])]
    for needed in ("id", "text"):
        if needed not in fields:
            raise CorpusError(f"{path}: line 1: the header has no {needed!r} column "
                              f"(found {', '.join(fields) or 'nothing'})",
                              hint="the first row names the columns: id,text[,label]")
    reader.fieldnames = fields
    items: list[Item] = []
    start = 2
    try:
        for record in reader:
            items.append(_item(record, start, path, csv_row=True))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise CorpusError(f"{path}: line {reader.line_num}: {exc}",
                          hint="quote fields that hold commas, quotes or line breaks") from exc
    return items


def _item(record: dict[str, Any], line: int, path: Path, csv_row: bool = False) -> Item:
    if "id" not in record or record["id"] is None:
        raise CorpusError(f"{path}: line {line}: no id",
                          hint="give every input a stable, unique id")
    item_id = _scalar(record["id"])
    if item_id is None:
        raise CorpusError(f"{path}: line {line}: id {record['id']!r} is neither text nor a "
                          "whole number", hint="use text ids such as 'doc-0001'")
    if not item_id.strip():
        raise CorpusError(f"{path}: line {line}: empty id",
                          hint="give every input a stable, unique id")
    text = record.get("text")
    if not isinstance(text, str):
        raise CorpusError(f"{path}: line {line} (id {item_id!r}): text is missing or not a "
                          "string", hint="every input has a non-empty text")
    if not text.strip():
        raise CorpusError(f"{path}: line {line} (id {item_id!r}): empty text",
                          hint="remove the input or give it its text")
    label_value = record.get("label")
    label = _scalar(label_value)
    if label_value is not None and label is None:
        raise CorpusError(f"{path}: line {line} (id {item_id!r}): label {label_value!r} is "
                          "neither text nor a whole number", hint="write labels as text")
    if label is not None and not label.strip():
        label = None
    return Item(item_id, text, label, line)


def _check_items(items: list[Item], path: Path) -> None:
    seen: dict[str, int] = {}
    for item in items:
        if item.id in seen:
            raise CorpusError(f"{path}: line {item.line}: duplicate id {item.id!r} (first on "
                              f"line {seen[item.id]})",
                              hint="ids identify inputs: make each one unique")
        seen[item.id] = item.line
    labelled = [i for i in items if i.label is not None]
    if labelled and len(labelled) != len(items):
        first = next(i for i in items if i.label is None)
        raise CorpusError(f"{path}: line {first.line} (id {first.id!r}): no label, while "
                          f"{len(labelled)} other lines have one",
                          hint="label every input, or none (then no metric is computed)")


def fingerprint(items: Iterable[Item]) -> str:
    """SHA-256 over ids and texts in the given order (see the module docstring)."""
    digest = hashlib.sha256()
    for item in items:
        line = json.dumps([item.id, item.text], ensure_ascii=False, separators=(",", ":"))
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def stratum(n_tokens: int) -> str:
    """The length stratum of an input of ``n_tokens`` tokens (special tokens included)."""
    for name, last in STRATA:
        if last is None or n_tokens <= last:
            return name
    raise AssertionError("the last stratum is open-ended")


def strata_text(counts: dict[str, int]) -> str:
    """Stratum counts as the Manifest shows them, e.g. ``short 600 (<=32), ...``."""
    parts = []
    lower = 1
    for name, last in STRATA:
        bound = f"{lower}-{last}" if last is not None else f">={lower}"
        parts.append(f"{name} {counts.get(name, 0)} ({bound} tokens)")
        lower = (last or 0) + 1
    return ", ".join(parts)


# ---------------------------------------------------------------- predictions file


def write_predictions(path: str | Path, rows: Iterable[dict[str, Any]]) -> str:
    """Write prediction rows as JSONL (flushed to disk); return the file's SHA-256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with path.open("wb") as handle:
        for row in rows:
            line = (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            digest.update(line)
            handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    return digest.hexdigest()


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """Read a predictions file; each line an object with at least ``id`` and ``prediction``.

    Raises CorpusError naming the line when one is not such an object.
    """
    path = Path(path)
    try:
        text = _decode(path.read_bytes(), path)
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the predictions file ({exc.strerror or exc})",
                          hint="keep the predictions folder beside the workbook") from exc
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}: line {number}: not a JSON object ({exc.msg})",
                              hint="a predictions file is written by `iteralab run`; do not "
                              "edit it") from exc
        if not isinstance(row, dict) or _scalar(row.get("id")) is None or "prediction" not in row:
            raise CorpusError(f"{path}: line {number}: expected an object with id and "
                              "prediction", hint="a predictions file is written by "
                              "`iteralab run`; do not edit it")
        row["id"] = _scalar(row["id"])
        rows.append(row)
    return rows


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
            parts.append(f"{len(self.duplicates)} duplicated id(s): "
                         + _listed(f"{i} x{n}" for i, n in self.duplicates))
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
    """The subgroup kinds declared by the protocol, e.g. ``"stratum,label"``.

    Raises CorpusError for a kind the runner cannot compute.
    """
    kinds = tuple(k.strip() for k in (text or "").split(",") if k.strip()
                  and k.strip().lower() != "none")
    for kind in kinds:
        if kind not in SUBGROUP_KINDS:
            raise CorpusError(f"Protocol subgroups: {kind!r} is not a subgroup the runner "
                              f"computes (known: {', '.join(SUBGROUP_KINDS)})",
                              hint="declare subgroups as 'stratum', 'label' or 'stratum,label'")
    return kinds


def subgroup_metrics(name: str, rows: Sequence[dict[str, Any]],
                     kinds: Sequence[str]) -> dict[str, tuple[float, int]]:
    """Metric and size of each predeclared subgroup, keyed ``kind=value``."""
    out: dict[str, tuple[float, int]] = {}
    for kind in kinds:
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(str(row.get(kind)), []).append(row)
        known = [s for s, _ in STRATA] if kind == "stratum" else []
        order = [v for v in known if v in groups] + sorted(v for v in groups if v not in known)
        for value in order:
            members = groups.get(value)
            if members:
                out[f"{kind}={value}"] = (
                    metric(name, [str(r["label"]) for r in members],
                           [str(r["prediction"]) for r in members]),
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


def load_reference(path: str | Path, variant_id: str, attempt_id: str, metric_name: str,
                   kinds: Sequence[str]) -> Reference:
    """Read the reference attempt's predictions file and recompute its metrics."""
    rows = _first_per_id(read_predictions(path))
    labelled = [r for r in rows if r.get("label") is not None]
    value = (metric(metric_name, [str(r["label"]) for r in labelled],
                    [str(r["prediction"]) for r in labelled])
             if labelled and len(labelled) == len(rows) else None)
    groups = subgroup_metrics(metric_name, rows, kinds) if value is not None else {}
    return Reference(variant_id, attempt_id, {r["id"]: str(r["prediction"]) for r in rows},
                     value, groups)


def _first_per_id(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for row in rows:
        if row["id"] not in seen:
            seen.add(row["id"])
            out.append(row)
    return out


def evaluate(rows: Sequence[dict[str, Any]], expected_ids: Sequence[str], *, complete: bool,
             metric_name: str, threshold: float, tolerance: float, kinds: Sequence[str],
             reference: Reference | None, reference_variant: str, variant_id: str) -> Evaluation:
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
        result.metric = metric(metric_name, [str(r["label"]) for r in rows],
                               [str(r["prediction"]) for r in rows])
        result.subgroups = subgroup_metrics(metric_name, rows, kinds)
    _compare_reference(result, rows, reference, reference_variant, variant_id, tolerance)
    if result.metric is None:
        result.verdict = "not evaluated"
        return result
    failures = []
    if result.metric + EPSILON < threshold:
        failures.append(f"{metric_name} {result.metric:.4f} below threshold {threshold:.4f}")
    if reference is not None and reference.metric is not None:
        floor = reference.metric - tolerance
        if result.metric + EPSILON < floor:
            failures.append(f"{metric_name} {result.metric:.4f} below reference "
                            f"{reference.metric:.4f} - tolerance {tolerance:.4f}")
        for key, (value, _) in result.subgroups.items():
            ref = reference.subgroups.get(key)
            if ref is not None and value + EPSILON < ref[0] - tolerance:
                failures.append(f"subgroup {key} {value:.4f} below reference {ref[0]:.4f} - "
                                f"tolerance {tolerance:.4f}")
    result.notes.extend(failures)
    if failures:
        result.verdict = "fail"
    elif reference is None and variant_id != reference_variant:
        result.verdict = "not evaluated"
        result.notes.append(f"reference {reference_variant} not yet measured: tolerance "
                            "unchecked (`iteralab report` checks again)")
    else:
        result.verdict = "pass"
    return result


def _compare_reference(result: Evaluation, rows: Sequence[dict[str, Any]],
                       reference: Reference | None, reference_variant: str, variant_id: str,
                       tolerance: float) -> None:
    if reference is None:
        result.agreement_reason = (
            "this is the reference variant's first completed attempt"
            if variant_id == reference_variant
            else f"reference {reference_variant} has no completed attempt yet")
        return
    same = sum(reference.predictions.get(r["id"]) == str(r["prediction"]) for r in rows)
    result.agreement = same / len(rows)
    result.agreement_reason = None
    result.notes.append(f"reference {reference.attempt_id}: {same}/{len(rows)} predictions "
                        "agree")
