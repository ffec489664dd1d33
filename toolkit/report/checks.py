"""The report's integrity checks, run beside the refresh and the save.

``iteralab report`` validates the workbook as read (what ``iteralab validate``
checks) and lists every predictions file checked against its SHA-256. The
attempt chain, the journal and the predictions files do not depend on the
refresh and the save, and on a large campaign they are seconds of work; so the
predictions files are hashed from the moment the command starts
(:func:`toolkit.evidence.predictions.early_digests`), the chain and journal are
checked in a helper process (:mod:`toolkit.plumbing.helper`) while this one
refreshes and saves (:class:`toolkit.evidence.integrity.RecordChecks`), and so are the
schemas, in a helper that imported pandas and pandera while the workbook was read
(:class:`toolkit.evidence.schemas_beside.SchemasBeside`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolkit.evidence import integrity
from toolkit.evidence.schemas_beside import SchemasBeside
from toolkit.evidence.validate import sheet_findings, sorted_findings
from toolkit.planner.identity import gpu_findings
from toolkit.plumbing.digests import Digests
from toolkit.workbook.model import WorkbookData


class ChecksBeside:
    """The report's checks of ``data`` (as read from ``workbook``, and left so: the caller
    refreshes a copy), started now.

    ``digests`` is hashing the predictions files already, and ``schemas`` preparing
    pandera. The attempt chain and journal go to a helper process when there are enough
    attempts, the schemas of ``sheets`` to ``schemas``' helper. :meth:`result` adds the
    rules of those sheets and the predictions files, checked in this process, and waits for
    the rest. Use as a context manager: leaving it early stops the helper.
    """

    def __init__(
        self,
        data: WorkbookData,
        workbook: Path,
        sheets: Sequence[str],
        digests: Digests,
        schemas: SchemasBeside,
    ) -> None:
        self._data, self._workbook, self._digests = data, workbook, digests
        self._sheets, self._schemas = sheets, schemas
        schemas.check(data, sheets)
        self._records = integrity.RecordChecks(data, workbook)

    def result(self) -> integrity.Integrity:
        """Every finding (sorted as validate sorts them) and every predictions check."""
        data = self._data
        files = integrity.files_checks(data, self._workbook, self._digests)
        found = sheet_findings(data, self._sheets, self._schemas) + gpu_findings(data)
        return integrity.Integrity(
            sorted_findings(found + self._records.result() + files.findings), files.predictions
        )

    def __enter__(self) -> ChecksBeside:
        return self

    def __exit__(self, *exc: object) -> None:
        self._records.__exit__(*exc)
