"""The attempt row hash chain: what it covers, what validate reports, exclusions."""

from __future__ import annotations

import hashlib
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.builders import attempt, locked_with, save_campaign
from tests.support.paths import SAMPLES
from toolkit import layout
from toolkit.cli import cli
from toolkit.errors import UsageError
from toolkit.evidence import audit, chain, journal, predictions
from toolkit.evidence.validate import validate
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

PREDICTIONS = b'{"id":"d1","prediction":"austen","label":"austen","stratum":"short"}\n'


def four() -> WorkbookData:
    """A locked workbook with four recorded (sealed) attempts a1..a4."""
    return locked_with(*(attempt(f"a{i}", repetition=i) for i in range(1, 5)))


def checks(
    data: WorkbookData, folder: Path | None = None, records: list[dict] | None = None
) -> list[tuple]:
    found = chain.chain_findings(data, records)
    found += predictions.folder_findings(data, folder) if folder is not None else []
    return [(f.row, f.column, f.check) for f in found]


def messages(data: WorkbookData, records: list[dict] | None = None) -> list[str]:
    return [f.message for f in chain.chain_findings(data, records)]


def journal_of(data: WorkbookData) -> list[dict]:
    """Journal records as the runner writes them, one per attempt row as recorded."""
    unchained = set(chain.UNCHAINED)
    return [
        journal.record({k: v for k, v in row.items() if k not in unchained}, None)
        for row in data.tables["Attempts"]
    ]


# ---------------------------------------------------------------- what the chain covers


def test_every_attempts_column_is_chained_except_the_four_logged_ones() -> None:
    assert set(layout.ATTEMPTS.names) - set(chain.CHAINED_COLUMNS) == {
        "row_sha256",
        "pre_amendment",
        "excluded",
        "exclusion_reason",
    }
    assert {
        "predictions_path",
        "predictions_sha256",
        "protocol_sha256",
        "notes",
        "measured_s",
        "measured_s_reason",
    } <= set(chain.CHAINED_COLUMNS)


def test_seal_is_sha256_hex_and_depends_on_the_previous_row() -> None:
    row = attempt()
    first = chain.seal(None, row)
    assert len(first) == 64 and int(first, 16) >= 0
    assert chain.seal("", row) == first
    assert chain.seal(first, row) != first


def test_seal_covers_the_predictions_hash() -> None:
    row = attempt(predictions_sha256="a" * 64)
    assert chain.seal(None, row) != chain.seal(None, dict(row, predictions_sha256="b" * 64))


def test_seal_ignores_the_logged_columns() -> None:
    row = attempt()
    logged = dict(
        row, excluded="yes", exclusion_reason="power cut", pre_amendment="yes", row_sha256="f" * 64
    )
    assert chain.seal(None, logged) == chain.seal(None, row)


def test_seal_hashes_values_as_the_workbook_gives_them_back() -> None:
    """1 and 1.0 and Decimal('1'), True and 'yes', '' and None are the same cell."""
    row = attempt()
    assert chain.seal(None, dict(row, repetition=1.0)) == chain.seal(None, row)
    assert chain.seal(None, dict(row, load_s=Decimal("1.5"))) == chain.seal(None, row)
    assert chain.seal(None, dict(row, ids_match=True)) == chain.seal(None, row)
    assert chain.seal(None, dict(row, notes="  ")) == chain.seal(None, row)


def test_a_sealed_chain_verifies_after_save_and_read(tmp_path: Path) -> None:
    data = locked_with(
        attempt(
            "a1",
            measured_s=0.1 + 0.2,
            padding_efficiency=1 / 3,
            host_rss_peak_bytes=2**53 + 1,
            notes='=HYPERLINK("x")\r\n',
        )
    )
    store.save(data, tmp_path / "w.xlsx")
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    back = store.read(tmp_path / "w.xlsx")
    assert checks(back) == []
    assert validate(back, tmp_path / "w.xlsx") == []


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    numbers=st.lists(
        st.floats(allow_nan=False, allow_infinity=False, min_value=0), min_size=3, max_size=3
    ),
    note=st.text(max_size=40),
)
def test_any_numbers_and_text_verify_after_a_round_trip(
    tmp_path: Path, numbers: list[float], note: str
) -> None:
    data = locked_with(
        attempt(
            "a1", load_s=numbers[0], measured_s=numbers[1], padded_tokens=numbers[2], notes=note
        )
    )
    store.save(data, tmp_path / "w.xlsx")
    assert checks(store.read(tmp_path / "w.xlsx")) == []


