"""Tamper evidence for the Attempts sheet: a hash chain over attempt rows.

Each attempt row carries ``row_sha256``: the SHA-256 of the previous row's
``row_sha256`` and of the row's own content, every Attempts column except
the four that change on purpose through logged actions (:data:`UNCHAINED`).
The content covers the protocol hash the attempt ran under, its manifest,
every measurement and reason, the verdicts, the notes, and the predictions
file's path and SHA-256, so the chain also vouches for the predictions file.

Values are hashed as the workbook gives them back after a save (see
:func:`cell_value`): text through :func:`toolkit.workbook.text.cell_text`,
numbers as the 16 significant digits xlsxwriter writes, so a row sealed in
memory verifies after any number of saves and reads.

:func:`chain_findings` names each row whose content or position changed (and,
given the journal, each changed cell) and each journal attempt missing from
the sheet. What may change without breaking the chain (exclusions, amendment
marks) is checked by :mod:`toolkit.evidence.audit`; the predictions files by
:mod:`toolkit.evidence.predictions`.

An unkeyed chain shows edits made with a spreadsheet program, not a forger who
recomputes every hash; the journal and archived copies of the last
``row_sha256`` witness against that. Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from toolkit import layout
from toolkit.findings import Finding
from toolkit.workbook.model import Formula, Row, WorkbookData
from toolkit.workbook.text import cell_text

SHEET = "Attempts"
MANIFEST = "Manifest"
#: Columns that change through logged actions (exclude, amend), or hold the chain itself.
UNCHAINED = ("row_sha256", "pre_amendment", "excluded", "exclusion_reason")
#: Every other Attempts column is covered by the chain.
CHAINED_COLUMNS = tuple(n for n in layout.ATTEMPTS.names if n not in UNCHAINED)
_SORTED_CHAINED = tuple(sorted(CHAINED_COLUMNS))  # canonical JSON, without a sort per row
#: Longest exclusion reason: it is logged whole in the Audit sheet.
REASON_LIMIT = 2_000
#: Hashes tried, per validation, to find where moved rows were recorded (a sort of
#: n rows costs n x n); past it a moved row gets the general message.
SEARCH_LIMIT = 200_000


# ---------------------------------------------------------------- sealing


def cell_value(value: Any) -> Any:
    """``value`` as a save and a read give it back: what the chain hashes.

    None, blank or whitespace-only text -> None; booleans -> "yes"/"no";
    numbers -> float at xlsxwriter's 16 significant digits (-0 -> 0); a
    formula -> its cached value; anything else -> its safe cell text.
    """
    if value is None:
        return None
    kind = type(value)
    if kind is str:  # the common cases first: a chain hashes every cell of every row
        text = cell_text(value)
        return text if text.strip() else None
    if kind is float or kind is int:
        return _number(value)
    if isinstance(value, Formula):
        value = value.value
    if value is None:
        return None
    if isinstance(value, bool):
        return layout.YES if value else layout.NO
    if isinstance(value, (int, float, Decimal)):
        return _number(value)
    text = cell_text(value)
    return text if text.strip() else None


#: Whole numbers below this in size are floats exactly, of 16 digits at most: as written.
_EXACT_WHOLE = 2**53


def _number(value: int | float | Decimal) -> float:
    if type(value) is int and -_EXACT_WHOLE < value < _EXACT_WHOLE:
        return float(value)  # the common whole number: no round trip to try
    number = float(value) + 0.0  # + 0.0 turns -0.0 into 0.0, as the read does
    if not math.isfinite(number):
        return number
    # xlsxwriter writes "%.16G"; repeat until stable, since 16 digits do not
    # always survive a second round trip (the read value must hash the same).
    for _ in range(5):
        stored = float(f"{number:.16G}") + 0.0
        if stored == number:
            break
        number = stored
    return number


_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _content(row: Mapping[str, Any]) -> str:
    """The row's chained cells as canonical JSON, keys sorted (blank cells left out)."""
    cells = {
        name: value
        for name in _SORTED_CHAINED
        # Most cells are blank: None skips the call.
        if (value := row.get(name)) is not None and (value := cell_value(value)) is not None
    }
    return _CANONICAL(cells)


