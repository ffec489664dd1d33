"""Tuning data kept apart from the comparison corpus (R2). Stdlib only.

Protocol ``tuning_data`` is the path (relative to the workbook's folder) of the
data a configuration was tuned or fitted on, read with the corpus rules (JSONL
or CSV with ``id`` and ``text``), or ``none``; either may be followed by ``": "``
and a note (``calibration.jsonl: chapters kept apart``). Validation reads it and names
every id and every normalised text (case folded, whitespace collapsed) it
shares with the comparison corpus. A lock refuses such an overlap unless it is
acknowledged with a reason, which the Audit row keeps; the findings stay and
say that it was acknowledged.

A protocol locked before layout 3 held ``tuning_data`` as free text; while
that text is the one such a lock recorded, it is read as text, not as a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.errors import CorpusError
from toolkit.evidence import corpus
from toolkit.evidence.protocol import Lock, current_lock, locks
from toolkit.findings import Finding
from toolkit.workbook.model import WorkbookData

FIELD = "tuning_data"
NONE = "none"
#: Characters of a shared text quoted in a finding.
QUOTED = 80
#: The Audit details key of an acknowledged overlap.
ACKNOWLEDGED = "tuning_overlap"


def _row() -> int:
    return layout.PROTOCOL.names.index(FIELD) + 2


def normalised(text: str) -> str:
    """A text as the overlap check compares it: case folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


@dataclass(frozen=True)
class Overlap:
    """What the tuning data shares with the comparison corpus."""

    tuning_path: str
    corpus_path: str
    #: (id, tuning line, corpus line)
    ids: tuple[tuple[str, int, int], ...]
    #: (normalised text, tuning id, tuning line, corpus id, corpus line)
    texts: tuple[tuple[str, str, int, str, int], ...]

    def __bool__(self) -> bool:
        return bool(self.ids or self.texts)

    def summary(self) -> str:
        """``2 shared id(s) and 1 shared text(s)``."""
        return f"{len(self.ids)} shared id(s) and {len(self.texts)} shared text(s)"


#: What separates the path from an optional note.
NOTE = ": "


def path_of(value: Any) -> str | None:
    """The path (or ``none``) that ``tuning_data`` names, its note left aside; None for a
    blank or a value that is not text."""
    if not isinstance(value, str) or not value.strip():
        return None
    return value.partition(NOTE)[0].strip() or None


def is_none(value: Any) -> bool:
    """Whether ``tuning_data`` says nothing was tuned."""
    return (path_of(value) or "").lower() == NONE


def _free_text_before_the_rule(data: WorkbookData, value: Any) -> bool:
    """Whether ``value`` is the free text a lock made before layout 3 recorded."""
    return any(
        lock.layout is None and lock.snapshot.get("Protocol", {}).get(FIELD) == value
        for lock in locks(data)
    )


def overlap(data: WorkbookData, workbook: str | Path) -> tuple[Overlap | None, list[Finding]]:
    """The overlap of the tuning data with the corpus, or None, and what stops the check.

    The findings name a tuning path that is not a readable file and a tuning file that
    does not read (a corpus that does not read is validate's corpus_path finding); no
    finding and no overlap for ``none``, a blank (the schema names it) or a pre-layout-3
    free text.
    """
    form = data.forms["Protocol"]
    value = form.get(FIELD)
    path = path_of(value)
    if path is None or is_none(value) or _free_text_before_the_rule(data, value):
        return None, []
    folder = Path(workbook).parent
    tuning_file = folder / path
    if not tuning_file.is_file():
        what = "is a folder" if tuning_file.is_dir() else "does not exist"
        return None, [
            Finding(
                "Protocol",
                _row(),
                FIELD,
                "tuning-data",
                (
                    f"tuning_data names {path!r}, which resolves to {tuning_file}, which {what}: write "
                    "the path of the data the configuration was tuned or fitted on (JSONL or CSV with "
                    "id and text, relative to the workbook's folder; a note may follow ': '), or "
                    "'none' if nothing was tuned"
                ),
            )
        ]
    try:
        tuning_items = corpus.read_corpus(tuning_file)
    except CorpusError as exc:
        return None, [
            Finding(
                "Protocol",
                _row(),
                FIELD,
                "tuning-data",
                (
                    f"tuning_data names {path!r}, which does not read as tuning data: {exc.message}; "
                    f"{exc.hint or 'fix the file'}, so that its overlap with the corpus can be "
                    "checked"
                ),
            )
        ]
    corpus_value = form.get("corpus_path")
    corpus_file = folder / str(corpus_value or "").strip()
    if not isinstance(corpus_value, str) or not corpus_file.is_file():
        return None, []  # the corpus_path finding names it
    try:
        corpus_items = corpus.read_corpus(corpus_file)
    except CorpusError:
        return None, []  # validate's corpus_path finding names it, as the runner reads it
    return compare(path, tuning_items, corpus_value.strip(), corpus_items), []


