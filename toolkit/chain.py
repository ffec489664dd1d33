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
given the journal, each changed cell), each missing or changed predictions
file and each journal attempt missing from the sheet. :func:`action_findings`
checks what may change without breaking the chain: an exclusion must be
logged in Audit (:func:`exclude` is the one allowed rewrite of an attempt), an
attempt's protocol hash must be one the Audit sheet locked, and
``pre_amendment`` must agree with it.

An unkeyed chain shows edits made with a spreadsheet program, not a forger who
recomputes every hash; the journal and archived copies of the last
``row_sha256`` witness against that. Stdlib only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from toolkit import __version__, layout
from toolkit.clock import now_text
from toolkit.digests import Digests
from toolkit.errors import UsageError
from toolkit.findings import Finding
from toolkit.workbook.model import Formula, Row, WorkbookData
from toolkit.workbook.text import cell_text

SHEET = "Attempts"
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


def _number(value: int | float | Decimal) -> float:
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


def _content(row: Mapping[str, Any]) -> str:
    """The row's chained cells as canonical JSON, keys sorted (blank cells left out)."""
    cells = {name: value for name in _SORTED_CHAINED
             if (value := cell_value(row.get(name))) is not None}
    return json.dumps(cells, ensure_ascii=False, separators=(",", ":"))


def _link(previous: str | None, content: str) -> str:
    text = json.dumps([previous or ""], ensure_ascii=False) + "\n" + content
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def seal(previous_row_sha256: str | None, row: Mapping[str, Any]) -> str:
    """The ``row_sha256`` of ``row`` recorded after a row sealed ``previous_row_sha256``.

    ``None`` (or "") for the first attempt row. Returns 64 hex digits.
    """
    return _link(cell_value(previous_row_sha256), _content(row))


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


# ---------------------------------------------------------------- verifying


@dataclass
class Integrity:
    """The attempt rows, the journal, the logged actions and the predictions files checked."""

    findings: list[Finding]
    predictions: list[PredictionsCheck]


def integrity_checks(data: WorkbookData, workbook: Path | None,
                     digests: Digests | None = None) -> Integrity:
    """The attempt chain against the journal beside ``workbook``, the logged actions
    (exclusions, amendments), and every row's predictions file checked (one hashing).

    ``digests`` is a pool already hashing the predictions files (one starts here when
    None); the chain is checked while it hashes. Without ``workbook`` only the rows
    themselves are checked. ``iteralab validate`` runs this, and ``iteralab report`` in a
    helper process (toolkit.report.checks).
    """
    found: list[Finding] = []
    checks: list[PredictionsCheck] = []
    with contextlib.ExitStack() as stack:
        if workbook is not None and digests is None:
            digests = stack.enter_context(Digests(predictions_files(data, workbook.parent)))
        records = _journal_records(workbook, found) if workbook is not None else None
        found += chain_findings(data, None, journal=records)
        if workbook is not None and digests is not None:
            checks = predictions_checks(data, workbook.parent, digests)
            found += _predictions_findings(data, checks)
    return Integrity(found + action_findings(data), checks)


def _journal_records(workbook: Path, found: list[Finding]) -> list[dict[str, Any]] | None:
    """The journal's records beside ``workbook``; an unreadable journal becomes a finding."""
    from toolkit import journal
    from toolkit.errors import ToolkitError

    try:
        return journal.read(workbook)
    except (ToolkitError, OSError) as exc:
        found.append(Finding(SHEET, None, "", "journal", "the journal cannot be read, so "
                             f"edits are checked by the chain alone: {exc}"))
        return None


def chain_findings(data: WorkbookData, workbook_dir: str | Path | None,
                   journal: Sequence[Mapping[str, Any]] | None = None) -> list[Finding]:
    """Every Attempts row edited, deleted, copied or moved, and every predictions file
    missing or changed, each finding naming its row.

    ``workbook_dir`` resolves ``predictions_path`` (None skips the files);
    ``journal`` (the records of ``NAME.journal.jsonl``, if any) names each
    edited cell and each recorded attempt missing from the sheet.
    """
    rows = data.tables[SHEET]
    recorded = _journal_rows(journal)
    hashes = [cell_value(r.get("row_sha256")) for r in rows]
    contents = [_content(r) for r in rows]
    found: list[Finding] = []
    first_row: dict[str, int] = {}
    budget = [SEARCH_LIMIT]
    previous: str | None = None
    for i, row in enumerate(rows):
        excel = data.excel_row(SHEET, i)
        name = f"attempt {row.get('attempt_id')!r}"
        edits = _edits(row, contents[i], recorded.get(str(row.get("attempt_id"))), name,
                       excel)
        found += edits
        if hashes[i] is None:
            found.append(Finding(
                SHEET, excel, "row_sha256", "sealed",
                f"{name} has no row_sha256: iteralab did not record this row (typed or pasted "
                "by hand?): delete it, or restore the recorded row from a copy or the journal "
                "(`iteralab ingest`)"))
        elif _link(previous, contents[i]) != hashes[i] and not edits:
            found.append(_broken(data, i, name, hashes, contents, first_row, budget,
                                 has_record=str(row.get("attempt_id")) in recorded))
        if hashes[i] is not None:
            first_row.setdefault(hashes[i], i)
        previous = hashes[i]
    present = {str(r.get("attempt_id")) for r in rows}
    for attempt_id in recorded:
        if attempt_id not in present:
            found.append(Finding(
                SHEET, None, "attempt_id", "journal",
                f"attempt {attempt_id!r} is in the journal but not in this sheet: it was "
                "deleted, or is not ingested yet: run `iteralab ingest WORKBOOK`"))
    if workbook_dir is not None:
        with Digests() as digests:
            found += _predictions_findings(
                data, predictions_checks(data, Path(workbook_dir), digests))
    return found


