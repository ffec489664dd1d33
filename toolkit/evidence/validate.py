"""Validate a workbook: pandera schemas plus the rules that span rows and sheets.

Returns findings (sheet, Excel row, column, check, message) rather than stopping
at the first problem; the CLI turns "any finding" into exit code 1. Beyond the
schemas: edits to the protocol after its lock, and the attempt row chain
(edited, deleted, copied or moved rows; predictions files missing or changed;
exclusions and amendments that the Audit sheet did not log).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.errors import CorpusError, ProtocolError
from toolkit.evidence import (
    bookkeeping,
    corpus,
    determinism,
    identifiers,
    integrity,
    measured_cells,
    money_log,
    money_rules,
    predictions,
    scenario,
    subgroups,
    tuning,
    unfinished,
    warmup,
)
from toolkit.evidence.protocol import current_lock, lock_findings
from toolkit.evidence.schemas_beside import SchemasBeside, schema_findings
from toolkit.evidence.work_columns import WORK_COLUMNS
from toolkit.findings import Finding
from toolkit.plumbing import engines, padding
from toolkit.plumbing.digests import Digests
from toolkit.plumbing.plain import not_plain
from toolkit.workbook.model import Row, WorkbookData

YES = layout.YES
SHEET_ORDER = {s.name: i for i, s in enumerate(layout.SHEETS)}


def validate(
    data: WorkbookData,
    path: str | Path | None = None,
    digests: Digests | None = None,
    records: integrity.RecordChecks | None = None,
    schemas: SchemasBeside | None = None,
) -> list[Finding]:
    """Every finding in the workbook: schemas, cross-sheet rules, edits after the lock,
    the attempt chain.

    With ``path``, predictions files are checked (relative to its folder) and
    the journal ``NAME.journal.jsonl`` beside it, if any, names edited cells
    and attempts missing from the sheet. ``digests`` may be hashing them already
    (:func:`toolkit.evidence.predictions.early_digests`), and ``records`` checking the
    chain and journal already; both run beside the schemas on a large campaign. ``schemas``
    may be checking the schemas of ``data`` in a helper process: asked for after the checks
    made here.
    """
    where = None if path is None else Path(path)
    with contextlib.ExitStack() as stack:
        stack.enter_context(corpus.read_once())  # several checks read the Protocol's corpus
        if digests is None:  # many files hash in a helper process while the sheets are checked
            files = [] if where is None else predictions.predictions_files(data, where.parent)
            digests = stack.enter_context(Digests(files))
        if records is None:  # the chain and journal too, on a large campaign
            records = stack.enter_context(integrity.RecordChecks(data, where))
        findings = []
        if where is not None:
            findings += (
                corpus_findings(data, where)
                + corpus_change_findings(data, where)
                + tuning.tuning_findings(data, where)
                + subgroups.field_findings(data, where)
                + unfinished.findings(where, data)
                + integrity.files_checks(data, where, digests).findings
            )
        findings += sheet_findings(data, None, schemas) + records.result()
    return sorted_findings(findings)


def corpus_findings(data: WorkbookData, workbook: str | Path) -> list[Finding]:
    """A finding when Protocol.corpus_path names no file, or a file the runner's reader
    refuses (naming its line): the runner reads it relative to the workbook's folder, as
    here."""
    value = data.forms["Protocol"].get("corpus_path")
    if not isinstance(value, str) or not value.strip():
        return []  # the schema reports a blank or a non-text value
    row = layout.PROTOCOL.names.index("corpus_path") + 2
    resolved = Path(workbook).parent / value.strip()
    if resolved.is_file():
        try:  # as the runner reads it: a corpus it would refuse is not fit to lock
            corpus.read_corpus(resolved)
        except CorpusError as exc:
            return [
                Finding(
                    "Protocol",
                    row,
                    "corpus_path",
                    "corpus-file",
                    f"the corpus does not read: {exc.message}; "
                    f"{exc.hint or 'correct the file'}, then validate again",
                )
            ]
        return []
    kind = not_plain(resolved)
    what = f"is {kind}, not a corpus file" if kind else "does not exist"
    return [
        Finding(
            "Protocol",
            row,
            "corpus_path",
            "exists",
            f"corpus_path {value!r} resolves to {resolved}, which {what}: "
            "put the corpus (JSONL or CSV) there, or correct corpus_path (relative "
            "to the workbook's folder)",
        )
    ]


def corpus_change_findings(data: WorkbookData, workbook: str | Path) -> list[Finding]:
    """A finding for each corpus file, still present, whose fingerprint is no longer the one
    its Manifest rows recorded: the file was edited after the attempts ran on it, so the
    archive no longer re-runs the question that was measured (R3, seed 000)."""
    recorded: dict[str, dict[str, list[int]]] = {}  # corpus_path -> fingerprint -> Excel rows
    for row, m in enumerate(data.tables["Manifest"], start=2):
        path, sha = m.get("corpus_path"), m.get("corpus_sha256")
        if isinstance(path, str) and path.strip() and isinstance(sha, str) and sha:
            recorded.setdefault(path.strip(), {}).setdefault(sha, []).append(row)
    findings = []
    for path, by_sha in recorded.items():
        file = Path(workbook).parent / path
        if not file.is_file():
            continue  # a moved archive: the Protocol's corpus_path finding names a missing one
        first = min(r for rows in by_sha.values() for r in rows)
        try:
            now = corpus.fingerprint(corpus.read_corpus(file))
        except CorpusError as exc:
            findings.append(
                Finding(
                    "Manifest",
                    first,
                    "corpus_path",
                    "corpus-file",
                    f"the corpus {path} the attempts ran on no longer reads as a corpus: {exc}",
                )
            )
            continue
        for sha, rows in sorted(by_sha.items()):
            if sha != now:
                findings.append(
                    Finding(
                        "Manifest",
                        rows[0],
                        "corpus_sha256",
                        "corpus-file",
                        f"the corpus {path} changed after the attempts ran on it: its fingerprint "
                        f"is now {now[:12]}, Manifest rows {_rows(rows)} recorded {sha[:12]}; "
                        "restore the file the attempts measured (the archive must re-run the same "
                        "question), or amend the protocol and run again",
                    )
                )
    return findings


def _rows(rows: list[int]) -> str:
    return ", ".join(map(str, rows[:5])) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")


def sheet_findings(
    data: WorkbookData, sheets: Iterable[str] | None = None, schemas: SchemasBeside | None = None
) -> list[Finding]:
    """What validation finds outside the attempt chain: the schemas and rules of ``sheets``
    (every sheet by default) and the protocol's lock. ``schemas`` may be checking the
    schemas already (:func:`validate_sheets`)."""
    names = layout.SCHEMA_SHEETS if sheets is None else sheets
    findings = (
        lock_findings(data)
        + money_log.money_edit_findings(data)
        + bookkeeping.findings(data)
        + unkept_findings(data)
        + validate_sheets(data, names, schemas)
    )
    if data.tables["Attempts"] and not any(
        r.get("action") in ("lock", "amend") for r in data.tables["Audit"]
    ):
        findings.append(
            Finding(
                "Attempts",
                None,
                "",
                "locked",
                "attempts were recorded without a protocol lock: they cannot "
                "show the protocol was fixed before timing",
            )
        )
    return findings


def unkept_findings(data: WorkbookData) -> list[Finding]:
    """A finding per sheet, column or form row a person added: every command that saves
    refuses the workbook while it holds one (:func:`toolkit.workbook.store.check_keepable`),
    since a save would drop it."""
    return [
        Finding(
            u.sheet,
            u.row,
            u.column,
            "kept",
            f"{u} is not part of the workbook iteralab keeps: every command that "
            "saves (report, run, exclude, amend) refuses the workbook while it is "
            "there; move it to a file beside the workbook (or into a variant's "
            "description or the Decision memo), or remove it",
        )
        for u in data.unkept
    ]


def validate_sheets(
    data: WorkbookData, sheets: Iterable[str], schemas: SchemasBeside | None = None
) -> list[Finding]:
    """Findings of the given sheets: their schemas and their own cross rules.

    A formula typed in an input cell is reported as such, in place of what its
    (cached or missing) value would otherwise raise in that cell. ``schemas`` may be
    checking the schemas in a helper process: its findings are asked for last.
    """
    names = list(sheets)
    own: dict[str, tuple[list[Finding], list[Finding]]] = {}  # name -> (formulas, the rest)
    for name in names:
        found = identifiers.printed_alike_findings(data, name)
        rule = RULES.get(name)
        if rule is not None:
            found += rule(data)
        own[name] = (typed_formula_findings(data, name), found)
    by_sheet = schema_findings(data, names) if schemas is None else schemas.findings(data, names)
    findings: list[Finding] = []
    for name, (formulas, found) in own.items():
        cells = {(f.row, f.column) for f in formulas}
        found = by_sheet[name] + found
        findings += formulas + [f for f in found if (f.row, f.column) not in cells]
    return sorted_findings(findings)


def typed_formula_findings(data: WorkbookData, name: str) -> list[Finding]:
    """A finding per formula in a cell of ``name`` where iteralab writes none: any cell of
    an input sheet but the computed cells of Schedule, Summary and Settlement (the store
    reads them from the small input sheets, and scans Attempts and Manifest for them)."""
    sheet = layout.SHEET_BY_NAME[name]
    if not sheet.input or sheet.kind == "text":
        return []
    found = []
    computed_formulas = name in layout.FORMULA_SHEETS
    for (index, column), formula in data.formulas.get(name, {}).items():
        if column not in sheet.names or (computed_formulas and sheet.column(column).computed):
            continue
        if sheet.kind == "form":
            row, letter = sheet.names.index(column) + 2, "B"
        else:
            row, letter = data.excel_row(name, index), layout.column_letter(sheet, column)
        text = formula.text if formula.text.startswith("=") else f"={formula.text}"
        todo = (
            "iteralab writes a value there, never a formula: restore the value it wrote "
            "(the journal and the .bak.xlsx keep it)"
            if sheet.column(column).computed
            else "formulas are not allowed in an input cell; type the value itself"
        )
        found.append(
            Finding(
                name,
                row,
                column,
                "formula",
                f"{column} holds the formula {text} in {name}!{letter}{row}: {todo}",
            )
        )
    return found


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Findings without repeats, in sheet order, then row, column, check, message."""
    return sorted(
        set(findings),
        key=lambda f: (SHEET_ORDER.get(f.sheet, 99), f.row or 0, f.column, f.check, f.message),
    )