def test_seal_new_rows_seals_only_the_named_attempts() -> None:
    data = locked_with(attempt("a1"))
    data.append("Attempts", attempt("typed-by-hand", repetition=2))
    data.append("Attempts", attempt("a3", repetition=3))
    assert chain.seal_new_rows(data, attempt_ids={"a3"}) == 1
    assert [r["row_sha256"] is None for r in data.tables["Attempts"]] == [False, True, False]
    assert checks(data) == [(3, "row_sha256", "sealed")]


# ---------------------------------------------------------------- what validate reports


def test_an_edited_cell_names_its_row() -> None:
    data = four()
    data.tables["Attempts"][1]["measured_s"] = 15.0
    assert messages(data) == [
        "attempt 'a2' does not follow from its cells and the row above it: this row was edited "
        "after it was recorded, or the attempt recorded before it was deleted: compare with the "
        "backup (.bak.xlsx) and the journal (.journal.jsonl) beside the workbook, and restore "
        "the row"
    ]
    assert checks(data) == [(3, "row_sha256", "chain")]


def test_with_the_journal_an_edited_cell_is_named_with_its_recorded_value() -> None:
    data = four()
    records = journal_of(data)
    data.tables["Attempts"][1]["measured_s"] = 15.0
    assert messages(data, records) == [
        "attempt 'a2': measured_s was 20.1 when recorded (journal), now 15: restore it; "
        "attempt rows change only through `iteralab exclude`"
    ]
    assert checks(data, None, records) == [(3, "measured_s", "edited")]


def test_an_edit_resealed_by_hand_is_still_found_by_the_journal() -> None:
    data = four()
    records = journal_of(data)
    data.tables["Attempts"][3]["corpus_accepted"] = "no"
    data.tables["Attempts"][3]["row_sha256"] = None
    chain.seal_new_rows(data)
    assert checks(data, None, records) == [(5, "corpus_accepted", "edited")]


def test_a_deleted_row_breaks_the_next_one_and_the_journal_names_it() -> None:
    data = four()
    records = journal_of(data)
    del data.tables["Attempts"][1]
    del data.row_numbers["Attempts"][-1]
    found = chain.chain_findings(data, records)
    assert [(f.row, f.column, f.check) for f in found] == [
        (3, "row_sha256", "chain"),
        (None, "attempt_id", "journal"),
    ]
    assert found[0].message == (
        "attempt 'a3' does not follow from its cells and the row above it: its cells match the "
        "journal, so the attempt recorded before it was deleted or moved: restore that row from "
        "a copy of the workbook"
    )
    assert found[1].message == (
        "attempt 'a2' is in the journal but not in this sheet: it was deleted, or is not "
        "ingested yet: run `iteralab ingest WORKBOOK`"
    )


def test_deleting_the_last_row_is_seen_only_through_the_journal() -> None:
    data = four()
    records = journal_of(data)
    data.tables["Attempts"].pop()
    assert checks(data) == []
    assert checks(data, None, records) == [(None, "attempt_id", "journal")]


def test_sorted_rows_say_where_each_was_recorded() -> None:
    data = four()
    rows = data.tables["Attempts"]
    rows[1], rows[2] = rows[2], rows[1]  # order now a1 a3 a2 a4
    assert messages(data) == [
        "attempt 'a3' was recorded right after attempt 'a2' (now row 4): rows were moved or "
        "sorted; restore the recorded order (undo the sort, or restore from a copy)",
        "attempt 'a2' was recorded right after attempt 'a1' (now row 2): rows were moved or "
        "sorted; restore the recorded order (undo the sort, or restore from a copy)",
        "attempt 'a4' was recorded right after attempt 'a3' (now row 3): rows were moved or "
        "sorted; restore the recorded order (undo the sort, or restore from a copy)",
    ]


def test_a_row_moved_to_the_top_was_recorded_elsewhere() -> None:
    data = four()
    rows = data.tables["Attempts"]
    rows.insert(0, rows.pop(2))  # a3 a1 a2 a4
    assert messages(data)[1] == (
        "attempt 'a1' was recorded as the first attempt: rows were moved or sorted; restore "
        "the recorded order (undo the sort, or restore from a copy)"
    )


def test_a_copied_row_is_named_as_a_copy() -> None:
    data = four()
    data.append("Attempts", dict(data.tables["Attempts"][0]))
    assert messages(data) == [
        "attempt 'a1' repeats the row_sha256 of row 2: a copied row; delete the copy"
    ]
    assert ("Attempts", 6, "attempt_id", "unique") in [
        (f.sheet, f.row, f.column, f.check) for f in validate(data)
    ]


