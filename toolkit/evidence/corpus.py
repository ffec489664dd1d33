"""Read a corpus, fingerprint it, stratify it; write and read predictions files. Stdlib only.

A corpus is JSONL (one object per line) or CSV (a header row) with ``id``,
``text`` and an optional ``label``; any other field (e.g. ``genre``) is kept
with the item, so that a Protocol can declare it as a subgroup (R1). Ids are
stable text; every id is present,
non-empty and unique; every text is non-empty; the file is UTF-8. A broken rule
stops the reading with an error that names the file and line (R3).

The fingerprint is the SHA-256 of ``json.dumps([id, text]) + "\\n"`` (compact,
non-ASCII kept) for each item in file order: the same ids and texts in the same
order give the same fingerprint whatever the file format.

Length strata are cut by the Protocol's ``stratum_bounds`` (blank: 32 and 128
tokens, the bounds layouts 1 and 2 fixed).

A predictions file holds one JSON object per line (``id``, ``prediction``,
``label``, ``stratum`` and each other declared subgroup field); checking it
against the corpus and the protocol is :mod:`toolkit.runner.tasks.evaluation`.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import hashlib
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.errors import CorpusError, ProtocolError
from toolkit.plumbing.atomic import write_bytes

#: Stratum bounds of a Protocol that leaves ``stratum_bounds`` blank: the last token count of
#: the short and the medium stratum (layouts 1 and 2 fixed these).
DEFAULT_STRATUM_BOUNDS: tuple[int, ...] = (32, 128)
#: Most bounds a Protocol may declare (eleven strata).
MAX_STRATUM_BOUNDS = 10
#: The subgroup computed from token lengths; every other subgroup is a corpus field.
STRATUM = "stratum"
#: Subgroups of a Protocol that leaves ``subgroups`` blank (what layouts 1 and 2 computed).
DEFAULT_SUBGROUPS = (STRATUM, "label")
#: Names no subgroup can take: a predictions row's own keys, and the text itself.
RESERVED_FIELDS = ("id", "text", "prediction")


@dataclass(frozen=True)
class Item:
    """One corpus input: its stable id, its text, its gold label (None when unlabelled),
    and its other fields as text (None for a null, blank or non-scalar value)."""

    id: str
    text: str
    label: str | None = None
    line: int = 0
    fields: dict[str, str | None] = field(default_factory=dict, compare=False)


#: Documented limits (docs/bad-inputs.md): a corpus file, and one line of it. A paragraph or
#: a long document is a few kB to a few hundred kB; a 32 MB line is a mistake (or an attack)
#: that would take minutes and gigabytes to tokenize.
MAX_CORPUS_BYTES = 1024 * 2**20
MAX_LINE_BYTES = 1 * 2**20


def _check_file_size(size: int, path: Path) -> None:
    """Refuse a corpus file over the documented limit before reading it."""
    if size > MAX_CORPUS_BYTES:
        raise CorpusError(
            f"{path}: {size:,} bytes, over the {MAX_CORPUS_BYTES:,}-byte limit of a corpus file",
            hint="split the corpus, or sample it for the comparison",
        )


def _check_line_sizes(raw: bytes, path: Path) -> None:
    """Refuse a line over the documented limit before parsing it."""
    start = 0
    number = 1
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        if end - start > MAX_LINE_BYTES:
            raise CorpusError(
                f"{path}: line {number} holds {end - start:,} bytes, over the "
                f"{MAX_LINE_BYTES:,}-byte limit of one input",
                hint="one input per line: split long documents into passages "
                "(and say so in the protocol)",
            )
        start, number = end + 1, number + 1


#: The corpora read within :func:`read_once`, by file identity; None outside it.
_READ: contextvars.ContextVar[dict[tuple[Any, ...], list[Item]] | None] = contextvars.ContextVar(
    "corpora_read", default=None
)


@contextlib.contextmanager
def read_once() -> Iterator[None]:
    """Within it, a corpus file read again unchanged (the same file, size and modification
    time) is not parsed again: validation reads the Protocol's corpus for six checks. The
    runner never reads inside it (its corpus load is a timed phase)."""
    if _READ.get() is not None:  # an outer one holds them already
        yield
        return
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def read_corpus(path: str | Path) -> list[Item]:
    """Read and check a JSONL or CSV corpus; return its items in file order.

    Raises CorpusError naming the file and line for a file or a line over the
    documented limits, undecodable bytes, a malformed line, a missing, empty or
    duplicate id, an empty text, or labels given on some lines only.
    """
    path, read = Path(path), _READ.get()
    if read is None:
        return _read_corpus(path)
    try:
        status = path.stat()
    except OSError:
        return _read_corpus(path)  # raises the error that names the file
    key = (str(path.resolve()), status.st_ino, status.st_size, status.st_mtime_ns)
    if key not in read:
        read[key] = _read_corpus(path)
    return list(read[key])


def _read_corpus(path: Path) -> list[Item]:
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".ndjson", ".csv"):
        raise CorpusError(
            f"{path}: a corpus is a .jsonl or .csv file",
            hint="convert it to JSONL (id, text, label per line) or CSV with "
            "a header row id,text,label",
        )
    try:
        _check_file_size(path.stat().st_size, path)
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusError(
            f"{path}: cannot read the corpus ({exc.strerror or exc})",
            hint="check Protocol.corpus_path (relative to the workbook)",
        ) from exc
    _check_line_sizes(raw, path)
    text = _decode(raw, path)
    items = _read_csv(text, path) if suffix == ".csv" else _read_jsonl(text, path)
    if not items:
        raise CorpusError(
            f"{path}: the corpus holds no item",
            hint="one input per line, each with an id and a text",
        )
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
            f"({raw[exc.start : exc.start + 4]!r})",
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
            raise CorpusError(
                f"{path}: line {number}: not a JSON object ({exc.msg} at column {exc.colno})",
                hint="each line holds one object such as "
                '{"id": "a1", "text": "...", "label": "..."}',
            ) from exc
        except RecursionError:
            raise CorpusError(
                f"{path}: line {number}: nested too deep to read (brackets "
                "inside brackets, thousands deep)",
                hint="each line holds one flat object such as "
                '{"id": "a1", "text": "...", "label": "..."}',
            ) from None
        if not isinstance(record, dict):
            raise CorpusError(
                f"{path}: line {number}: a JSON {type(record).__name__}, not an object",
                hint='write {"id": ..., "text": ..., "label": ...}',
            )
        items.append(_item(record, number, path))
    return items


def _read_csv(text: str, path: Path) -> list[Item]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = [f.strip() for f in (reader.fieldnames or [])]
    for needed in ("id", "text"):
        if needed not in fields:
            raise CorpusError(
                f"{path}: line 1: the header has no {needed!r} column "
                f"(found {', '.join(fields) or 'nothing'})",
                hint="the first row names the columns: id,text[,label]",
            )
    reader.fieldnames = fields
    items: list[Item] = []
    start = 2
    try:
        for record in reader:
            items.append(_item(record, start, path, csv_row=True))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise CorpusError(
            f"{path}: line {reader.line_num}: {exc}",
            hint="quote fields that hold commas, quotes or line breaks",
        ) from exc
    return items


def _item(record: dict[str, Any], line: int, path: Path, csv_row: bool = False) -> Item:
    if "id" not in record or record["id"] is None:
        raise CorpusError(
            f"{path}: line {line}: no id", hint="give every input a stable, unique id"
        )
    item_id = _scalar(record["id"])
    if item_id is None:
        raise CorpusError(
            f"{path}: line {line}: id {record['id']!r} is neither text nor a whole number",
            hint="use text ids such as 'doc-0001'",
        )
    if not item_id.strip():
        raise CorpusError(
            f"{path}: line {line}: empty id", hint="give every input a stable, unique id"
        )
    text = record.get("text")
    if not isinstance(text, str):
        raise CorpusError(
            f"{path}: line {line} (id {item_id!r}): text is missing or not a string",
            hint="every input has a non-empty text",
        )
    if not text.strip():
        raise CorpusError(
            f"{path}: line {line} (id {item_id!r}): empty text",
            hint="remove the input or give it its text",
        )
    label_value = record.get("label")
    label = _scalar(label_value)
    if label_value is not None and label is None:
        raise CorpusError(
            f"{path}: line {line} (id {item_id!r}): label {label_value!r} is "
            "neither text nor a whole number",
            hint="write labels as text",
        )
    for name, value in (("id", item_id), ("text", text), ("label", label)):
        _refuse_surrogate(value, name, item_id, line, path)
    if label is not None and not label.strip():
        label = None
    others = {
        str(k).strip(): _field_text(v)
        for k, v in record.items()
        if k is not None and str(k).strip() not in ("id", "text", "label")
    }
    return Item(item_id, text, label, line, others)


def _field_text(value: Any) -> str | None:
    """A subgroup field's value as text: strings, numbers and booleans; None otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str) and value.strip():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return value
    return None