def link(previous: str | None, content: str) -> str:
    """The hash sealing ``content`` after a row sealed ``previous`` (None: the first)."""
    text = json.dumps([previous or ""], ensure_ascii=False) + "\n" + content
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def seal(previous_row_sha256: str | None, row: Mapping[str, Any]) -> str:
    """The ``row_sha256`` of ``row`` recorded after a row sealed ``previous_row_sha256``.

    ``None`` (or "") for the first attempt row. Returns 64 hex digits.
    """
    return link(cell_value(previous_row_sha256), _content(row))


def seal_new_rows(data: WorkbookData, attempt_ids: Collection[str] | None = None) -> int:
    """Fill ``row_sha256`` of Attempts rows lacking it, in sheet order; return how many.

    Pass the ids just appended as ``attempt_ids`` so that a row typed by hand
    is never sealed (it stays reported as unsealed). Each row is chained to
    the ``row_sha256`` of the row above it, whatever that holds.
    """
    sealed = 0
    previous: str | None = None
    for row in data.tables[SHEET]:
        if cell_value(row.get("row_sha256")) is None and (
            attempt_ids is None or row.get("attempt_id") in attempt_ids
        ):
            row["row_sha256"] = seal(previous, row)
            sealed += 1
        previous = cell_value(row.get("row_sha256"))
    return sealed


class Recorded:
    """The Attempts and Manifest rows of ``data`` compared with journal records as they come.

    :meth:`add` takes one record at a time and keeps only what it found (the cells each
    record's rows differ in) and the attempt ids it saw: the journal is never held whole.
    The first record of an attempt (or manifest) id is the one compared, as the journal
    gives them in order.
    """

    def __init__(self, data: WorkbookData) -> None:
        self._data = data
        rows = data.tables[SHEET]
        self._rows: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            self._rows.setdefault(str(row.get("attempt_id")), []).append(i)
        self._manifests: dict[str, list[int]] = {}
        for i, row in enumerate(data.tables[MANIFEST]):
            self._manifests.setdefault(str(row.get("manifest_id")), []).append(i)
        #: Each row's row_sha256, and whether it follows from its cells and the row above.
        self.hashes = [cell_value(r.get("row_sha256")) for r in rows]
        self.follows = [
            h is not None and link(self.hashes[i - 1] if i else None, _content(r)) == h
            for i, (h, r) in enumerate(zip(self.hashes, rows, strict=True))
        ]
        self._typed = typed_formulas(data, SHEET)
        self._typed_manifest = typed_formulas(data, MANIFEST)
        #: The journal's attempt ids, in the order first met.
        self.attempt_ids: dict[str, None] = {}
        self._manifest_ids: set[str] = set()
        #: Findings by row index: the cells that differ from the journal's record.
        self.edits: dict[int, list[Finding]] = {}
        self._manifest_edits: dict[int, list[Finding]] = {}

    def add(self, entry: object) -> None:
        """Compare one journal record with the rows of its attempt and manifest ids."""
        if not isinstance(entry, Mapping):
            return
        attempt = entry.get("attempt")
        if isinstance(attempt, Mapping) and attempt.get("attempt_id") is not None:
            attempt_id = str(attempt["attempt_id"])
            if attempt_id not in self.attempt_ids:
                self.attempt_ids[attempt_id] = None
                for i in self._rows.get(attempt_id, ()):
                    found = _edits(
                        self._data.tables[SHEET][i],
                        attempt,
                        name=f"attempt {attempt_id!r}",
                        excel=self._data.excel_row(SHEET, i),
                        sealed=self.follows[i],
                        formulas=self._typed.get(i, {}),
                    )
                    if found:
                        self.edits[i] = found
        manifest = entry.get("manifest")
        if isinstance(manifest, Mapping) and manifest.get("manifest_id") is not None:
            manifest_id = str(manifest["manifest_id"])
            if manifest_id not in self._manifest_ids:
                self._manifest_ids.add(manifest_id)
                for i in self._manifests.get(manifest_id, ()):
                    self._manifest_edits[i] = self._manifest_cells(i, manifest)

    def _manifest_cells(self, i: int, record: Mapping[str, Any]) -> list[Finding]:
        row = self._data.tables[MANIFEST][i]
        formulas = self._typed_manifest.get(i, {})
        found = []
        for column in layout.MANIFEST.names:
            was, now = cell_value(record.get(column)), cell_value(row.get(column))
            if was != now:
                found.append(
                    Finding(
                        MANIFEST,
                        self._data.excel_row(MANIFEST, i),
                        column,
                        "edited",
                        f"manifest {row.get('manifest_id')!r}: {column} was {shown(was)} when "
                        f"recorded (journal), now {shown(now, formulas.get(column))}: restore "
                        "it; the Manifest says what really ran",
                    )
                )
        return found

    def manifest_findings(self) -> list[Finding]:
        """One finding per Manifest cell that differs from the manifest its attempt journaled:
        what was installed and run (torch, driver, model revision...) is evidence too."""
        return [f for i in sorted(self._manifest_edits) for f in self._manifest_edits[i]]