def test_a_row_typed_by_hand_is_unsealed() -> None:
    data = four()
    data.append("Attempts", attempt("a5", repetition=5))
    assert checks(data) == [(6, "row_sha256", "sealed")]


def test_a_recorded_predictions_file_that_matches_is_fine(tmp_path: Path) -> None:
    (tmp_path / "preds").mkdir()
    (tmp_path / "preds" / "a1.jsonl").write_bytes(PREDICTIONS)
    data = locked_with(
        attempt(
            predictions_path="preds/a1.jsonl",
            predictions_sha256=hashlib.sha256(PREDICTIONS).hexdigest(),
        )
    )
    assert checks(data, tmp_path) == []


def test_a_predictions_file_edited_after_the_attempt_names_the_row(tmp_path: Path) -> None:
    (tmp_path / "preds").mkdir()
    data = locked_with(
        attempt(
            predictions_path="preds/a1.jsonl",
            predictions_sha256=hashlib.sha256(PREDICTIONS).hexdigest(),
        )
    )
    edited = PREDICTIONS.replace(b'"prediction":"austen"', b'"prediction":"bronte"')
    (tmp_path / "preds" / "a1.jsonl").write_bytes(edited)
    (finding,) = chain.chain_findings(data) + predictions.folder_findings(data, tmp_path)
    assert (finding.row, finding.column, finding.check) == (2, "predictions_sha256", "predictions")
    assert finding.message == (
        f"attempt 'a1': preds/a1.jsonl no longer matches its SHA-256 (recorded "
        f"{hashlib.sha256(PREDICTIONS).hexdigest()[:12]}..., now "
        f"{hashlib.sha256(edited).hexdigest()[:12]}...): the predictions were edited or "
        "replaced after the attempt; restore the original file"
    )


def test_a_missing_predictions_file_names_the_row(tmp_path: Path) -> None:
    data = locked_with(attempt(predictions_path="preds/a1.jsonl", predictions_sha256="0" * 64))
    (finding,) = chain.chain_findings(data) + predictions.folder_findings(data, tmp_path)
    assert (finding.row, finding.column, finding.check) == (2, "predictions_path", "predictions")
    assert finding.message == (
        f"attempt 'a1': predictions file preds/a1.jsonl is missing (looked for "
        f"{tmp_path / 'preds' / 'a1.jsonl'}): restore it from the campaign archive; without it "
        "the verdict cannot be checked"
    )