def _refuse_surrogate(value: str | None, field: str, item_id: str, line: int, path: Path) -> None:
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
        "half of a pair (e.g. \\ud83d\\ude00), or write the character itself in UTF-8",
    )


def _check_items(items: list[Item], path: Path) -> None:
    seen: dict[str, int] = {}
    for item in items:
        if item.id in seen:
            raise CorpusError(
                f"{path}: line {item.line}: duplicate id {item.id!r} (first on "
                f"line {seen[item.id]})",
                hint="ids identify inputs: make each one unique",
            )
        seen[item.id] = item.line
    labelled = [i for i in items if i.label is not None]
    if labelled and len(labelled) != len(items):
        first = next(i for i in items if i.label is None)
        raise CorpusError(
            f"{path}: line {first.line} (id {first.id!r}): no label, while "
            f"{len(labelled)} other lines have one",
            hint="label every input, or none (then no metric is computed)",
        )


def fingerprint(items: Iterable[Item]) -> str:
    """SHA-256 over ids and texts in the given order (see the module docstring)."""
    digest = hashlib.sha256()
    for item in items:
        line = json.dumps([item.id, item.text], ensure_ascii=False, separators=(",", ":"))
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


# ---------------------------------------------------------------- strata and subgroups


def stratum_names(count: int) -> tuple[str, ...]:
    """Names of ``count`` length strata: short, long; short, medium, long; then short,
    medium-1, medium-2, ..., long."""
    if count <= 2:
        return ("short", "long")[:count] if count == 2 else ("all",)
    if count == 3:
        return ("short", "medium", "long")
    return ("short", *(f"medium-{i}" for i in range(1, count - 1)), "long")


