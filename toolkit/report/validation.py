"""What `iteralab validate` finds in a workbook: every sheet's findings, the GPU identities,
the typed-over computed cells and the model paths, sorted; the note on Attempts rows that
record no layout; the protocol's warnings.

The predictions files are hashed beside the read (:func:`toolkit.evidence.predictions.early_digests`),
pandera is prepared beside the read and checks the schemas beside the rest
(:class:`toolkit.evidence.schemas_beside.SchemasBeside`), and on a large campaign the attempt
chain and journal are checked beside the rest too
(:class:`toolkit.evidence.integrity.RecordChecks`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from toolkit import layout
from toolkit.evidence.corpus import read_once
from toolkit.evidence.integrity import RecordChecks
from toolkit.evidence.measured_cells import inferred_note
from toolkit.evidence.predictions import early_digests
from toolkit.evidence.schemas_beside import SchemasBeside
from toolkit.evidence.validate import sorted_findings, validate
from toolkit.findings import Finding
from toolkit.planner.identity import gpu_findings
from toolkit.planner.model_paths import model_path_findings
from toolkit.report.protocol_warnings import protocol_notes, protocol_warnings
from toolkit.report.typed_over import typed_over_findings
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData


@dataclass(frozen=True, kw_only=True)
class Validation:
    """A workbook as read and what is wrong with it (no findings: valid)."""

    data: WorkbookData
    findings: list[Finding]
    #: Why some Attempts rows are judged by the layout their cells show; None when none is.
    inferred: str | None
    #: What the valid protocol cannot answer (not findings).
    warnings: list[str]
    #: What the protocol declares it cannot answer (the quick demo's repetitions): notes.
    notes: list[str]

    @property
    def valid(self) -> bool:
        """No finding."""
        return not self.findings


def validate_workbook(workbook: Path, schemas: SchemasBeside | None = None) -> Validation:
    """Read ``workbook`` and check every sheet of it. ``schemas``: a helper preparing
    pandera already (a command starts it before its own imports); one starts here if not."""
    with contextlib.ExitStack() as stack:
        digests = stack.enter_context(early_digests(workbook))  # hashing beside the read
        if schemas is None:  # pandera's imports beside the read
            schemas = stack.enter_context(SchemasBeside())
        stack.enter_context(read_once())
        data = store.read(workbook)
        schemas.check(data, layout.SCHEMA_SHEETS)
        with RecordChecks(data, workbook) as records:  # the chain beside what follows
            findings = sorted_findings(
                gpu_findings(data)
                + typed_over_findings(data, workbook.parent)
                + model_path_findings(data, workbook.parent)
                + validate(data, workbook, digests, records, schemas)
            )
        return Validation(
            data=data,
            findings=findings,
            inferred=inferred_note(data),
            warnings=protocol_warnings(data, workbook),
            notes=protocol_notes(data, workbook),
        )