def test_an_unreadable_predictions_file_or_a_hash_without_path_names_the_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be read (permissions; root reads anything, so the read is made to
    fail) and a hash recorded without its file are findings, not crashes."""
    from toolkit.plumbing import digests

    (tmp_path / "preds").mkdir()
    (tmp_path / "preds" / "a1.jsonl").write_bytes(PREDICTIONS)

    def denied(path: object) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(digests, "file_sha256", denied)
    data = locked_with(
        attempt(predictions_path="preds/a1.jsonl", predictions_sha256="0" * 64),
        attempt("a2", repetition=2, predictions_path=None, predictions_sha256="1" * 64),
    )
    everything = chain.chain_findings(data) + predictions.folder_findings(data, tmp_path)
    found = [(f.row, f.column, f.message) for f in everything if f.check == "predictions"]
    assert found == [
        (
            2,
            "predictions_path",
            "attempt 'a1': cannot read preds/a1.jsonl (Permission denied): make it readable",
        ),
        (
            3,
            "predictions_path",
            "attempt 'a2' has a predictions_sha256 but no "
            "predictions_path: restore the path the attempt recorded",
        ),
    ]


def test_validate_reads_the_journal_beside_the_workbook(tmp_path: Path) -> None:
    path = tmp_path / "w.xlsx"
    data = four()
    for entry in journal_of(data):
        journal.append(path, entry)
    data.tables["Attempts"][2]["notes"] = "rerun, looked fine"
    save_campaign(data, path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    found = [(f.row, f.column, f.check) for f in validate(store.read(path), path)]
    assert found == [(4, "notes", "edited")]


# ---------------------------------------------------------------- logged actions


def test_exclude_sets_the_cells_logs_it_and_keeps_the_chain() -> None:
    data = four()
    assert audit.exclude(data, "a2", "provider power cut, ticket 4411") == 3
    row = data.tables["Attempts"][1]
    assert (row["excluded"], row["exclusion_reason"]) == ("yes", "provider power cut, ticket 4411")
    logged = data.tables["Audit"][-1]
    assert (logged["action"], logged["reason"]) == ("exclude", "provider power cut, ticket 4411")
    assert validate(data) == []


def test_an_exclusion_typed_by_hand_is_not_logged() -> None:
    data = four()
    data.tables["Attempts"][0].update(excluded="yes", exclusion_reason="slow")
    (finding,) = audit.action_findings(data)
    assert (finding.row, finding.column, finding.check) == (2, "excluded", "logged")
    assert finding.message == (
        "attempt 'a1' is excluded without an Audit entry: exclude it with `iteralab exclude "
        "WORKBOOK a1 --reason ...` (set excluded back to no first)"
    )


def test_an_undone_or_reworded_exclusion_is_found() -> None:
    data = four()
    audit.exclude(data, "a1", "power cut")
    audit.exclude(data, "a2", "power cut")
    data.tables["Attempts"][0]["excluded"] = "no"
    data.tables["Attempts"][1]["exclusion_reason"] = "it was slow"
    assert [(f.row, f.column, f.check) for f in audit.action_findings(data)] == [
        (2, "excluded", "logged"),
        (3, "exclusion_reason", "logged"),
    ]


def test_an_attempt_under_a_protocol_never_locked_is_found() -> None:
    data = four()
    data.tables["Attempts"][0]["protocol_sha256"] = "e" * 64
    assert [(f.row, f.column, f.check) for f in audit.action_findings(data)] == [
        (2, "protocol_sha256", "protocol-hash")
    ]


def test_pre_amendment_must_agree_with_the_protocol_hash() -> None:
    data = four()
    data.tables["Attempts"][0]["pre_amendment"] = "yes"
    (finding,) = audit.action_findings(data)
    assert finding.message == (
        "attempt 'a1' is marked pre_amendment but the protocol was "
        "never amended: set pre_amendment to no"
    )


@pytest.mark.parametrize(
    "attempt_id, reason, message",
    [
        ("a9", "power cut", "no attempt 'a9' in the Attempts sheet"),
        ("a1", "   ", "an exclusion needs its documented external cause"),
        ("a1", "x" * 2_001, "the reason is 2,001 characters; at most 2,000"),
    ],
)
def test_exclude_refuses_what_it_cannot_log(attempt_id: str, reason: str, message: str) -> None:
    data = four()
    with pytest.raises(UsageError) as err:
        audit.exclude(data, attempt_id, reason)
    assert err.value.message == message
    assert data.tables["Audit"][-1]["action"] == "lock"


def test_an_exclusion_is_never_repeated() -> None:
    data = four()
    audit.exclude(data, "a1", "power cut")
    with pytest.raises(UsageError, match=r"attempt 'a1' \(Attempts!2\) is already excluded"):
        audit.exclude(data, "a1", "again")


def test_the_exclude_command(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "w.xlsx"
    store.save(four(), path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    shutil.copytree(SAMPLES / "head", tmp_path / "head")  # the Variants' head_path
    result = runner.invoke(cli, ["exclude", str(path), "a3", "--reason", "host rebooted"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"excluded attempt a3 (Attempts!4) in {path}",
        "logged in the Audit sheet (action exclude)",
    ]
    assert runner.invoke(cli, ["validate", str(path)]).exit_code == 0


def test_the_exclude_command_json_names_the_row_and_the_cause(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "w.xlsx"
    store.save(four(), path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    result = runner.invoke(cli, ["exclude", str(path), "a2", "--reason", "host rebooted", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "format": "iteralab-exclude/1",
        "workbook": str(path),
        "attempt_id": "a2",
        "row": 3,
        "reason": "host rebooted",
        "logged_in_audit": True,
    }
    logged = store.read(path).tables["Audit"][-1]
    assert (logged["action"], logged["reason"]) == ("exclude", "host rebooted")


def test_the_exclude_command_with_an_unknown_id_changes_nothing(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "w.xlsx"
    store.save(four(), path)
    before = path.read_bytes()
    result = runner.invoke(cli, ["exclude", str(path), "zz", "--reason", "x"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: no attempt 'zz' in the Attempts sheet",
        "  what to do: use an attempt_id of the sheet (first ones: a1, a2, a3, a4)",
    ]
    assert path.read_bytes() == before


def test_a_damaged_journal_is_a_finding_and_the_chain_still_checks(tmp_path: Path) -> None:
    path = tmp_path / "w.xlsx"
    data = four()
    data.tables["Attempts"][0]["notes"] = "edited"
    save_campaign(data, path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    journal.journal_path(path).write_text("not json\n{}\n", encoding="utf-8")
    found = [(f.row, f.column, f.check) for f in validate(store.read(path), path)]
    assert found == [(None, "", "journal"), (2, "row_sha256", "chain")]
