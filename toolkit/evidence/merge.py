"""Evidence from another rented machine, checked before it joins this campaign.

Two copies of one locked campaign folder run on two boxes (an RTX 4090 here, a
B200 there). :func:`plan` reads the other copy's journal and predictions and
decides, without writing anything, what joins this workbook: every finished
attempt this campaign lacks, each checked (the other copy's journal against its own
sealed workbook, a protocol this workbook locked, its predictions file inside the
folder and present with the recorded SHA-256); the other copy's exclusions come
along. An id this campaign already holds with the same record is skipped (merging
twice adds nothing);
with other content it is a conflict, never an overwrite. Any problem refuses
the whole merge. The locked read-change-save that adds the records and logs
the merge in Audit is :func:`toolkit.editing.merge`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from toolkit import layout
from toolkit.errors import EvidenceInvalid, UsageError
from toolkit.evidence import journal
from toolkit.evidence.identifiers import id_problem
from toolkit.evidence.integrity import record_checks
from toolkit.plumbing import beside
from toolkit.plumbing.digests import file_sha256
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

JOURNAL_SUFFIX = beside.JOURNAL_SUFFIX


@dataclass
class MergePlan:
    """What joins this workbook from the other copy, and where its files come from."""

    source: Path  # the other copy's journal
    source_folder: Path  # what its predictions paths are relative to
    journal_sha256: str
    records: list[dict[str, Any]] = field(default_factory=list)
    #: (from, to) predictions files to copy; a file already present and equal is left out.
    files: list[tuple[Path, Path]] = field(default_factory=list)
    already: int = 0
    problems: list[str] = field(default_factory=list)
    #: Attempts the other copy excluded (id -> its reason): they stay excluded here.
    exclusions: dict[str, str] = field(default_factory=dict)
    #: The other copy's start line of each joining attempt (by id), appended before it.
    starts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Joining attempts already in this journal (a merge stopped before its save).
    journaled: set[str] = field(default_factory=set)

    @property
    def hosts(self) -> list[str]:
        """Machines the joining attempts ran on (their Manifest host)."""
        return sorted(
            {
                str((r.get("manifest") or {}).get("host") or "host not recorded")
                for r in self.records
            }
        )


def journal_of(other: Path) -> Path:
    """The other copy's journal: given as a workbook (its journal beside it) or the journal."""
    if other.name.endswith(JOURNAL_SUFFIX):
        return other
    if other.suffix.lower() == ".xlsx":
        return journal.journal_path(other)
    raise UsageError(
        f"{other}: expected the other copy's workbook (.xlsx) or its journal "
        f"(NAME{JOURNAL_SUFFIX})",
        hint="e.g. iteralab merge campaign.xlsx from-b200/campaign.xlsx",
    )


def plan(
    main: Path, data: WorkbookData, other: Path, main_records: list[dict[str, Any]]
) -> MergePlan:
    """Decide what the other copy adds to ``data`` (read from ``main``); write nothing."""
    source = journal_of(other)
    if not source.is_file():
        raise UsageError(
            f"{source}: no journal there: nothing to merge",
            hint="copy the other box's campaign folder here (workbook, "
            "NAME.journal.jsonl and NAME_predictions/), then merge it",
        )
    if source.resolve() == journal.journal_path(main).resolve():
        raise UsageError(f"{other} is this workbook's own journal", hint="name the other copy")
    workbook_of_source = source.with_name(source.name[: -len(JOURNAL_SUFFIX)] + ".xlsx")
    result = MergePlan(source, source.parent, file_sha256(source))
    every = journal.read(workbook_of_source)
    records = [r for r in every if r.get("format") == journal.FORMAT]
    result.problems += journal.unstarted(workbook_of_source)
    result.problems += _other_copy_problems(workbook_of_source, every, result)
    locks = {
        str(r.get("protocol_sha256"))
        for r in data.tables["Audit"]
        if r.get("action") in ("lock", "amend")
    }
    known = {
        str(r["attempt"].get("attempt_id")): r
        for r in main_records
        if r.get("format") == journal.FORMAT
    }
    in_sheet = {str(a.get("attempt_id")) for a in data.tables["Attempts"]}
    for record in records:
        _consider(result, record, locks, known, in_sheet, main.parent)
    result.starts = journal.starts(workbook_of_source)
    if result.problems:
        listed = "\n".join(f"  {p}" for p in result.problems[:20])
        more = f"\n  and {len(result.problems) - 20} more" if len(result.problems) > 20 else ""
        raise EvidenceInvalid(
            f"{source}: not merged, {len(result.problems)} problem(s); "
            f"nothing was written:\n{listed}{more}",
            hint="merge only copies of this locked workbook, with their "
            "predictions folders as the runs left them",
        )
    return result