def compare(
    tuning_path: str, tuning: list[corpus.Item], corpus_path: str, items: list[corpus.Item]
) -> Overlap:
    """Every id and every normalised text ``tuning`` shares with ``items``, in tuning order."""
    by_id = {i.id: i for i in items}
    by_text: dict[str, corpus.Item] = {}
    for item in items:
        by_text.setdefault(normalised(item.text), item)
    ids, texts, seen = [], [], set()
    for t in tuning:
        if t.id in by_id:
            ids.append((t.id, t.line, by_id[t.id].line))
        key = normalised(t.text)
        if key in by_text and key not in seen:
            seen.add(key)
            c = by_text[key]
            texts.append((key, t.id, t.line, c.id, c.line))
    return Overlap(tuning_path, corpus_path, tuple(ids), tuple(texts))


def acknowledgement(lock: Lock | None, tuning_path: str) -> dict[str, Any] | None:
    """The acknowledgement of an overlap with ``tuning_path`` that ``lock`` recorded."""
    if lock is None:
        return None
    ack = lock.details.get(ACKNOWLEDGED)
    if isinstance(ack, dict) and ack.get("tuning_path") == tuning_path:
        return ack
    return None


def overlap_findings(found: Overlap, ack: dict[str, Any] | None) -> list[Finding]:
    """One finding per shared id and per shared text, saying when it was acknowledged."""
    t, c = found.tuning_path, found.corpus_path
    todo = (
        "remove it from the tuning data or from the corpus: the final comparison must not "
        "be data the configuration was tuned on"
    )
    if ack is not None:
        action = "amendment" if ack.get("action") == "amend" else "lock"
        todo += (
            f"; acknowledged at the {action} of {ack.get('at')} with the reason "
            f"{ack.get('reason')!r} (Audit), still shown"
        )
    found_list = [
        Finding(
            "Protocol",
            _row(),
            FIELD,
            "tuning-overlap",
            (
                f"the tuning data {t} (line {tl}) and the corpus {c} (line {cl}) share the id "
                f"{item_id!r}: {todo}"
            ),
        )
        for item_id, tl, cl in found.ids
    ]
    for text, tid, tl, cid, cl in found.texts:
        quoted = text if len(text) <= QUOTED else text[: QUOTED - 3] + "..."
        found_list.append(
            Finding(
                "Protocol",
                _row(),
                FIELD,
                "tuning-overlap",
                (
                    f"the tuning data {t} (line {tl}, id {tid!r}) and the corpus {c} (line {cl}, id "
                    f"{cid!r}) hold the same text once case and whitespace are ignored ({quoted!r}): "
                    f"{todo}"
                ),
            )
        )
    return found_list


def tuning_findings(data: WorkbookData, workbook: str | Path) -> list[Finding]:
    """Validation's findings on ``tuning_data``: an unreadable path, and every overlap."""
    found, problems = overlap(data, workbook)
    if not found:
        return problems
    return problems + overlap_findings(
        found, acknowledgement(current_lock(data), found.tuning_path)
    )
