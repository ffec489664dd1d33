"""Validate a workbook: pandera schemas plus the rules that span rows and sheets.

Returns findings (sheet, Excel row, column, check, message) rather than stopping
at the first problem; the CLI turns "any finding" into exit code 1. Beyond the
schemas: edits to the protocol after its lock, and the attempt row chain
(edited, deleted, copied or moved rows; predictions files missing or changed;
exclusions and amendments that the Audit sheet did not log).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from toolkit import layout
from toolkit.errors import CorpusError
from toolkit.evidence import corpus, integrity, money_log, money_rules, predictions, schemas
from toolkit.evidence.protocol import lock_findings
from toolkit.findings import Finding
from toolkit.plumbing.digests import Digests
from toolkit.workbook.model import WorkbookData

YES = layout.YES
SHEET_ORDER = {s.name: i for i, s in enumerate(layout.SHEETS)}


def validate(data: WorkbookData, path: str | Path | None = None) -> list[Finding]:
    """Every finding in the workbook: schemas, cross-sheet rules, edits after the lock,
    the attempt chain.

    With ``path``, predictions files are checked (relative to its folder) and
    the journal ``NAME.journal.jsonl`` beside it, if any, names edited cells
    and attempts missing from the sheet.
    """
    where = None if path is None else Path(path)
    files = predictions.predictions_files(data, where.parent) if where is not None else []
    # Many files hash in a helper process while the sheets are checked here.
    with Digests(files) as digests:
        findings = sheet_findings(data)
        if where is not None:
            findings += corpus_findings(data, where) + corpus_change_findings(data, where)
        findings += integrity.integrity_checks(data, where, digests).findings
    return sorted_findings(findings)


def corpus_findings(data: WorkbookData, workbook: str | Path) -> list[Finding]:
    """A finding when Protocol.corpus_path names no file: the runner reads it relative
    to the workbook's folder, as here."""
    value = data.forms["Protocol"].get("corpus_path")
    if not isinstance(value, str) or not value.strip():
        return []  # the schema reports a blank or a non-text value
    resolved = Path(workbook).parent / value.strip()
    if resolved.is_file():
        return []
    what = "is a folder, not a corpus file" if resolved.is_dir() else "does not exist"
    return [Finding("Protocol", layout.PROTOCOL.names.index("corpus_path") + 2, "corpus_path",
                    "exists", f"corpus_path {value!r} resolves to {resolved}, which {what}: "
                    "put the corpus (JSONL or CSV) there, or correct corpus_path (relative "
                    "to the workbook's folder)")]


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
            findings.append(Finding("Manifest", first, "corpus_path", "corpus-file",
                                    f"the corpus {path} the attempts ran on no longer reads "
                                    f"as a corpus: {exc}"))
            continue
        for sha, rows in sorted(by_sha.items()):
            if sha != now:
                findings.append(Finding(
                    "Manifest", rows[0], "corpus_sha256", "corpus-file",
                    f"the corpus {path} changed after the attempts ran on it: its fingerprint "
                    f"is now {now[:12]}, Manifest rows {_rows(rows)} recorded {sha[:12]}; "
                    "restore the file the attempts measured (the archive must re-run the same "
                    "question), or amend the protocol and run again"))
    return findings


def _rows(rows: list[int]) -> str:
    return ", ".join(map(str, rows[:5])) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")


def sheet_findings(data: WorkbookData, sheets: Iterable[str] | None = None) -> list[Finding]:
    """What validation finds outside the attempt chain: the schemas and rules of ``sheets``
    (every sheet by default) and the protocol's lock."""
    names = [s.name for s in layout.SHEETS if s.kind != "text"] if sheets is None else sheets
    findings = (validate_sheets(data, names) + lock_findings(data)
                + money_log.money_edit_findings(data))
    if data.tables["Attempts"] and not any(
        r.get("action") in ("lock", "amend") for r in data.tables["Audit"]
    ):
        findings.append(Finding("Attempts", None, "", "locked",
                                "attempts were recorded without a protocol lock: they cannot "
                                "show the protocol was fixed before timing (R1)"))
    return findings


def validate_sheets(data: WorkbookData, sheets: Iterable[str]) -> list[Finding]:
    """Findings of the given sheets: their schemas and their own cross rules.

    A formula typed in an input cell is reported as such, in place of what its
    (cached or missing) value would otherwise raise in that cell.
    """
    findings: list[Finding] = []
    for name in sheets:
        formulas = typed_formula_findings(data, name)
        cells = {(f.row, f.column) for f in formulas}
        found = schemas.sheet_findings(data, name)
        rule = RULES.get(name)
        if rule is not None:
            found += rule(data)
        findings += formulas + [f for f in found if (f.row, f.column) not in cells]
    return sorted_findings(findings)


