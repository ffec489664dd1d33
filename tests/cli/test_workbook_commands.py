"""The workbook commands: exit codes and messages (click's CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.workbook import store


def test_init_creates_a_workbook_and_never_overwrites(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "c.xlsx"
    first = runner.invoke(cli, ["init", str(path)])
    assert first.exit_code == 0
    assert first.stdout.splitlines()[0] == (
        f"created {path} (Tariffs: the shipped catalog of 2026-09-24, 2 plan(s); 12 metered "
        "price(s) of 2026-12-05, EXAMPLE figures)"
    )
    tariffs = store.read(path).tables["Tariffs"]
    assert [(t["gpu_slug"], t["plan_days"], t["price_per_lot_usd"]) for t in tariffs[:2]] == [
        ("rtx-4090", 7, 110),
        ("b200", 7, 2071),
    ]
    # The metered rows: a price per hour and a billing step, no plan, no price per lot.
    assert [(t["plan_days"], t["price_per_lot_usd"]) for t in tariffs[2:]] == [(None, None)] * 12
    assert all(t["price_per_hour"] and t["billing_seconds"] for t in tariffs[2:])
    before = path.read_bytes()
    again = runner.invoke(cli, ["init", str(path)])
    assert again.exit_code == 2
    assert f"error: {path} already exists: not overwritten" in again.stderr
    assert path.read_bytes() == before


def test_init_refuses_a_name_without_xlsx(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["init", str(tmp_path / "c.xls")])
    assert result.exit_code == 2
    assert "a campaign workbook ends in .xlsx" in result.stderr


def test_validate_a_fresh_template_lists_findings_and_exits_1(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "c.xlsx"
    runner.invoke(cli, ["init", str(path)])
    result = runner.invoke(cli, ["validate", str(path)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["sheet", "row", "column", "check", "message"]
    assert lines[1].split()[:4] == ["Protocol", "2", "scenario", "required"]
    assert lines[-1] == f"21 finding(s) in 2 sheet(s): {path} is not valid"


def test_validate_json(runner: CliRunner, filled_workbook: Path) -> None:
    result = runner.invoke(cli, ["validate", "--json", str(filled_workbook)])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "format": "iteralab-validate/1",
        "workbook": str(filled_workbook),
        "valid": True,
        "findings": [],
        "notes": [],
        "warnings": [],
    }


def test_validate_a_valid_workbook_exits_0(runner: CliRunner, filled_workbook: Path) -> None:
    result = runner.invoke(cli, ["validate", str(filled_workbook)])
    assert result.exit_code == 0
    assert result.stdout == f"{filled_workbook}: valid (3 variants, 0 attempts, no findings)\n"


def test_usage_errors_exit_2(runner: CliRunner) -> None:
    assert runner.invoke(cli, ["validate"]).exit_code == 2
    assert runner.invoke(cli, ["nonsense"]).exit_code == 2


def test_a_missing_or_corrupt_workbook_is_a_clear_error(runner: CliRunner, tmp_path: Path) -> None:
    missing = runner.invoke(cli, ["validate", str(tmp_path / "none.xlsx")])
    assert missing.exit_code == 1
    assert "no such workbook" in missing.stderr
    bad = tmp_path / "bad.xlsx"
    bad.write_text("not a zip")
    corrupt = runner.invoke(cli, ["validate", str(bad)])
    assert corrupt.exit_code == 1
    assert f"error: {bad}: not a readable .xlsx workbook" in corrupt.stderr


def test_lock_then_edit_then_validate_then_amend(runner: CliRunner, filled_workbook: Path) -> None:
    locked = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert locked.exit_code == 0
    assert locked.stdout.startswith(f"locked {filled_workbook}: protocol sha256 ")

    data = store.read(filled_workbook)
    data.forms["Protocol"]["tolerance"] = 0.02
    store.save(data, filled_workbook)
    invalid = runner.invoke(cli, ["validate", str(filled_workbook)])
    assert invalid.exit_code == 1
    assert "tolerance changed after the lock (0.01 -> 0.02)" in invalid.stdout

    amended = runner.invoke(cli, ["amend", str(filled_workbook), "--reason", "agreed with QA"])
    assert amended.exit_code == 0
    assert amended.stdout.splitlines()[1:] == [
        "  changed Protocol!8 tolerance",
        "0 earlier attempt(s) marked pre_amendment = yes",
    ]
    assert runner.invoke(cli, ["validate", str(filled_workbook)]).exit_code == 0


def test_lock_an_incomplete_workbook_exits_1_and_leaves_it_untouched(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "c.xlsx"
    runner.invoke(cli, ["init", str(path)])
    before = path.read_bytes()
    result = runner.invoke(cli, ["lock", str(path)])
    assert result.exit_code == 1
    assert "cannot lock" in result.stderr
    assert path.read_bytes() == before


def test_amend_requires_a_reason_option(runner: CliRunner, filled_workbook: Path) -> None:
    result = runner.invoke(cli, ["amend", str(filled_workbook)])
    assert result.exit_code == 2
    assert "Missing option '--reason'" in result.stderr


def test_open_in_office_is_detected(runner: CliRunner, filled_workbook: Path) -> None:
    """A LibreOffice lock file next to the workbook stops writers with a clear message."""
    office_lock = filled_workbook.with_name(f".~lock.{filled_workbook.name}#")
    office_lock.write_text("someone")
    result = runner.invoke(cli, ["lock", str(filled_workbook)])
    assert result.exit_code == 1
    assert "open in Excel or LibreOffice" in result.stderr


def test_lock_and_amend_json_hold_what_the_text_says(
    runner: CliRunner, filled_workbook: Path
) -> None:
    locked = runner.invoke(cli, ["lock", str(filled_workbook), "--json"])
    assert locked.exit_code == 0, locked.output
    document = json.loads(locked.stdout)
    sha = document.pop("protocol_sha256")
    assert len(sha) == 64 and document == {
        "format": "iteralab-lock/1",
        "workbook": str(filled_workbook),
        "logged_in_audit": None,
        "warnings": [],
    }
    assert store.read(filled_workbook).tables["Audit"][-1]["protocol_sha256"] == sha

    data = store.read(filled_workbook)
    data.forms["Protocol"]["tolerance"] = 0.02
    store.save(data, filled_workbook)
    amended = runner.invoke(
        cli, ["amend", str(filled_workbook), "--reason", "agreed with QA", "--json"]
    )
    assert amended.exit_code == 0, amended.output
    document = json.loads(amended.stdout)
    assert document["format"] == "iteralab-amend/1"
    assert document["protocol_sha256"] not in (sha, None)
    assert [(c["sheet"], c["row"], c["column"]) for c in document["changed"]] == [
        ("Protocol", 8, "tolerance")
    ]
    assert document["pre_amendment_marked"] == 0
    assert document["logged_in_audit"] == store.read(filled_workbook).tables["Audit"][-1]["reason"]


def test_init_json_names_the_workbook_and_its_tariffs(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "c.xlsx"
    result = runner.invoke(cli, ["init", str(path), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document == {
        "format": "iteralab-init/1",
        "workbook": str(path),
        "tariff_snapshots": ["2026-09-24"],
        "tariff_plans": 2,
        "tariff_metered": 12,
        "next": document["next"],
    }
    assert f"`iteralab lock {path}`" in document["next"]
    assert len(store.read(path).tables["Tariffs"]) == 14