def _protocol_rules(data: WorkbookData) -> list[Finding]:
    form = data.forms["Protocol"]
    found = []
    row = layout.PROTOCOL.names.index
    reference = form.get("reference_variant")
    variant_ids = {r.get("variant_id") for r in data.tables["Variants"]}
    if reference and reference not in variant_ids:
        found.append(
            Finding(
                "Protocol",
                row("reference_variant") + 2,
                "reference_variant",
                "exists",
                f"reference variant {reference!r} is not declared in "
                "Variants: declare it or name an existing variant_id",
            )
        )
    for name in ("repetitions", "expected_outputs"):
        value = form.get(name)
        if isinstance(value, int) and value < 1:
            found.append(
                Finding(
                    "Protocol",
                    row(name) + 2,
                    name,
                    "positive",
                    f"{name} must be at least 1; found {value}",
                )
            )
    return (
        found
        + _warmup_findings(form, row("warmup_rule") + 2)
        + subgroups.protocol_findings(data)
        + scenario.protocol_findings(data)
    )


def _warmup_findings(form: dict[str, Any], excel: int) -> list[Finding]:
    """The warm-up rule read as the runner reads it: one it cannot apply is found now, not at
    `check` after the lock (when fixing its wording needs an amend). A blank is the schema's."""
    if not str(form.get("warmup_rule") or "").strip():
        return []
    try:
        warmup.parse_warmup(str(form.get("warmup_rule")))
    except ProtocolError as exc:
        return [Finding("Protocol", excel, "warmup_rule", "warmup", f"{exc.message}: {exc.hint}")]
    return []


