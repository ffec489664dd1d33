"""One date-time form on every Python (3.10 included), and a flat rental held past its plan.

Times: ``datetime.fromisoformat`` accepts more from Python 3.11 on (``+0100``,
``20261207T0900``, ``09:00:00.5``), so the rules read times with their own
pattern (``calcul_forfaits.TIME_FORM``): the standalone calculator run by a
Python 3.10 accepts and refuses exactly what the toolkit does.

Rentals: a plan is never extended automatically (R20): a flat rental whose
start-to-end outruns its plan is a validate finding, and the incurred part does
not present the single plan's price as what the rental cost.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from tests.support.paths import ROOT
from tests.support.report_campaign import campaign
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence.validate import sheet_findings
from toolkit.money import incurred, tariffs
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

rules = tariffs.rules
SCRIPT = ROOT / "tariffs" / "calcul_forfaits.py"
END = "2030-01-01T00:00Z"  # after every accepted start below

#: Text -> the moment read (naive text in UTC, as without --tz).
ACCEPTED = {
    "2026-12-07T09:00+01:00": "2026-12-07T09:00:00+01:00",
    "2026-12-07 09:00+01:00": "2026-12-07T09:00:00+01:00",  # what Excel and exports write
    "2026-12-07T09:00:30-05:30": "2026-12-07T09:00:30-05:30",
    "2026-12-07T09:00:00.5+01:00": "2026-12-07T09:00:00.500000+01:00",
    "2026-12-07T09:00:00.123456789Z": "2026-12-07T09:00:00.123456+00:00",
    "2026-12-07t09:00z": "2026-12-07T09:00:00+00:00",
    " 2026-12-07T09:00 ": "2026-12-07T09:00:00+00:00",
    "2026-12-07 09:00:00": "2026-12-07T09:00:00+00:00",  # str() of a datetime cell
}
#: Text -> why it is refused, or "" when it does not have the form at all.
REFUSED = {
    "2026-12-11T09:00+0100": "",  # accepted by fromisoformat from 3.11 on
    "20261207T0900": "",  # idem
    "2026-12-07T09:00+01": "",  # idem
    "2026-W50-1T09:00": "",  # idem
    "2026-12-07T09:00:00,5+01:00": "",  # idem
    "2026-12-07X09:00": "",  # fromisoformat takes any separator
    "2026-12-07": "",
    "2026-12-07T09": "",
    "2026-12-07T09:00:00.1234567890Z": "",
    "٢٠٢٦-12-07T09:00": "",  # digits, but not ASCII ones
    "next monday": "",
    "2026-13-07T09:00": "month must be in 1..12",
    "2026-12-07T24:00": "hour must be in 0..23",
    "2026-12-07T09:00+01:75": "UTC offset +01:75: hours 00-23, minutes 00-59",
}


def _message(text: str) -> str:
    """What the rules say when --start is ``text`` and it is refused."""
    reason = f" ({REFUSED[text]})" if REFUSED[text] else ""
    return f"--start {text.strip()!r} is not a date-time{reason}"


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_accepted_forms_read_the_same_moment(text: str) -> None:
    assert rules.parse_time(text, None, "--start").isoformat() == ACCEPTED[text]


@pytest.mark.parametrize("text", REFUSED)
def test_other_forms_are_refused_stating_the_accepted_one(text: str) -> None:
    with pytest.raises(rules.TariffError) as caught:
        rules.parse_time(text, None, "--start")
    assert caught.value.message == _message(text)
    assert caught.value.hint == (
        "write YYYY-MM-DDTHH:MM[:SS[.fraction]][+HH:MM or Z], e.g. "
        "2026-12-07T09:00+01:00 (a space may replace the T)"
    )


def _python310() -> str:
    """A working Python 3.10 interpreter (on PATH, or installed by pyenv), or skip."""
    pyenv = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser()
    candidates = [
        shutil.which("python3.10"),
        *map(str, sorted(pyenv.glob("versions/3.10.*/bin/python3.10"))),
    ]
    for found in filter(None, candidates):  # a pyenv shim may exist and not run
        probe = subprocess.run(
            [found, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 10)":
            return found
    pytest.skip("no working Python 3.10 (python3.10 on PATH or under pyenv)")


def test_the_standalone_calculator_on_python_3_10_reads_times_as_the_toolkit(
    tmp_path: Path,
) -> None:
    """The script alone (no package, no site-packages) under 3.10, string by string."""
    python = _python310()
    shutil.copy(SCRIPT, tmp_path)
    end = rules.parse_time(END, None, "--end")
    for text in [*ACCEPTED, *REFUSED]:
        done = subprocess.run(
            [python, "-I", "-S", "calcul_forfaits.py", "--start", text, "--end", END],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if text in ACCEPTED:
            start = rules.parse_time(text, None, "--start")
            hours = rules.hours_text(Decimal(rules.elapsed_seconds(start, end)) / 3600)
            assert done.returncode == 0, (text, done.stderr)
            assert (
                f"schedule: {rules.stamp(start)} to {rules.stamp(end)} = {hours}"
                in done.stdout.splitlines()
            ), text
        else:
            assert done.returncode == 2, (text, done.stdout)
            assert done.stderr.splitlines()[0] == f"error: {_message(text)}", text


def test_the_toolkit_reads_times_with_the_standalone_script_itself() -> None:
    """No second grammar to drift: the toolkit's rules are the shipped script's module."""
    assert Path(rules.__file__).resolve() == SCRIPT.resolve()
    assert incurred.rules is rules


@pytest.mark.parametrize("date", ["2026-W39-4", "20260924"])
def test_a_catalog_date_is_yyyy_mm_dd_on_every_python(tmp_path: Path, date: str) -> None:
    path = tmp_path / "catalog.csv"
    path.write_text(
        f"{','.join(rules.COLUMNS)}\n{date},rtx-4090,RTX 4090,1,7,110.00,x\n", encoding="utf-8"
    )
    with pytest.raises(rules.TariffError) as caught:
        rules.load_catalog(path, path.name)
    assert caught.value.message == (
        f"catalog.csv, line 2, column 1 (catalog_date): {date!r} is not a date YYYY-MM-DD"
    )


def test_a_workbook_time_outside_the_form_is_not_read_as_a_rental_time() -> None:
    """Rentals times go through the same pattern: +0100 is no time for the rental rules."""
    data = campaign()
    data.tables["Rentals"][0]["end"] = "2026-12-21T09:00+0100"
    assert incurred.rentals_of(data)[0].hours is None
    assert incurred.aware_time("2026-12-21T09:00+01:00") == dt.datetime(
        2026, 12, 21, 9, tzinfo=dt.timezone(dt.timedelta(hours=1))
    )
    assert incurred.aware_time("2026-12-21T09:00") is None  # no offset: the schema says so


# --------------------------------------------------------------------------- rental length

BEYOND = (
    "the rental spans 336 h, beyond its 7-day plan of 168 h (a plan is never extended "
    "automatically): record the extra period as its own Rentals row with its plan"
)


def _held_two_weeks() -> WorkbookData:
    data = campaign()
    data.tables["Rentals"][0]["end"] = "2026-12-21T09:00+01:00"  # r-4090, flat-7d
    return data


def test_a_rental_held_past_its_plan_is_a_finding_on_its_end() -> None:
    found = [f for f in sheet_findings(_held_two_weeks()) if f.check == "beyond-plan"]
    assert [(f.sheet, f.row, f.column, f.message) for f in found] == [
        ("Rentals", 2, "end", f"{BEYOND}, or correct end")
    ]


def test_a_rental_ending_exactly_when_its_plan_does_is_no_finding() -> None:
    data = campaign()
    assert [r.get("end") for r in data.tables["Rentals"]] == ["2026-12-14T09:00+01:00"] * 2
    assert [f for f in sheet_findings(data) if f.check == "beyond-plan"] == []


def test_a_metered_rental_has_no_plan_to_outrun() -> None:
    data = _held_two_weeks()
    data.tables["Rentals"][0].update(billing="hourly", amount=250.0)
    assert [f for f in sheet_findings(data) if f.check == "beyond-plan"] == []


def _incurred(data: WorkbookData) -> dict[str, dict[str, object]]:
    catalog = tariffs.catalog_from_workbook(data)
    rows = [
        incurred.rental_row(r, catalog, data.tables["Variants"], 2 + i)
        for i, r in enumerate(incurred.rentals_of(data))
    ]
    rows += incurred.total_rows(rows, 2)
    return {str(r["item"]): r for r in rows}


def _value(cell: object) -> object:
    return getattr(cell, "value", cell)


def test_the_incurred_part_never_prices_an_outrun_rental_as_one_plan() -> None:
    rows = _incurred(_held_two_weeks())
    assert rows["r-4090"]["amount"] is None
    assert rows["r-4090"]["price_per_lot"] is None
    grounds = str(rows["r-4090"]["grounds"])
    assert "; Tariffs: 7-day plan of 2026-09-24 x 1 lot(s) (" in grounds
    assert grounds.endswith(
        f" = 110.00 USD prices the plan only: {BEYOND}, or type the amount "
        "charged in Rentals.amount"
    )
    total = rows["total incurred (USD)"]
    assert _value(total["amount"]) == incurred.INCOMPLETE
    assert "no amount yet for r-4090" in str(total["grounds"])


def test_a_typed_amount_of_an_outrun_rental_stays_and_says_so() -> None:
    data = _held_two_weeks()
    data.tables["Rentals"][0]["amount"] = 220.0
    row = _incurred(data)["r-4090"]
    assert _value(row["amount"]) == Decimal("220.0")
    assert f"amount from Rentals (order confirmation ORD-1001); {BEYOND}" in str(row["grounds"])


def test_validate_names_the_outrun_rental_of_the_sample_and_changes_nothing(tmp_path: Path) -> None:
    """The example workbook, its 7-day rental held 14 days, through the real CLI."""
    for name in ("example_campaign.xlsx", "corpus.jsonl", "calibration.jsonl"):
        shutil.copy(ROOT / "samples" / name, tmp_path / name)
    for folder in ("head", "austen_tfidf"):  # the models its variants name
        shutil.copytree(ROOT / "samples" / folder, tmp_path / folder)
    path = tmp_path / "example_campaign.xlsx"
    book = openpyxl.load_workbook(path)
    sheet = book[layout.RENTALS.name]
    # The sample's example rental carries no dates (its demo runs whenever it is started).
    sheet[f"{layout.column_letter(layout.RENTALS, 'start')}2"] = "2026-12-07T09:00+01:00"
    sheet[f"{layout.column_letter(layout.RENTALS, 'end')}2"] = "2026-12-21T09:00+01:00"
    book.save(path)
    before = path.read_bytes()
    result = CliRunner().invoke(cli, ["validate", "--json", str(path)])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["findings"] == [
        {
            "sheet": "Rentals",
            "row": 2,
            "column": "end",
            "check": "beyond-plan",
            "message": f"{BEYOND}, or correct end",
        }
    ]
    assert path.read_bytes() == before