def _journal_rows(journal: Sequence[Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    """The first journal record's attempt row per attempt id."""
    out: dict[str, Mapping[str, Any]] = {}
    for entry in journal or ():
        attempt = entry.get("attempt") if isinstance(entry, Mapping) else None
        if isinstance(attempt, Mapping) and attempt.get("attempt_id") is not None:
            out.setdefault(str(attempt["attempt_id"]), attempt)
    return out


def _edits(row: Row, content: str, record: Mapping[str, Any] | None, name: str,
           excel: int) -> list[Finding]:
    """One finding per chained cell that differs from the attempt's journal record.

    ``content`` is the row's :func:`_content`: equal canonical texts mean equal
    cells, so the cell-by-cell comparison runs only for a row that differs.
    """
    if record is None or _content(record) == content:
        return []
    found = []
    for column in CHAINED_COLUMNS:
        was, now = cell_value(record.get(column)), cell_value(row.get(column))
        if was != now:
            found.append(Finding(
                SHEET, excel, column, "edited",
                f"{name}: {column} was {_shown(was)} when recorded (journal), now "
                f"{_shown(now)}: restore it; attempt rows change only through "
                "`iteralab exclude`"))
    return found


def _shown(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _broken(data: WorkbookData, i: int, name: str, hashes: list[Any], contents: list[str],
            first_row: dict[str, int], budget: list[int], has_record: bool) -> Finding:
    """Say why row ``i`` does not follow the row above it: copied, moved, edited or orphaned."""
    rows = data.tables[SHEET]
    excel = data.excel_row(SHEET, i)
    if hashes[i] in first_row:
        j = first_row[hashes[i]]
        return Finding(SHEET, excel, "row_sha256", "chain",
                       f"{name} repeats the row_sha256 of row {data.excel_row(SHEET, j)}: a "
                       "copied row; delete the copy")
    candidates: list[tuple[int | None, str | None]] = [(None, None)] + [
        (j, hashes[j]) for j in range(len(rows)) if j not in (i, i - 1)]
    budget[0] -= len(candidates)
    for j, previous in candidates if budget[0] >= 0 else ():
        if _link(previous, contents[i]) == hashes[i]:
            after = ("as the first attempt" if j is None else
                     f"right after attempt {rows[j].get('attempt_id')!r} (now row "
                     f"{data.excel_row(SHEET, j)})")
            return Finding(SHEET, excel, "row_sha256", "chain",
                           f"{name} was recorded {after}: rows were moved or sorted; restore "
                           "the recorded order (undo the sort, or restore from a copy)")
    if has_record:
        why = ("its cells match the journal, so the attempt recorded before it was deleted "
               "or moved: restore that row from a copy of the workbook")
    else:
        why = ("this row was edited after it was recorded, or the attempt recorded before "
               "it was deleted: compare with the backup (.bak.xlsx) and the journal "
               "(.journal.jsonl) beside the workbook, and restore the row")
    return Finding(SHEET, excel, "row_sha256", "chain",
                   f"{name} does not follow from its cells and the row above it: {why}")


@dataclass(frozen=True)
class PredictionsCheck:
    """One Attempts row's predictions file against its recorded SHA-256.

    ``state``: "no file recorded", "hash without path", "missing", "no hash
    recorded", "unreadable", "matches" or "differs".
    """

    index: int
    relative: Any
    path: Path | None
    recorded: str | None
    state: str
    actual: str | OSError | None = None


def _resolve(relative: Any, folder: Path) -> Path:
    path = Path(str(relative))
    return path if path.is_absolute() else folder / path


def predictions_files(data: WorkbookData, folder: Path) -> list[Path]:
    """The predictions files that rows record with a hash: what the checks will hash."""
    return [_resolve(relative, folder) for row in data.tables[SHEET]
            if (relative := cell_value(row.get("predictions_path"))) is not None
            and cell_value(row.get("predictions_sha256")) is not None]


def predictions_checks(data: WorkbookData, folder: Path, digests: Digests
                       ) -> list[PredictionsCheck]:
    """Each Attempts row's predictions file checked now against its recorded SHA-256."""
    checks = []
    for i, row in enumerate(data.tables[SHEET]):
        relative = cell_value(row.get("predictions_path"))
        recorded = cell_value(row.get("predictions_sha256"))
        recorded = None if recorded is None else str(recorded)
        if relative is None:
            state = "no file recorded" if recorded is None else "hash without path"
            checks.append(PredictionsCheck(i, None, None, recorded, state))
            continue
        path = _resolve(relative, folder)
        if not path.is_file():
            checks.append(PredictionsCheck(i, relative, path, recorded, "missing"))
        elif recorded is None:
            checks.append(PredictionsCheck(i, relative, path, recorded, "no hash recorded"))
        else:
            actual = digests.get(path)
            state = ("unreadable" if isinstance(actual, OSError)
                     else "matches" if actual == recorded.strip().lower() else "differs")
            checks.append(PredictionsCheck(i, relative, path, recorded, state, actual))
    return checks


#: What to do about each predictions check that failed: (column, message).
_PREDICTIONS_FINDINGS = {
    "hash without path": ("predictions_path", "{name} has a predictions_sha256 but no "
                          "predictions_path: restore the path the attempt recorded"),
    "missing": ("predictions_path", "{name}: predictions file {relative} is missing (looked for "
                "{path}): restore it from the campaign archive; without it the verdict cannot "
                "be checked (R7)"),
    "no hash recorded": ("predictions_sha256", "{name}: no predictions_sha256 for {relative}: "
                         "the file cannot be checked; restore the recorded hash"),
    "unreadable": ("predictions_path", "{name}: cannot read {relative} ({error}): make it "
                   "readable"),
    "differs": ("predictions_sha256", "{name}: {relative} no longer matches its SHA-256 "
                "(recorded {recorded:.12}..., now {actual:.12}...): the predictions were edited "
                "or replaced after the attempt; restore the original file"),
}


def _predictions_findings(data: WorkbookData, checks: Sequence[PredictionsCheck]
                          ) -> list[Finding]:
    found: list[Finding] = []
    for check in checks:
        if check.state not in _PREDICTIONS_FINDINGS:
            continue  # matches, or no file recorded
        column, message = _PREDICTIONS_FINDINGS[check.state]
        error = check.actual if isinstance(check.actual, OSError) else None
        text = message.format(
            name=f"attempt {data.tables[SHEET][check.index].get('attempt_id')!r}",
            relative=check.relative, path=check.path, recorded=str(check.recorded),
            actual=str(check.actual), error=getattr(error, "strerror", None) or error)
        found.append(Finding(SHEET, data.excel_row(SHEET, check.index), column, "predictions",
                             text))
    return found


# ---------------------------------------------------------------- logged actions


def _audit_rows(data: WorkbookData, action: str) -> list[tuple[int, Row]]:
    return [(data.excel_row("Audit", k), r) for k, r in enumerate(data.tables["Audit"])
            if r.get("action") == action]


def _details(row: Row) -> dict[str, Any]:
    try:
        details = json.loads(str(row.get("details") or ""))
    except ValueError:
        return {}
    return details if isinstance(details, dict) else {}


def action_findings(data: WorkbookData) -> list[Finding]:
    """Unchained Attempts cells that disagree with the Audit sheet's log.

    An exclusion without its Audit entry (or undone, or with another reason),
    an attempt whose protocol hash no lock or amendment recorded, and a
    ``pre_amendment`` mark that contradicts the protocol hash.
    """
    found: list[Finding] = []
    rows = data.tables[SHEET]
    index = {str(r.get("attempt_id")): i for i, r in enumerate(rows)}
    logged: dict[str, tuple[int, Row]] = {}
    for excel_audit, entry in _audit_rows(data, "exclude"):
        attempt_id = str(_details(entry).get("attempt_id"))
        logged[attempt_id] = (excel_audit, entry)
        if attempt_id not in index:
            found.append(Finding("Audit", excel_audit, "details", "logged",
                                 f"the exclusion of attempt {attempt_id!r} names no row of "
                                 "Attempts: the attempt was deleted; restore it"))
    for attempt_id, i in index.items():
        row, excel = rows[i], data.excel_row(SHEET, i)
        excluded = cell_value(row.get("excluded")) == layout.YES
        if attempt_id in logged:
            excel_audit, entry = logged[attempt_id]
            if not excluded:
                found.append(Finding(SHEET, excel, "excluded", "logged",
                                     f"attempt {attempt_id!r} was excluded (Audit row "
                                     f"{excel_audit}) but is no longer: set excluded back "
                                     "to yes; an exclusion is not undone"))
            elif cell_value(row.get("exclusion_reason")) != cell_value(entry.get("reason")):
                found.append(Finding(SHEET, excel, "exclusion_reason", "logged",
                                     f"attempt {attempt_id!r}: exclusion_reason differs from "
                                     f"the reason logged in Audit row {excel_audit}: restore "
                                     f"{_shown(cell_value(entry.get('reason')))}"))
        elif excluded:
            found.append(Finding(SHEET, excel, "excluded", "logged",
                                 f"attempt {attempt_id!r} is excluded without an Audit entry: "
                                 f"exclude it with `iteralab exclude WORKBOOK {attempt_id} "
                                 "--reason ...` (set excluded back to no first)"))
    found += _protocol_hash_findings(data)
    return found


def _protocol_hash_findings(data: WorkbookData) -> list[Finding]:
    locks = [r for r in data.tables["Audit"] if r.get("action") in ("lock", "amend")]
    if not locks:
        return []  # validate reports attempts recorded without a lock
    known = {cell_value(r.get("protocol_sha256")) for r in locks}
    current = cell_value(locks[-1].get("protocol_sha256"))
    amended = any(r.get("action") == "amend" for r in locks)
    found = []
    for i, row in enumerate(data.tables[SHEET]):
        excel = data.excel_row(SHEET, i)
        name = f"attempt {row.get('attempt_id')!r}"
        sha = cell_value(row.get("protocol_sha256"))
        marked = cell_value(row.get("pre_amendment")) == layout.YES
        if sha is not None and sha not in known:
            found.append(Finding(SHEET, excel, "protocol_sha256", "protocol-hash",
                                 f"{name} ran under protocol {str(sha)[:12]}, which no lock or "
                                 "amendment in the Audit sheet recorded: the Audit sheet or "
                                 "this cell was edited; restore it from a copy"))
        elif sha is not None and sha != current and not marked:
            found.append(Finding(SHEET, excel, "pre_amendment", "pre-amendment",
                                 f"{name} ran under protocol {str(sha)[:12]}, amended since "
                                 f"(now {str(current)[:12]}): set pre_amendment to yes"))
        elif marked and not amended:
            found.append(Finding(SHEET, excel, "pre_amendment", "pre-amendment",
                                 f"{name} is marked pre_amendment but the protocol was never "
                                 "amended: set pre_amendment to no"))
    return found


def exclude(data: WorkbookData, attempt_id: str, reason: str) -> int:
    """Exclude one attempt for a documented external cause (R14) and log it in Audit.

    Sets ``excluded`` = yes and ``exclusion_reason``; the chain is untouched.
    Returns the attempt's Excel row. Raises UsageError for a blank or overlong
    reason, an unknown attempt id, or an attempt already excluded.
    """
    reason = cell_text(reason or "").strip()
    if not reason:
        raise UsageError("an exclusion needs its documented external cause",
                         hint='pass --reason "what happened, and where it is documented"')
    if len(reason) > REASON_LIMIT:
        raise UsageError(f"the reason is {len(reason):,} characters; at most {REASON_LIMIT:,}",
                         hint="summarise it and point to the document that holds the details")
    rows = data.tables[SHEET]
    matches = [i for i, r in enumerate(rows) if str(r.get("attempt_id")) == attempt_id]
    if not matches:
        known = ", ".join(str(r.get("attempt_id")) for r in rows[:5]) or "none"
        raise UsageError(f"no attempt {attempt_id!r} in the Attempts sheet",
                         hint=f"use an attempt_id of the sheet (first ones: {known})")
    i = matches[0]
    row, excel = rows[i], data.excel_row(SHEET, i)
    if cell_value(row.get("excluded")) == layout.YES:
        raise UsageError(f"attempt {attempt_id!r} (Attempts!{excel}) is already excluded: "
                         f"{row.get('exclusion_reason')}",
                         hint="an exclusion is logged once and never undone")
    row["excluded"] = layout.YES
    row["exclusion_reason"] = reason
    locks = [r for r in data.tables["Audit"] if r.get("action") in ("lock", "amend")]
    protocol = (locks[-1].get("protocol_sha256") if locks else None) \
        or row.get("protocol_sha256") or "not locked"
    details = {"attempt_id": attempt_id, "row": excel, "row_sha256": row.get("row_sha256")}
    data.append("Audit", {
        "at": now_text(),
        "action": "exclude", "protocol_sha256": protocol, "tool_version": __version__,
        "reason": reason, "details": json.dumps(details, sort_keys=True, ensure_ascii=False),
    })
    return excel