def strata(bounds: Sequence[int] = DEFAULT_STRATUM_BOUNDS) -> tuple[tuple[str, int | None], ...]:
    """The strata ``bounds`` cut: (name, last token count), the last open-ended (None)."""
    names = stratum_names(len(bounds) + 1)
    return tuple(zip(names, [*bounds, None], strict=True))


#: The strata of the default bounds.
STRATA = strata()


def stratum_rank(name: str) -> tuple[int, int]:
    """Sort key of a stratum name, whatever the bounds: short, medium(-k), long, others."""
    if name == "short":
        return (0, 0)
    if name == "medium":
        return (1, 0)
    if name.startswith("medium-") and name[7:].isdigit():
        return (1, int(name[7:]))
    return (2, 0) if name == "long" else (3, 0)


def parse_stratum_bounds(value: Any) -> tuple[int, ...]:
    """The Protocol's ``stratum_bounds`` as ascending token counts; blank is the default.

    Raises ProtocolError for anything but positive whole numbers in ascending order.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return DEFAULT_STRATUM_BOUNDS
    parts = (
        [value]
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else str(value).split(",")
    )
    bounds = []
    for part in parts:
        text = str(part).strip()
        number = float(text) if _is_number(text) else None
        if number is None or not number.is_integer() or number < 1:
            raise ProtocolError(
                f"stratum_bounds {value!r}: {text!r} is not a whole number of tokens >= 1",
                hint="write ascending token counts, comma-separated, e.g. '32, 128' (blank "
                "means '32, 128')",
            )
        bounds.append(int(number))
    if any(b <= a for a, b in zip(bounds, bounds[1:], strict=False)):
        raise ProtocolError(
            f"stratum_bounds {value!r}: the bounds are not strictly ascending",
            hint="write each stratum's last token count in ascending order, e.g. '32, 128'",
        )
    if len(bounds) > MAX_STRATUM_BOUNDS:
        raise ProtocolError(
            f"stratum_bounds {value!r}: {len(bounds)} bounds, over the "
            f"{MAX_STRATUM_BOUNDS} a protocol may declare",
            hint="fewer, wider strata: each must hold enough inputs to measure",
        )
    return tuple(bounds)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.lower() not in ("nan", "inf", "-inf", "infinity", "-infinity")


def stratum(n_tokens: int, bounds: Sequence[int] = DEFAULT_STRATUM_BOUNDS) -> str:
    """The length stratum of an input of ``n_tokens`` tokens (special tokens included)."""
    for name, last in strata(bounds):
        if last is None or n_tokens <= last:
            return name
    raise AssertionError("the last stratum is open-ended")


def strata_text(counts: dict[str, int], bounds: Sequence[int] = DEFAULT_STRATUM_BOUNDS) -> str:
    """Stratum counts as the Manifest shows them, e.g. ``short 600 (1-32 tokens), ...``."""
    parts = []
    lower = 1
    for name, last in strata(bounds):
        bound = f"{lower}-{last}" if last is not None else f">={lower}"
        parts.append(f"{name} {counts.get(name, 0)} ({bound} tokens)")
        lower = (last or 0) + 1
    return ", ".join(parts)


def parse_subgroups(value: Any) -> tuple[str, ...]:
    """The Protocol's ``subgroups``: field names in order, each once; ``none`` is none and a
    blank is :data:`DEFAULT_SUBGROUPS`.

    Raises ProtocolError for a name that is a predictions row's own key or the text.
    """
    if value is None or not str(value).strip():
        return DEFAULT_SUBGROUPS
    names = []
    for part in str(value).split(","):
        name = part.strip()
        if not name or name.lower() == "none":
            continue
        if name.lower() in RESERVED_FIELDS:
            raise ProtocolError(
                f"subgroups {value!r}: {name!r} cannot be a subgroup (each input has its own)",
                hint="name corpus fields shared by several inputs, e.g. "
                "'stratum, label', or 'none'",
            )
        if name not in names:
            names.append(name)
    return tuple(names)


def subgroup_value(item: Item, name: str, stratum_name: str | None) -> str | None:
    """The value of subgroup ``name`` for ``item``: its stratum, its label or its field."""
    if name == STRATUM:
        return stratum_name
    if name == "label":
        return item.label
    return item.fields.get(name)


@dataclass(frozen=True)
class MissingField:
    """A declared subgroup field some corpus records lack (absent, null, blank or not a
    scalar)."""

    name: str
    count: int
    first_line: int
    first_id: str

    def text(self, path: str | Path) -> str:
        """``corpus.jsonl line 3 (id 'a3') and 4 more record(s) hold no usable 'genre' ...``."""
        more = f" and {self.count - 1} more record(s) hold" if self.count > 1 else " holds"
        return (
            f"{path} line {self.first_line} (id {self.first_id!r}){more} no usable "
            f"{self.name!r} (absent, null, blank, or not text or a number)"
        )


def missing_fields(items: Sequence[Item], names: Sequence[str]) -> list[MissingField]:
    """Each declared subgroup field (stratum aside) that some record lacks. ``label`` in a
    corpus without any label is left out: no metric is computed at all then."""
    out = []
    for name in names:
        if name == STRATUM or (name == "label" and all(i.label is None for i in items)):
            continue
        lacking = [i for i in items if subgroup_value(i, name, None) is None]
        if lacking:
            out.append(MissingField(name, len(lacking), lacking[0].line, lacking[0].id))
    return out


def check_subgroup_fields(items: Sequence[Item], names: Sequence[str], path: str | Path) -> None:
    """Raise CorpusError naming the field and line when a record lacks a declared subgroup."""
    for missing in missing_fields(items, names):
        raise CorpusError(
            f"Protocol subgroups names {missing.name!r}, but {missing.text(path)}",
            hint=f"give every record its {missing.name!r}, or remove it from "
            "Protocol subgroups (with `iteralab amend`)",
        )


def prediction_row(
    item: Item, prediction: Any, stratum_name: str | None, names: Sequence[str] = ()
) -> dict[str, Any]:
    """A predictions file row: id, prediction, label, stratum and each other declared
    subgroup field's value, so that the file alone gives every subgroup's metric."""
    row = {"id": item.id, "prediction": prediction, "label": item.label, "stratum": stratum_name}
    for name in names:
        if name not in row:
            row[name] = item.fields.get(name)
    return row


# ---------------------------------------------------------------- predictions file


def write_predictions(path: str | Path, rows: Iterable[dict[str, Any]]) -> str:
    """Write prediction rows as JSONL, whole (flushed to disk); return the file's SHA-256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(
        (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode() for row in rows
    )
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
        raise CorpusError(
            f"{path}: cannot read the predictions file ({exc.strerror or exc})",
            hint="keep the predictions folder beside the workbook",
        ) from exc
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
            raise CorpusError(
                f"{path}: line {number}: not a JSON object ({why})",
                hint="a predictions file is written by `iteralab run`; do not edit it",
            ) from None
        if not isinstance(row, dict) or _scalar(row.get("id")) is None or "prediction" not in row:
            raise CorpusError(
                f"{path}: line {number}: expected an object with id and prediction",
                hint="a predictions file is written by `iteralab run`; do not edit it",
            )
        row["id"] = _scalar(row["id"])
        rows.append(row)
    return rows
