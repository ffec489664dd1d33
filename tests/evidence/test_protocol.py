"""Protocol lock, verification and amendment (R1-R2, R8)."""

from __future__ import annotations

import pytest

from tests.support.builders import attempt, filled, variant
from toolkit.errors import ProtocolError, UsageError
from toolkit.evidence import locking, protocol
from toolkit.evidence.validate import validate
from toolkit.workbook.model import WorkbookData


def test_lock_refuses_an_incomplete_protocol() -> None:
    data = WorkbookData.empty()
    with pytest.raises(ProtocolError) as err:
        locking.lock(data)
    assert "cannot lock: Protocol/Variants have 21 finding(s)" in str(err.value)
    assert data.tables["Audit"] == []


def test_lock_records_hash_time_version_and_snapshot() -> None:
    data = filled()
    sha = locking.lock(data)
    (row,) = data.tables["Audit"]
    assert (row["action"], row["protocol_sha256"], row["tool_version"]) == ("lock", sha, "0.1.0")
    assert sha == protocol.content_hash(protocol.snapshot(data))
    assert protocol.require_lock(data, "w.xlsx") == sha


def test_lock_twice_is_refused() -> None:
    data = filled()
    locking.lock(data)
    with pytest.raises(ProtocolError, match="already locked"):
        locking.lock(data)


def test_the_hash_ignores_int_versus_float_cells() -> None:
    """Excel may hand back 5.0 for 5: the lock must not see a change."""
    data = filled()
    sha = locking.lock(data)
    data.forms["Protocol"]["repetitions"] = 5.0
    assert protocol.require_lock(data, "w.xlsx") == sha


def test_an_edit_after_the_lock_names_the_field() -> None:
    data = filled()
    locking.lock(data)
    data.forms["Protocol"]["threshold"] = 0.55
    (finding,) = [f for f in validate(data) if f.check == "locked"]
    assert (finding.sheet, finding.row, finding.column) == ("Protocol", 7, "threshold")
    assert "0.6 -> 0.55" in finding.message
    with pytest.raises(ProtocolError, match="changed after its lock"):
        protocol.require_lock(data, "w.xlsx")


def test_variant_edits_additions_and_removals_after_the_lock() -> None:
    data = filled()
    locking.lock(data)
    data.tables["Variants"][1]["batch_size"] = 16
    del data.tables["Variants"][2]
    data.append("Variants", variant("b2-fp32", 2))
    found = {
        (f.sheet, f.column, f.message.split(":")[0]) for f in validate(data) if f.check == "locked"
    }
    assert found == {
        ("Variants", "batch_size", "variant 'b4-fp32'"),
        ("Variants", "variant_id", "variant 'b8-fp32' was removed after the lock"),
        ("Variants", "variant_id", "variant 'b2-fp32' was added after the lock"),
    }


def test_require_lock_refuses_an_unlocked_workbook() -> None:
    with pytest.raises(ProtocolError, match="not locked"):
        protocol.require_lock(filled(), "w.xlsx")


def test_amend_logs_the_reason_and_marks_earlier_attempts() -> None:
    data = filled()
    locking.lock(data)
    data.append("Attempts", attempt("a1"))
    data.append("Attempts", attempt("a2", repetition=2))
    data.forms["Protocol"]["threshold"] = 0.62
    sha, changed, marked = locking.amend(data, "threshold raised by the business owner")
    assert [(f.sheet, f.column) for f in changed] == [("Protocol", "threshold")]
    assert marked == 2
    assert [a["pre_amendment"] for a in data.tables["Attempts"]] == ["yes", "yes"]
    last = data.tables["Audit"][-1]
    assert (last["action"], last["reason"]) == ("amend", "threshold raised by the business owner")
    assert protocol.require_lock(data, "w.xlsx") == sha
    assert [f for f in validate(data) if f.check == "locked"] == []


def test_amend_needs_a_reason_a_lock_and_a_change() -> None:
    data = filled()
    with pytest.raises(UsageError):
        locking.amend(data, "  ")
    with pytest.raises(ProtocolError, match="not locked"):
        locking.amend(data, "why")
    locking.lock(data)
    with pytest.raises(ProtocolError, match="unchanged since the lock"):
        locking.amend(data, "why")


def test_editing_the_audit_hash_is_detected() -> None:
    data = filled()
    locking.lock(data)
    data.tables["Audit"][0]["protocol_sha256"] = "0" * 64
    (finding,) = [f for f in validate(data) if f.check == "locked"]
    assert finding.sheet == "Audit"