def _variants_rules(data: WorkbookData) -> list[Finding]:
    found = []
    if not data.tables["Variants"]:
        found.append(
            Finding(
                "Variants",
                None,
                "variant_id",
                "required",
                "no variant is declared: add one row per variant to compare",
            )
        )
    for i, v in enumerate(data.tables["Variants"]):
        excel = data.excel_row("Variants", i)
        for name in ("batch_size", "max_length", "series"):
            value = v.get(name)
            if isinstance(value, int) and value < 1:
                found.append(
                    Finding(
                        "Variants",
                        excel,
                        name,
                        "positive",
                        f"{name} must be at least 1; found {value}",
                    )
                )
        problem = engines.problem(v, str(data.forms["Protocol"].get("task") or "classification"))
        if problem is not None:
            found.append(
                Finding(
                    "Variants",
                    excel,
                    "engine",
                    "engine",
                    f"{v.get('variant_id')}: {problem[0]}: {problem[1]}",
                )
            )
    return (
        found
        + _pipeline_findings(data)
        + scenario.variant_findings(data)
        + identifiers.variant_id_findings(data)
        + _series_1_findings(data)
        + _later_series_findings(data)
    )


def _pipeline_findings(data: WorkbookData) -> list[Finding]:
    """Each variant's padding is a policy the runner knows, and an overlapped input pipeline
    is one the runner has: the torch engine's, for classification."""
    task = str(data.forms["Protocol"].get("task") or "classification")
    found = []
    for i, v in enumerate(data.tables["Variants"]):
        excel, vid = data.excel_row("Variants", i), v.get("variant_id")
        problem = padding.problem(v.get("padding"), v.get("max_length"))
        if problem is not None:
            found.append(
                Finding(
                    "Variants",
                    excel,
                    "padding",
                    "padding",
                    f"{vid}: padding {problem}: type {padding.SPELLING}, with N at most "
                    "the row's max_length",
                )
            )
        elif task != "classification" and str(v.get("padding") or "").startswith(
            padding.BUCKET_PREFIX
        ):
            found.append(
                Finding(
                    "Variants",
                    excel,
                    "padding",
                    "padding",
                    f"{vid}: bucket padding applies to the classification task, not {task}: "
                    "type dynamic or max_length",
                )
            )
        if work_cell(v, "input_pipeline") != OVERLAPPED:
            continue
        engine = engines.engine_of(v)
        if task != "classification" or engine != engines.TORCH:
            found.append(
                Finding(
                    "Variants",
                    excel,
                    "input_pipeline",
                    "input-pipeline",
                    f"{vid}: the overlapped input pipeline is the torch engine's for the "
                    f"classification task; this row runs {engine} for {task}: type sequential "
                    "or leave it blank",
                )
            )
    return found