def _consider(
    result: MergePlan,
    record: Mapping[str, Any],
    locks: set[str],
    known: Mapping[str, Mapping[str, Any]],
    in_sheet: set[str],
    main_folder: Path,
) -> None:
    attempt = record.get("attempt") or {}
    attempt_id = str(attempt.get("attempt_id"))
    for column in ("attempt_id", "variant_id"):
        problem = id_problem(attempt.get(column))
        if problem:
            result.problems.append(
                f"{attempt_id!r}: {column} {attempt.get(column)!r} "
                f"{problem}: ids name files; the runner never records one"
            )
            return
    if attempt_id in known:
        if not _same(known[attempt_id], record):
            result.problems.append(
                f"{attempt_id}: this campaign holds another record under "
                "the same id (never overwritten)"
            )
        elif attempt_id in in_sheet:
            result.already += 1
        else:  # journaled by a merge stopped before its save: it joins now, logged
            result.journaled.add(attempt_id)
            result.records.append(dict(record))
        return
    if attempt_id in in_sheet:
        result.problems.append(
            f"{attempt_id}: in this workbook's Attempts but not in its "
            "journal: the records cannot be compared; restore the journal"
        )
        return
    sha = str(attempt.get("protocol_sha256"))
    if sha not in locks:
        result.problems.append(
            f"{attempt_id}: ran under protocol {sha[:12]}, which this "
            "workbook never locked: merge only copies of this campaign"
        )
        return
    path, digest = attempt.get("predictions_path"), attempt.get("predictions_sha256")
    if path and not inside_folder(str(path)):
        result.problems.append(
            f"{attempt_id}: predictions path {path!r} leaves the campaign "
            "folder (absolute, or through '..'): the runner never writes one"
        )
        return
    if path:
        source_file = result.source_folder / str(path)
        if not source_file.is_file():
            result.problems.append(
                f"{attempt_id}: predictions file {path} is missing beside the other copy"
            )
            return
        found = file_sha256(source_file)
        if found != digest:
            result.problems.append(
                f"{attempt_id}: predictions file {path} was changed after "
                f"the run (SHA-256 {found[:12]}, recorded "
                f"{str(digest)[:12]})"
            )
            return
        target = main_folder / str(path)
        if target.exists() and file_sha256(target) != digest:
            result.problems.append(
                f"{attempt_id}: {path} already exists here with other content (never overwritten)"
            )
            return
        if not target.exists():
            result.files.append((source_file, target))
    result.records.append(dict(record))


def inside_folder(relative: str) -> bool:
    """Whether a recorded predictions path stays inside the campaign's folder, as every path
    the runner records does (relative, no '..'): a copied record never writes elsewhere."""
    path = PurePosixPath(relative.replace("\\", "/"))
    return not path.is_absolute() and ".." not in path.parts and not PureWindowsPath(relative).drive


def _other_copy_problems(
    workbook: Path, journal_records: list[dict[str, Any]], result: MergePlan
) -> list[str]:
    """The other copy's journal checked against its own sealed workbook (a journal line
    edited after its row was sealed, or a copy whose rows were edited, is no evidence); its
    exclusions (R14) noted on ``result``, to stay excluded here."""
    if not workbook.is_file():
        return [
            f"{workbook.name} is missing beside the other copy's journal: its sealed rows "
            "are what the journal is checked against; copy the whole campaign folder"
        ]
    other = store.read(workbook)
    result.exclusions = {
        str(r.get("attempt_id")): str(r.get("exclusion_reason") or "")
        for r in other.tables["Attempts"]
        if r.get("excluded") == layout.YES
    }
    return [
        f"the other copy does not hold together: {f.location()}: {f.message}"
        for f in record_checks(other, workbook, journal_records)
    ]


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ("attempt", "manifest", "predictions_sha256")
    return all(a.get(k) == b.get(k) for k in keys)


def provenance(result: MergePlan) -> dict[str, Any]:
    """The Audit details of a merge: where the attempts came from."""
    return {
        "source": str(result.source),
        "journal_sha256": result.journal_sha256,
        "hosts": result.hosts,
        "attempts": [str(r["attempt"].get("attempt_id")) for r in result.records],
    }
