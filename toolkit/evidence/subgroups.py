"""Predeclared subgroups and length strata of the Protocol (R1, R5, R16). Stdlib only.

``subgroups`` names corpus fields (``label``, or any field every record holds,
e.g. ``genre``) and ``stratum``, the length stratum cut by ``stratum_bounds``.
Validation reads both fields, and, given the workbook's path, the corpus, so
that a declared field some record lacks is named with its line before any
timing rather than discovered by the runner.
"""

from __future__ import annotations

from pathlib import Path

from toolkit import layout
from toolkit.errors import CorpusError, ProtocolError
from toolkit.evidence import corpus
from toolkit.findings import Finding
from toolkit.workbook.model import WorkbookData


def _row(name: str) -> int:
    return layout.PROTOCOL.names.index(name) + 2


def _problem(name: str, check: str, exc: ProtocolError) -> Finding:
    return Finding(
        "Protocol",
        _row(name),
        name,
        check,
        f"{exc.message}: {exc.hint}" if exc.hint else exc.message,
    )


def protocol_findings(data: WorkbookData) -> list[Finding]:
    """A finding for ``stratum_bounds`` that are not ascending token counts, and for a
    subgroup no input can be grouped by."""
    form = data.forms["Protocol"]
    found = []
    try:
        corpus.parse_stratum_bounds(form.get("stratum_bounds"))
    except ProtocolError as exc:
        found.append(_problem("stratum_bounds", "stratum-bounds", exc))
    value = form.get("subgroups")
    if value is not None:  # a blank required field is the schema's finding
        try:
            corpus.parse_subgroups(value)
        except ProtocolError as exc:
            found.append(_problem("subgroups", "subgroups", exc))
    return found


def field_findings(data: WorkbookData, workbook: str | Path) -> list[Finding]:
    """A finding per declared subgroup field that some record of the corpus lacks, naming
    the field, the first such line and how many more (nothing when the corpus does not
    read: the corpus findings name that)."""
    form = data.forms["Protocol"]
    path = form.get("corpus_path")
    try:
        names = corpus.parse_subgroups(form.get("subgroups"))
    except ProtocolError:
        return []  # protocol_findings names it
    if not isinstance(path, str) or not path.strip() or names in ((), (corpus.STRATUM,)):
        return []
    file = Path(workbook).parent / path.strip()
    if not file.is_file():
        return []
    try:
        items = corpus.read_corpus(file)
    except CorpusError:
        return []
    return [
        Finding(
            "Protocol",
            _row("subgroups"),
            "subgroups",
            "subgroup-field",
            (
                f"subgroups names {m.name!r}, but the corpus {m.text(path.strip())}: give every "
                f"record its {m.name!r}, or remove {m.name!r} from subgroups"
            ),
        )
        for m in corpus.missing_fields(items, names)
    ]
