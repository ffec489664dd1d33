"""The pandera schemas of a workbook checked in a helper process, prepared while it is read.

A command's first validation pays for pandas and pandera before a schema runs: a third
of a second to import them and a tenth for pandera's first validation, where a whole
1,000-attempt workbook reads in a sixth (benchmarks/README.md). Started before
the read, a helper process (:mod:`toolkit.plumbing.helper`) imports them and builds the
schemas on another core meanwhile; given the data as read, it checks the schemas while
this process checks everything else, and this process never imports pandas or pandera.
A process that has imported pandera already (a test, a long-lived caller) checks the
schemas itself, as does one whose helper fails: same function, same findings.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Iterable

from toolkit.findings import Finding
from toolkit.plumbing.helper import Helper, HelperFailed
from toolkit.workbook.model import WorkbookData

#: The helper's preparation (:func:`prepare_helper`).
PREPARE = "toolkit.evidence.schemas_beside:prepare_helper"
#: A helper the console script started before the command line's imports
#: (:func:`start_early`), for the command's :class:`SchemasBeside` to take.
_started_early: Helper | None = None


def start_early() -> None:
    """Start the helper now, for the :class:`SchemasBeside` this process makes next (the
    console script calls this before importing the command line: toolkit/entry.py). A
    command that ends before it makes one (a usage error) has the helper stopped at exit."""
    global _started_early
    if _started_early is None and "pandera" not in sys.modules:
        _started_early = Helper(prepare=PREPARE)
        atexit.register(_started_early.close)


class SchemasBeside:
    """A helper that prepares pandera now and checks the schemas of one workbook's data once
    :meth:`check` gives it; ``helper=None`` starts one only where this process has not
    imported pandera (then nothing would be saved). Use as a context manager: leaving it
    stops the helper."""

    def __init__(self, helper: bool | None = None) -> None:
        global _started_early
        self._helper: Helper | None = None
        if helper is not False and _started_early is not None:  # the console script's
            self._helper, _started_early = _started_early, None
        elif helper or (helper is None and "pandera" not in sys.modules):
            self._helper = Helper(prepare=PREPARE)
        self._asked: tuple[WorkbookData, tuple[str, ...]] | None = None
        self._found: dict[str, list[Finding]] | None = None

    def check(self, data: WorkbookData, sheet_names: Iterable[str]) -> None:
        """Have the helper check these sheets of ``data`` as they are now (a copy goes to it:
        what the caller changes afterwards is not seen)."""
        if self._helper is not None and self._asked is None:
            self._asked = (data, tuple(sheet_names))
            self._helper.call("toolkit.evidence.schemas:findings_by_sheet", data, self._asked[1])

    def findings(self, data: WorkbookData, sheet_names: Iterable[str]) -> dict[str, list[Finding]]:
        """The schema findings of each sheet named, by sheet: the helper's when it checked
        this ``data`` (the same object) and these sheets, else checked here."""
        names = tuple(sheet_names)
        if self._asked is not None and self._asked[0] is data and set(names) <= set(self._asked[1]):
            if self._found is None and self._helper is not None:
                with contextlib.suppress(HelperFailed):
                    self._found = self._helper.result()
            if self._found is not None:
                return {name: self._found[name] for name in names}
        return schema_findings(data, names)

    def __enter__(self) -> SchemasBeside:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._helper is not None:
            self._helper.close()


def prepare_helper() -> None:
    """The helper's preparation (:func:`toolkit.evidence.schemas.prepare`), in a process
    that only checks schemas: pandera's first validation imports hypothesis where it is
    installed (iteralab's test extras bring it), to generate example data this process never
    asks for: a twentieth of a second kept out."""
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    from toolkit.evidence import schemas

    schemas.prepare()


def schema_findings(data: WorkbookData, sheet_names: Iterable[str]) -> dict[str, list[Finding]]:
    """The schema findings of each sheet named, checked in this process."""
    # pandera (with pandas) takes a third of a second to import: only where a schema runs,
    # not in every command that imports the rules of validation.
    from toolkit.evidence import schemas

    return schemas.findings_by_sheet(data, sheet_names)