def typed_formula_findings(data: WorkbookData, name: str) -> list[Finding]:
    """A finding per formula in a cell of ``name`` that a person types (the store reads
    them from Protocol, Variants, Tariffs, Schedule and Decision)."""
    sheet = layout.SHEET_BY_NAME[name]
    if not sheet.input or sheet.kind == "text":
        return []
    found = []
    for (index, column), formula in data.formulas.get(name, {}).items():
        if column not in sheet.names or sheet.column(column).computed:
            continue
        if sheet.kind == "form":
            row, letter = sheet.names.index(column) + 2, "B"
        else:
            row, letter = data.excel_row(name, index), layout.column_letter(sheet, column)
        text = formula.text if formula.text.startswith("=") else f"={formula.text}"
        found.append(Finding(name, row, column, "formula",
                             f"{column} holds the formula {text} in {name}!{letter}{row}: "
                             "formulas are not allowed in an input cell; type the value "
                             "itself"))
    return found


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Findings without repeats, in sheet order, then row, column, check, message."""
    return sorted(set(findings), key=lambda f: (SHEET_ORDER.get(f.sheet, 99), f.row or 0,
                                                f.column, f.check, f.message))


def _protocol_rules(data: WorkbookData) -> list[Finding]:
    form = data.forms["Protocol"]
    found = []
    row = layout.PROTOCOL.names.index
    reference = form.get("reference_variant")
    variant_ids = {r.get("variant_id") for r in data.tables["Variants"]}
    if reference and reference not in variant_ids:
        found.append(Finding("Protocol", row("reference_variant") + 2, "reference_variant",
                             "exists", f"reference variant {reference!r} is not declared in "
                             "Variants: declare it or name an existing variant_id"))
    for name in ("repetitions", "expected_outputs"):
        value = form.get(name)
        if isinstance(value, int) and value < 1:
            found.append(Finding("Protocol", row(name) + 2, name, "positive",
                                 f"{name} must be at least 1; found {value}"))
    return found


def _variants_rules(data: WorkbookData) -> list[Finding]:
    found = []
    if not data.tables["Variants"]:
        found.append(Finding("Variants", None, "variant_id", "required",
                             "no variant is declared: add one row per variant to compare"))
    for i, v in enumerate(data.tables["Variants"]):
        excel = data.excel_row("Variants", i)
        for name in ("batch_size", "max_length", "series"):
            value = v.get(name)
            if isinstance(value, int) and value < 1:
                found.append(Finding("Variants", excel, name, "positive",
                                     f"{name} must be at least 1; found {value}"))
    return found


def _attempts_rules(data: WorkbookData) -> list[Finding]:
    variants = {r.get("variant_id") for r in data.tables["Variants"]}
    manifests = {r.get("manifest_id") for r in data.tables["Manifest"]}
    found = []
    measured = [c for c in layout.ATTEMPTS.columns if c.measurement]
    for i, a in enumerate(data.tables["Attempts"]):
        excel = data.excel_row("Attempts", i)

        def add(column: str, check: str, message: str, excel: int = excel) -> None:
            found.append(Finding("Attempts", excel, column, check, message))

        if a.get("variant_id") and a["variant_id"] not in variants:
            add("variant_id", "exists", f"variant {a['variant_id']!r} is not declared in "
                "Variants: declare it (with `iteralab amend`) or correct the id")
        if a.get("manifest_id") and a["manifest_id"] not in manifests:
            add("manifest_id", "exists", f"manifest {a['manifest_id']!r} has no Manifest row: "
                "restore it (`iteralab ingest` replays the journal)")
        for col in measured:
            value, reason = a.get(col.name), a.get(col.reason)
            if value is None and reason is None:
                add(col.name, "missing-reason", f"{col.name} is empty without a reason: a "
                    f"missing measurement says why in {col.reason}")
            elif value is not None and reason is not None:
                add(col.reason, "value-and-reason", f"{col.name} has a value and a reason for "
                    "being empty: keep one")
            elif col.kind in schemas.NEVER_ZERO_KINDS and value == 0:
                add(col.name, "zero", f"{col.name} is 0, which would stand for 'not measured': "
                    f"leave it empty and say why in {col.reason}")
        if a.get("status") == "completed" and a.get("measured_s") is None:
            add("measured_s", "completed-measured", "a completed attempt has its measured "
                "duration: fill measured_s or change status")
        if a.get("corpus_accepted") == YES:
            reasons = []
            if a.get("status") != "completed":
                reasons.append(f"status is {a.get('status')!r}")
            if a.get("ids_match") != YES:
                reasons.append("ids do not match")
            if a.get("quality_verdict") != "pass":
                reasons.append(f"quality verdict is {a.get('quality_verdict')!r}")
            if reasons:
                add("corpus_accepted", "accepted-rule", "corpus_accepted is yes but "
                    + ", ".join(reasons) + ": only a completed run with matching ids and "
                    "passing quality is accepted")
        if a.get("excluded") == YES and not a.get("exclusion_reason"):
            add("exclusion_reason", "exclusion-reason", "an excluded attempt names its "
                "documented external cause in exclusion_reason (R14)")
        items, expected = a.get("items_completed"), a.get("expected_ids")
        if isinstance(items, int) and isinstance(expected, int) and items > expected:
            add("items_completed", "bounded", f"items_completed {items} exceeds expected_ids "
                f"{expected}")
    return found


RULES = {
    "Protocol": _protocol_rules,
    "Variants": lambda data: _variants_rules(data) + money_rules.variants_rental_rules(data),
    "Attempts": _attempts_rules,
    **money_rules.RULES,
}