def recorded(data: WorkbookData, journal: Iterable[Mapping[str, Any]] | None) -> Recorded:
    """``data``'s rows compared with every record of ``journal`` (none when None)."""
    found = Recorded(data)
    for entry in journal or ():
        found.add(entry)
    return found


def chain_findings(
    data: WorkbookData,
    journal: Iterable[Mapping[str, Any]] | Recorded | None = None,
) -> list[Finding]:
    """Every Attempts row edited, deleted, copied or moved, each finding naming its row.

    ``journal`` (the records of ``NAME.journal.jsonl``, if any, or what :class:`Recorded`
    made of them as they streamed past) names each edited cell and each recorded attempt
    missing from the sheet. The predictions files are :mod:`toolkit.evidence.predictions`.
    """
    seen = journal if isinstance(journal, Recorded) else recorded(data, journal)
    rows = data.tables[SHEET]
    hashes = seen.hashes
    found: list[Finding] = []
    first_row: dict[str, int] = {}
    budget = [SEARCH_LIMIT]
    for i, row in enumerate(rows):
        excel = data.excel_row(SHEET, i)
        name = f"attempt {row.get('attempt_id')!r}"
        edits = seen.edits.get(i, [])
        found += edits
        if hashes[i] is None:
            found.append(
                Finding(
                    SHEET,
                    excel,
                    "row_sha256",
                    "sealed",
                    f"{name} has no row_sha256: iteralab did not record this row (typed or pasted "
                    "by hand?): delete it, or restore the recorded row from a copy or the journal "
                    "(`iteralab ingest`)",
                )
            )
        elif not seen.follows[i] and not edits:
            found.append(
                _broken(
                    data,
                    i,
                    name,
                    hashes=hashes,
                    first_row=first_row,
                    budget=budget,
                    has_record=str(row.get("attempt_id")) in seen.attempt_ids,
                )
            )
        if hashes[i] is not None:
            first_row.setdefault(hashes[i], i)
    present = {str(r.get("attempt_id")) for r in rows}
    for attempt_id in seen.attempt_ids:
        if attempt_id not in present:
            found.append(
                Finding(
                    SHEET,
                    None,
                    "attempt_id",
                    "journal",
                    f"attempt {attempt_id!r} is in the journal but not in this sheet: it was "
                    "deleted, or is not ingested yet: run `iteralab ingest WORKBOOK`",
                )
            )
    return found


def unrecorded_findings(
    data: WorkbookData, journal: Recorded, torn: Sequence[str] = ()
) -> list[Finding]:
    """A finding per sealed attempt row whose record the journal beside the workbook lacks:
    every attempt iteralab seals was journaled first, so its line was deleted (or the
    journal replaced). ``torn`` are the journal's notes of torn lines, named as a likely
    cause."""
    found = []
    for i, row in enumerate(data.tables[SHEET]):
        attempt_id = str(row.get("attempt_id"))
        if journal.hashes[i] is None or attempt_id in journal.attempt_ids:
            continue
        why = f" ({torn[0]})" if torn else ""
        found.append(
            Finding(
                SHEET,
                data.excel_row(SHEET, i),
                "attempt_id",
                "journal",
                f"attempt {attempt_id!r} is sealed in this sheet but its record is not in the "
                f"journal{why}: the journal's line was deleted or the journal replaced, so the row "
                "cannot be checked against what the runner wrote; restore the journal from a copy "
                "of the campaign folder (the row itself is kept)",
            )
        )
    return found