# --------------------------------------------------------------- series (R6)

#: The input pipeline a blank Variants cell means (every workbook before layout 8).
SEQUENTIAL, OVERLAPPED = "sequential", "overlapped"
SERIES_1_VARIABLE = "batch_size"
#: A serving campaign's series 1 is a rate sweep: the load is its only variable.
SERVING_SERIES_1_VARIABLE = "request_rate"


def series_1_variable(data: WorkbookData) -> str:
    """The one work column series 1 varies: the load under a serving Protocol, else batch."""
    return (
        SERVING_SERIES_1_VARIABLE
        if scenario.is_serving(data.forms["Protocol"])
        else SERIES_1_VARIABLE
    )


def work_value(value: Any) -> Any:
    """A Variants cell as the series rules compare it: blank is None, text stripped, 8.0 is 8."""
    if isinstance(value, str):
        value = value.strip() or None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def work_cell(row: Row, column: str) -> Any:
    """A work column's value as the series rules compare it (a blank engine is torch, a
    blank input_pipeline sequential)."""
    if column == "engine":
        return engines.engine_of(row)
    value = work_value(row.get(column))
    return SEQUENTIAL if column == "input_pipeline" and value is None else value


def work_differences(a: Row, b: Row) -> list[str]:
    """The work columns in which two Variants rows differ, in column order."""
    return [c for c in WORK_COLUMNS if work_cell(a, c) != work_cell(b, c)]


def named_changes(row: Row) -> list[str]:
    """The column names a Variants row's ``changes`` lists, blanks dropped."""
    text = work_value(row.get("changes"))
    return [] if text is None else [n.strip() for n in str(text).split(",") if n.strip()]


