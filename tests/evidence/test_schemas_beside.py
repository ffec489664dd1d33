"""The schemas checked in a helper process prepared while the workbook is read: the same
findings as checked here, whatever happens to the helper."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.builders import attempt, filled, locked_with
from toolkit import layout
from toolkit.evidence.schemas_beside import SchemasBeside, schema_findings
from toolkit.evidence.validate import validate
from toolkit.plumbing import helper
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a subprocess: not in `make test-fast`


def _broken() -> WorkbookData:
    """A workbook whose schemas fail on three sheets: form fields, a dropdown, a kind and a
    unique column."""
    data = locked_with(attempt("a1"), attempt("a1", repetition=2))
    data.forms["Protocol"]["repetitions"] = "five"
    data.tables["Variants"][1]["precision"] = "fp64"
    data.tables["Attempts"][0]["measured_s"] = -1.0
    data.forms["Protocol"]["threshold"] = 65
    return data


def test_the_helper_finds_what_this_process_finds() -> None:
    data = _broken()
    here = schema_findings(data, layout.SCHEMA_SHEETS)
    with SchemasBeside(helper=True) as beside:
        beside.check(data, layout.SCHEMA_SHEETS)
        found = beside.findings(data, layout.SCHEMA_SHEETS)
    assert found == here
    checks = {(f.sheet, f.column, f.check) for fs in found.values() for f in fs}
    assert {
        ("Protocol", "repetitions", "int"),
        ("Protocol", "threshold", "ratio"),
        ("Variants", "precision", "choice"),
        ("Attempts", "measured_s", layout.SECONDS),
        ("Attempts", "attempt_id", "unique"),
    } <= checks


def test_validate_with_the_helper_gives_the_findings_it_gives_without() -> None:
    data = _broken()
    with SchemasBeside(helper=True) as beside:
        beside.check(data, layout.SCHEMA_SHEETS)
        assert validate(data, schemas=beside) == validate(data)


def test_the_helper_checks_the_data_as_it_was_given() -> None:
    """A copy goes to the helper: a later change is not what it checked."""
    data = filled()
    with SchemasBeside(helper=True) as beside:
        beside.check(data, ["Protocol"])
        data.forms["Protocol"]["repetitions"] = "five"
        assert beside.findings(data, ["Protocol"]) == {"Protocol": []}


def test_other_data_or_other_sheets_are_checked_here() -> None:
    given, other = filled(), _broken()
    with SchemasBeside(helper=True) as beside:
        beside.check(given, ["Protocol"])
        assert beside.findings(other, ["Protocol"]) == schema_findings(other, ["Protocol"])
        assert beside.findings(given, ["Variants"]) == schema_findings(given, ["Variants"])
        assert beside.findings(given, ["Protocol"]) == {"Protocol": []}


def test_a_helper_that_cannot_start_leaves_the_schemas_to_this_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("toolkit.plumbing.helper.sys.executable", str(tmp_path / "no-python"))
    data = _broken()
    with SchemasBeside(helper=True) as beside:
        beside.check(data, layout.SCHEMA_SHEETS)
        assert beside.findings(data, layout.SCHEMA_SHEETS) == schema_findings(
            data, layout.SCHEMA_SHEETS
        )


def test_a_process_that_imported_pandera_starts_no_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []
    monkeypatch.setattr(helper.subprocess, "Popen", lambda *a, **k: started.append(a))
    assert "pandera" in sys.modules  # conftest imported it: a helper would save nothing
    data = _broken()
    with SchemasBeside() as beside:
        beside.check(data, ["Variants"])
        assert beside.findings(data, ["Variants"]) == schema_findings(data, ["Variants"])
    assert started == []


def test_a_helper_started_early_is_the_one_the_command_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The console script starts the helper before the command line's imports
    (toolkit/entry.py); the command's SchemasBeside takes that one and starts none."""
    from toolkit.evidence import schemas_beside

    monkeypatch.delitem(sys.modules, "pandera")  # as in the console script's process
    monkeypatch.setattr(schemas_beside, "_started_early", None)
    started = []
    monkeypatch.setattr(
        schemas_beside, "Helper", lambda **kw: started.append(kw) or helper.Helper(**kw)
    )
    schemas_beside.start_early()
    early = schemas_beside._started_early
    assert early is not None and started == [{"prepare": schemas_beside.PREPARE}]
    data = _broken()
    with SchemasBeside() as beside:
        assert schemas_beside._started_early is None  # taken, once
        beside.check(data, layout.SCHEMA_SHEETS)
        assert beside.findings(data, layout.SCHEMA_SHEETS) == schema_findings(
            data, layout.SCHEMA_SHEETS
        )
    assert len(started) == 1  # no second helper


def test_a_helper_started_early_and_never_taken_stops_at_exit() -> None:
    """A command that ends before it checks a schema (a usage error) leaves no helper."""
    code = (
        "import sys\n"
        "sys.modules.pop('pandera', None)\n"
        "from toolkit.evidence import schemas_beside\n"
        "schemas_beside.start_early()\n"
        "print(schemas_beside._started_early._process.pid)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    pid = int(done.stdout.strip())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped before the process that started it ended
