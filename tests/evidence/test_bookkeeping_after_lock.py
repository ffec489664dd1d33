"""The lock covers what changes the measurement, not the bookkeeping around it (issue 38,
item 2): a rental linked late, a note and a scenario typo after the results are logged in
Audit and named by validate, and void no attempt; a changed batch size is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.report_campaign import RENTALS
from toolkit import layout
from toolkit.cli import cli
from toolkit.errors import ProtocolError
from toolkit.evidence import protocol
from toolkit.evidence.validate import validate
from toolkit.workbook import store


def _edit_bookkeeping(book: Path) -> None:
    data = store.read(book)
    data.append(
        "Rentals",
        {
            **RENTALS[0],
            "rental_id": "r-4090-2",
            "reference": "ORD-1003",
            "source": "order confirmation ORD-1003",
        },
    )
    variants = {v["variant_id"]: v for v in data.tables["Variants"]}
    variants["b8-bf16"]["rental_id"] = "r-4090-2"  # linked after the runs
    variants["b1-fp32"]["notes"] = "the reference; rerun once after a host reboot"
    data.forms["Protocol"]["scenario"] = str(data.forms["Protocol"]["scenario"]).replace(
        "offline", "Offline"
    )  # a typo fixed
    store.save(data, book)


def test_bookkeeping_edits_after_results_are_named_then_logged_without_voiding_attempts(
    reported: Path, runner: CliRunner
) -> None:
    before = store.read(book := reported)
    medians = {r["variant_id"]: r["median_s"] for r in before.tables["Summary"]}
    _edit_bookkeeping(book)

    named = [
        (f.sheet, f.column, f.check)
        for f in validate(store.read(book), book)
        if f.check == "bookkeeping-edit"
    ]
    assert sorted(named) == [
        ("Protocol", "scenario", "bookkeeping-edit"),
        ("Variants", "notes", "bookkeeping-edit"),
        ("Variants", "rental_id", "bookkeeping-edit"),
    ]
    assert not [f for f in validate(store.read(book), book) if f.check == "locked"]

    result = runner.invoke(cli, ["report", str(book), "--no-png"])
    assert result.exit_code == 0, result.output
    data = store.read(book)
    assert {a["pre_amendment"] for a in data.tables["Attempts"]} == {layout.NO}
    assert {r["variant_id"]: r["median_s"] for r in data.tables["Summary"]} == medians
    (logged,) = [r for r in data.tables["Audit"] if r["action"] == "bookkeeping"]
    assert logged["reason"].startswith("bookkeeping edited after the lock: ")
    assert "Variants b8-bf16 rental_id: 'r-4090' -> 'r-4090-2'" in logged["reason"]
    assert "Variants b1-fp32 notes: " in logged["reason"]
    assert "Protocol scenario: 'offline classification" in logged["reason"]
    assert [f for f in validate(data, book) if f.check == "bookkeeping-edit"] == []
    lock = protocol.current_lock(data)
    assert lock is not None and protocol.require_lock(data, book) == lock.sha256

    again = runner.invoke(cli, ["report", str(book), "--no-png"])  # logged once
    assert again.exit_code == 0, again.output
    assert [r["action"] for r in store.read(book).tables["Audit"]].count("bookkeeping") == 1


def test_a_changed_batch_size_after_the_lock_is_still_refused(
    reported: Path, runner: CliRunner
) -> None:
    data = store.read(reported)
    data.tables["Variants"][1]["batch_size"] = 6
    store.save(data, reported)
    with pytest.raises(ProtocolError, match="batch_size changed after the lock"):
        protocol.require_lock(store.read(reported), reported)
    result = runner.invoke(cli, ["report", str(reported), "--no-png"])
    assert result.exit_code == 1
    assert "batch_size changed after the lock (4 -> 6)" in result.stderr


def test_amend_with_only_bookkeeping_edits_says_none_is_needed(
    reported: Path, runner: CliRunner
) -> None:
    _edit_bookkeeping(reported)
    result = runner.invoke(cli, ["amend", str(reported), "--reason", "link the rental"])
    assert result.exit_code == 1
    assert "nothing to amend" in result.stderr
    assert "needs no amendment: `iteralab report` logs it in Audit" in result.stderr
    assert {a["pre_amendment"] for a in store.read(reported).tables["Attempts"]} == {layout.NO}