def declared(row: Row) -> frozenset[str] | None:
    """The work columns a variant declares as its variables: batch_size in series 1, its
    ``changes`` in a later series; None for a later-series variant without base_variant
    (a workbook recorded before layout 2 added the column)."""
    if row.get("series") == 1:
        # The one validate allows is the task's (series_1_variable); the other is the same
        # in every series-1 row of a valid workbook.
        return frozenset({SERIES_1_VARIABLE, SERVING_SERIES_1_VARIABLE})
    if work_value(row.get("base_variant")) is None:
        return None
    return frozenset(named_changes(row)) & frozenset(WORK_COLUMNS)


def shown(value: Any) -> str:
    """A Variants value in a message: 'bf16', 8, or blank."""
    return "blank" if value is None else repr(value) if isinstance(value, str) else str(value)


def _series_1_findings(data: WorkbookData) -> list[Finding]:
    """A finding per series-1 cell that differs from the series' usual value, batch aside."""
    rows = [
        (data.excel_row("Variants", i), v)
        for i, v in enumerate(data.tables["Variants"])
        if v.get("series") == 1
    ]
    found = []
    variable = series_1_variable(data)
    for column in WORK_COLUMNS:
        counts = Counter(work_cell(v, column) for _, v in rows)
        if column == variable or len(counts) < 2:
            continue
        usual = counts.most_common(1)[0][0]  # ties: the value of the first row
        for excel, v in rows:
            value, vid = work_cell(v, column), v.get("variant_id")
            if value != usual and not _required_blank(v, column):
                found.append(
                    Finding(
                        "Variants",
                        excel,
                        column,
                        "series-1",
                        (
                            f"series 1 varies {variable} only: {vid} has {column} {shown(value)} "
                            f"where series 1 has {shown(usual)}; set {shown(usual)}, or move {vid} to "
                            "a later series that names its base_variant and changes"
                        ),
                    )
                )
    for excel, v in rows:
        for column in ("base_variant", "changes"):
            if work_value(v.get(column)) is not None:
                found.append(
                    Finding(
                        "Variants",
                        excel,
                        column,
                        "series-1",
                        (
                            f"{v.get('variant_id')} is in series 1, whose only variable is {variable}: "
                            f"leave {column} blank, or move it to a later series"
                        ),
                    )
                )
    return found


def _required_blank(row: Row, column: str) -> bool:
    """A blank required cell: the schema's finding already names it."""
    return work_value(row.get(column)) is None and layout.VARIANTS.column(column).required


def _locked_without_base(data: WorkbookData) -> set[Any]:
    """Variants the lock in force holds without a base_variant: locked before the column
    existed (a lock now refuses that), so their evidence keeps reading clean."""
    lock = current_lock(data)
    rows = lock.snapshot.get("Variants", []) if lock is not None else []
    return {
        r.get("variant_id")
        for r in rows
        if isinstance(r, dict) and work_value(r.get("base_variant")) is None
    }


def _later_series_findings(data: WorkbookData) -> list[Finding]:
    """Each variant of series 2 or later names its base and differs from it as declared.

    A blank base_variant is a finding only where the column could have been filled: the
    workbook's layout has it, and the lock in force did not already hold the variant
    without it (a layout-1 campaign, upgraded by its first save).
    """
    rows = data.tables["Variants"]
    by_id: dict[Any, Row] = {}
    for v in rows:
        by_id.setdefault(work_value(v.get("variant_id")), v)
    exempt = _locked_without_base(data) if data.layout_version >= 2 else None
    found = []
    for i, v in enumerate(rows):
        series, vid = v.get("series"), v.get("variant_id")
        if not isinstance(series, int) or series < 2:
            continue
        base_id = work_value(v.get("base_variant"))
        if base_id is None:
            problems = (
                []
                if exempt is None or vid in exempt
                else [
                    (
                        "base_variant",
                        "base-variant",
                        f"{vid} is in series {series}: name in "
                        "base_variant the variant it changes, and list in changes the columns it "
                        "changes",
                    )
                ]
            )
        elif base_id == work_value(vid) or base_id not in by_id:
            what = (
                "names the variant itself"
                if base_id == work_value(vid)
                else "is not declared in Variants"
            )
            problems = [
                (
                    "base_variant",
                    "base-variant",
                    f"base_variant {base_id!r} {what}: name the variant_id that {vid} changes",
                )
            ]
        else:
            problems = _change_findings(v, by_id[base_id], str(base_id))
        found += [
            Finding("Variants", data.excel_row("Variants", i), column, check, message)
            for column, check, message in problems
        ]
    return found


