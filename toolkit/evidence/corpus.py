"""Read a corpus, fingerprint it, stratify it; write and read predictions files. Stdlib only.

A corpus is JSONL (one object per line) or CSV (a header row) with ``id``,
``text`` and an optional ``label``. Ids are stable text; every id is present,
non-empty and unique; every text is non-empty; the file is UTF-8. A broken rule
stops the reading with an error that names the file and line (R3).

The fingerprint is the SHA-256 of ``json.dumps([id, text]) + "\\n"`` (compact,
non-ASCII kept) for each item in file order: the same ids and texts in the same
order give the same fingerprint whatever the file format.

A predictions file holds one JSON object per line (``id``, ``prediction``,
``label``, ``stratum``); checking it against the corpus and the protocol is
:mod:`toolkit.runner.evaluation`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.errors import CorpusError
from toolkit.plumbing.atomic import write_bytes

#: Length strata, by the variant's tokenizer (special tokens included): name, last token count.
STRATA: tuple[tuple[str, int | None], ...] = (("short", 32), ("medium", 128), ("long", None))


@dataclass(frozen=True)
class Item:
    """One corpus input: its stable id, its text, its gold label (None when unlabelled)."""

    id: str
    text: str
    label: str | None = None
    line: int = 0


#: Documented limits (docs/bad-inputs.md): a corpus file, and one line of it. A paragraph or
#: a long document is a few kB to a few hundred kB; a 32 MB line is a mistake (or an attack)
#: that would take minutes and gigabytes to tokenize.
MAX_CORPUS_BYTES = 1024 * 2**20
MAX_LINE_BYTES = 1 * 2**20


def _check_file_size(size: int, path: Path) -> None:
    """Refuse a corpus file over the documented limit before reading it."""
    if size > MAX_CORPUS_BYTES:
        raise CorpusError(f"{path}: {size:,} bytes, over the {MAX_CORPUS_BYTES:,}-byte "
                          "limit of a corpus file",
                          hint="split the corpus, or sample it for the comparison")


def _check_line_sizes(raw: bytes, path: Path) -> None:
    """Refuse a line over the documented limit before parsing it."""
    start = 0
    number = 1
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        if end - start > MAX_LINE_BYTES:
            raise CorpusError(f"{path}: line {number} holds {end - start:,} bytes, over the "
                              f"{MAX_LINE_BYTES:,}-byte limit of one input",
                              hint="one input per line: split long documents into passages "
                              "(and say so in the protocol)")
        start, number = end + 1, number + 1


def read_corpus(path: str | Path) -> list[Item]:
    """Read and check a JSONL or CSV corpus; return its items in file order.

    Raises CorpusError naming the file and line for a file or a line over the
    documented limits, undecodable bytes, a malformed line, a missing, empty or
    duplicate id, an empty text, or labels given on some lines only.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".ndjson", ".csv"):
        raise CorpusError(f"{path}: a corpus is a .jsonl or .csv file",
                          hint="convert it to JSONL (id, text, label per line) or CSV with "
                          "a header row id,text,label")
    try:
        _check_file_size(path.stat().st_size, path)
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the corpus ({exc.strerror or exc})",
                          hint="check Protocol.corpus_path (relative to the workbook)") from exc
    _check_line_sizes(raw, path)
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
    for field, value in (("id", item_id), ("text", text), ("label", label)):
        _refuse_surrogate(value, field, item_id, line, path)
    if label is not None and not label.strip():
        label = None
    return Item(item_id, text, label, line)


def _refuse_surrogate(value: str | None, field: str, item_id: str, line: int,
                      path: Path) -> None:
    """A lone surrogate (JSON ``"\\ud800"``) is not a character: no UTF-8 can hold it."""
    if value is None:
        return
    try:
        value.encode("utf-8")
        return
    except UnicodeEncodeError as exc:
        at = exc.start
    raise CorpusError(
        f"{path}: line {line} (id {item_id!r}): the {field} holds a lone surrogate "
        f"\\u{ord(value[at]):04x} at character {at + 1}, which is not a character and "
        "cannot be written as UTF-8",
        hint="fix the text or its encoding: a \\ud800-\\udfff escape is only valid as "
        "half of a pair (e.g. \\ud83d\\ude00), or write the character itself in UTF-8")


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
    """Write prediction rows as JSONL, whole (flushed to disk); return the file's SHA-256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                    for row in rows)
    write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


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