def _edits(
    row: Row,
    record: Mapping[str, Any] | None,
    *,
    name: str,
    excel: int,
    sealed: bool = False,
    formulas: Mapping[str, Formula] | None = None,
) -> list[Finding]:
    """One finding per chained cell that differs from the attempt's journal record.

    Equal canonical texts (:func:`_content`) mean equal cells, so the cell-by-cell
    comparison runs only for a row that differs. Cells of the same type and value
    canonicalise alike, so a row read back as it was recorded (the common case) skips
    building either text.
    """
    if record is None or _same_cells(row, record) or _content(record) == _content(row):
        return []
    found = []
    formulas = formulas or {}
    for column in CHAINED_COLUMNS:
        was, now = cell_value(record.get(column)), cell_value(row.get(column))
        if was != now and sealed:  # the row still follows its seal: the journal line changed
            found.append(
                Finding(
                    SHEET,
                    excel,
                    column,
                    "edited",
                    f"{name}: the journal's record says {column} {shown(was)}, the sealed row "
                    f"{shown(now)}, and the row still follows its seal: the journal line was "
                    "edited; restore the journal from a copy of the campaign folder (the row is "
                    "as recorded: leave it)",
                )
            )
        elif was != now:
            found.append(
                Finding(
                    SHEET,
                    excel,
                    column,
                    "edited",
                    f"{name}: {column} was {shown(was)} when recorded (journal), now "
                    f"{shown(now, formulas.get(column))}: restore it; attempt rows change only "
                    "through `iteralab exclude`",
                )
            )
    return found


def _same_cells(row: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """True when every chained cell has the same type and value in both (True == 1 and
    1 == 1.0 do not count: those canonicalise apart or need :func:`cell_value`)."""
    for column in CHAINED_COLUMNS:
        was, now = record.get(column), row.get(column)
        if type(was) is not type(now) or was != now:
            return False
    return True


def typed_formulas(data: WorkbookData, sheet: str) -> dict[int, dict[str, Formula]]:
    """The formulas a person typed in ``sheet`` (iteralab writes none there), by row index
    and column."""
    out: dict[int, dict[str, Formula]] = {}
    for (index, column), formula in data.formulas.get(sheet, {}).items():
        out.setdefault(index, {})[column] = formula
    return out


def shown(value: Any, formula: Formula | None = None) -> str:
    """A cell as a finding quotes it: ``empty``, its value, or the formula typed in it."""
    if formula is not None:
        text = formula.text if formula.text.startswith("=") else f"={formula.text}"
        return f"the formula {text} (a formula typed where the runner writes a value)"
    if value is None:
        return "empty"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _broken(
    data: WorkbookData,
    i: int,
    name: str,
    *,
    hashes: list[Any],
    first_row: dict[str, int],
    budget: list[int],
    has_record: bool,
) -> Finding:
    """Say why row ``i`` does not follow the row above it: copied, moved, edited or orphaned."""
    rows = data.tables[SHEET]
    excel = data.excel_row(SHEET, i)
    if hashes[i] in first_row:
        j = first_row[hashes[i]]
        return Finding(
            SHEET,
            excel,
            "row_sha256",
            "chain",
            f"{name} repeats the row_sha256 of row {data.excel_row(SHEET, j)}: a "
            "copied row; delete the copy",
        )
    candidates: list[tuple[int | None, str | None]] = [(None, None)] + [
        (j, hashes[j]) for j in range(len(rows)) if j not in (i, i - 1)
    ]
    budget[0] -= len(candidates)
    content = _content(rows[i])
    for k, previous in candidates if budget[0] >= 0 else ():
        if link(previous, content) == hashes[i]:
            after = (
                "as the first attempt"
                if k is None
                else f"right after attempt {rows[k].get('attempt_id')!r} (now row "
                f"{data.excel_row(SHEET, k)})"
            )
            return Finding(
                SHEET,
                excel,
                "row_sha256",
                "chain",
                f"{name} was recorded {after}: rows were moved or sorted; restore "
                "the recorded order (undo the sort, or restore from a copy)",
            )
    if has_record:
        why = (
            "its cells match the journal, so the attempt recorded before it was deleted "
            "or moved: restore that row from a copy of the workbook"
        )
    else:
        why = (
            "this row was edited after it was recorded, or the attempt recorded before "
            "it was deleted: compare with the backup (.bak.xlsx) and the journal "
            "(.journal.jsonl) beside the workbook, and restore the row"
        )
    return Finding(
        SHEET,
        excel,
        "row_sha256",
        "chain",
        f"{name} does not follow from its cells and the row above it: {why}",
    )