def _change_findings(v: Row, base: Row, base_id: str) -> list[tuple[str, str, str]]:
    """(column, check, message) for each way ``v`` differs from its base other than declared."""
    vid, named = v.get("variant_id"), named_changes(v)
    differ = work_differences(base, v)
    found = [
        (
            "changes",
            "changes",
            f"changes names {n!r}, which is not a column that defines "
            f"the work: use {', '.join(WORK_COLUMNS)}",
        )
        for n in named
        if n not in WORK_COLUMNS
    ]
    for c in differ:
        if c not in named and not _required_blank(v, c):
            old, new = shown(work_cell(base, c)), shown(work_cell(v, c))
            found.append(
                (
                    c,
                    "undeclared-change",
                    f"{vid} differs from its base {base_id} in "
                    f"{c} ({old} -> {new}) without declaring it in changes: add {c} to "
                    f"changes, or set it back to {old} (every other choice pinned)",
                )
            )
    for c in named:
        if c in WORK_COLUMNS and c not in differ:
            found.append(
                (
                    "changes",
                    "declared-change",
                    f"{vid} declares {c} in changes but has "
                    f"the same {c} as its base {base_id} "
                    f"({shown(work_cell(base, c))}): remove it from changes, or "
                    "change it",
                )
            )
    if not differ and not named:
        found.append(
            (
                "changes",
                "declared-change",
                f"{vid} runs the same work as its base "
                f"{base_id}: declare in changes the column(s) it changes",
            )
        )
    return found


def _attempts_rules(data: WorkbookData) -> list[Finding]:
    variants = {r.get("variant_id") for r in data.tables["Variants"]}
    manifests = {r.get("manifest_id") for r in data.tables["Manifest"]}
    found = []
    for i, a in enumerate(data.tables["Attempts"]):
        excel = data.excel_row("Attempts", i)

        def add(column: str, check: str, message: str, excel: int = excel) -> None:
            found.append(Finding("Attempts", excel, column, check, message))

        if a.get("variant_id") and a["variant_id"] not in variants:
            add(
                "variant_id",
                "exists",
                f"variant {a['variant_id']!r} is not declared in "
                "Variants: declare it (with `iteralab amend`) or correct the id",
            )
        if a.get("manifest_id") and a["manifest_id"] not in manifests:
            add(
                "manifest_id",
                "exists",
                f"manifest {a['manifest_id']!r} has no Manifest row: "
                "restore it (`iteralab ingest` replays the journal)",
            )
        measured_cells.layout_cell_findings(a, add)
        measured_cells.cell_findings(a, add)
        if a.get("status") == "completed" and a.get("measured_s") is None:
            add(
                "measured_s",
                "completed-measured",
                "a completed attempt has its measured duration: fill measured_s or change status",
            )
        if a.get("corpus_accepted") == YES:
            reasons = []
            if a.get("status") != "completed":
                reasons.append(f"status is {a.get('status')!r}")
            if a.get("ids_match") != YES:
                reasons.append("ids do not match")
            if a.get("quality_verdict") != "pass":
                reasons.append(f"quality verdict is {a.get('quality_verdict')!r}")
            if reasons:
                add(
                    "corpus_accepted",
                    "accepted-rule",
                    "corpus_accepted is yes but "
                    + ", ".join(reasons)
                    + ": only a completed run with matching ids and "
                    "passing quality is accepted",
                )
        if a.get("excluded") == YES and not a.get("exclusion_reason"):
            add(
                "exclusion_reason",
                "exclusion-reason",
                "an excluded attempt names its documented external cause in exclusion_reason",
            )
        items, expected = a.get("items_completed"), a.get("expected_ids")
        if isinstance(items, int) and isinstance(expected, int) and items > expected:
            add(
                "items_completed",
                "bounded",
                f"items_completed {items} exceeds expected_ids {expected}",
            )
    return found


RULES = {
    "Protocol": _protocol_rules,
    "Variants": lambda data: _variants_rules(data) + money_rules.variants_rental_rules(data),
    "Attempts": _attempts_rules,
    "Manifest": determinism.findings,
    **money_rules.RULES,
}
