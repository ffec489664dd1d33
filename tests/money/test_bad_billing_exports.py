"""A hostile billing export (#39, High 3 and Medium money): more charges than the Ledger sheet
holds, two providers' bills under one file name, dates that name no day, amounts finer than
a cent (toolkit.money.ledger, `iteralab ledger import`)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support import report_campaign
from toolkit.cli import cli
from toolkit.money import ledger
from toolkit.money.ledger import Booked, LedgerError, read_ledger, reconcile
from toolkit.workbook import store

HEADER = "date,description,reference,amount,currency\n"


def _import(book: Path, export: Path) -> object:
    return CliRunner().invoke(cli, ["ledger", "import", str(book), str(export)])


def test_more_charges_than_the_sheet_holds_are_refused_not_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sheet's limit (1,048,575 lines) lowered to 3, so the file stays small."""
    monkeypatch.setattr(ledger, "MAX_LEDGER_LINES", 3)
    export = tmp_path / "billing.csv"
    export.write_text(
        HEADER
        + "".join(f"2026-12-07,GPU,ORD-{n},1.00,USD\n" for n in range(4))
        + "2026-12-08,GPU,ORD-999,999.00,USD\n",
        encoding="utf-8",
    )
    with pytest.raises(LedgerError) as err:
        read_ledger(export)
    assert err.value.message == (
        f"{export}: line 5: more than 3 charges, the most the Ledger sheet holds (an Excel "
        "sheet has 1,048,576 rows); nothing was imported"
    )


def test_charges_beside_those_kept_past_the_limit_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    first = tmp_path / "a.csv"
    first.write_text(
        HEADER + "2026-12-07,GPU,ORD-1,1.00,USD\n2026-12-07,GPU,ORD-2,1.00,USD\n", encoding="utf-8"
    )
    assert _import(book, first).exit_code == 0
    monkeypatch.setattr(ledger, "MAX_LEDGER_LINES", 3)
    second = tmp_path / "b.csv"
    second.write_text(
        HEADER + "2026-12-08,GPU,ORD-3,1.00,USD\n2026-12-08,GPU,ORD-4,1.00,USD\n", encoding="utf-8"
    )
    before = book.read_bytes()
    result = _import(book, second)
    # a refused input, exit 2 (docs/reference/exit-codes.md), as every bad billing export
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {second}: 2 charge(s) beside the 2 already in the Ledger sheet make more than "
        "the 3 it holds; nothing was imported"
    )
    assert book.read_bytes() == before


def test_two_providers_bills_under_one_file_name_coexist(tmp_path: Path) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    for provider, reference in (("provider-a", "ORD-1001"), ("provider-b", "ORD-1002")):
        (tmp_path / provider).mkdir()
        (tmp_path / provider / "billing.csv").write_text(
            HEADER + f"2026-12-07,lot,{reference},110.00,USD\n", encoding="utf-8"
        )
        assert _import(book, tmp_path / provider / "billing.csv").exit_code == 0
    rows = store.read(book).tables["Ledger"]
    assert [(r["reference"], r["source"]) for r in rows] == [
        ("ORD-1001", "provider-a/billing.csv:2"),
        ("ORD-1002", "provider-b/billing.csv:2"),
    ]
    # The same file imported again replaces its own lines only.
    (tmp_path / "provider-b" / "billing.csv").write_text(
        HEADER + "2026-12-07,lot,ORD-1002,120.00,USD\n", encoding="utf-8"
    )
    result = _import(book, tmp_path / "provider-b" / "billing.csv")
    assert "(Ledger sheet, 1 earlier line(s) kept)" in result.stdout
    assert [r["amount"] for r in store.read(book).tables["Ledger"]] == [110, 120]


@pytest.mark.parametrize("date", ["31/02/2026", "not a date", "2026-02-31", "2026-13-01"])
def test_a_date_that_names_no_day_is_refused_with_line_and_column(
    tmp_path: Path, date: str
) -> None:
    export = tmp_path / "billing.csv"
    export.write_text(
        "Date,description,reference,amount,currency\n"
        "2026-12-07,lot,ORD-1,1.00,USD\n"
        f"{date},lot,ORD-2,1.00,USD\n",
        encoding="utf-8",
    )
    with pytest.raises(LedgerError) as err:
        read_ledger(export, {"date": "Date"})
    assert err.value.message == f"{export}: line 3, column 'Date': {date!r} is not a date"


def test_iso_dates_and_times_are_kept_as_written(tmp_path: Path) -> None:
    export = tmp_path / "billing.csv"
    export.write_text(
        HEADER + "2026-12-07,lot,ORD-1,1.00,USD\n2026-12-07T09:30Z,lot,ORD-2,1.00,USD\n",
        encoding="utf-8",
    )
    assert [r["date"] for r in read_ledger(export)] == ["2026-12-07", "2026-12-07T09:30Z"]


def _timed(tmp_path: Path, *dates: str) -> Path:
    export = tmp_path / "billing.csv"
    export.write_text(
        HEADER + "".join(f"{d},lot,ORD-{n},1.00,USD\n" for n, d in enumerate(dates)),
        encoding="utf-8",
    )
    return export


def test_a_local_time_without_the_exports_zone_is_refused_with_line_and_column(
    tmp_path: Path,
) -> None:
    """2026-03-29T02:30 does not exist in Paris, 01:30 does; neither names a moment until the
    export's zone is known: it imported cleanly, as written."""
    export = _timed(tmp_path, "2026-03-29T09:30Z", "2026-03-29T02:30")
    with pytest.raises(LedgerError) as err:
        read_ledger(export)
    assert str(err.value) == (
        f"{export}: line 3, column 'date': 2026-03-29T02:30 has a time of day but no UTC offset: "
        "the moment it names depends on the export's time zone (and around a daylight-saving "
        "change may not exist or happen twice)\n"
        "  what to do: name the export's time zone: --tz Europe/Paris (or an offset such as "
        "+01:00), or export the times with their offset (2026-12-07T09:30+01:00) or in UTC "
        "(2026-12-07T08:30Z)"
    )


@pytest.mark.parametrize(
    ("local", "what"),
    [
        ("2026-03-29T02:30", "does not exist in Europe/Paris (clocks go forward)"),
        ("2026-10-25 02:30", "happens twice in Europe/Paris (clocks go back)"),
    ],
)
def test_a_local_time_a_daylight_saving_change_skips_or_repeats_is_refused(
    tmp_path: Path, local: str, what: str
) -> None:
    book = report_campaign.write(tmp_path / "campaign.xlsx")
    before = book.read_bytes()
    export = _timed(tmp_path, "2026-03-29T01:30", local)
    result = CliRunner().invoke(
        cli, ["ledger", "import", str(book), str(export), "--tz", "Europe/Paris"]
    )
    assert result.exit_code == 2
    assert (
        result.stderr.splitlines()[0] == f"error: {export}: line 3, column 'date': {local} {what}"
    )
    assert book.read_bytes() == before


def test_a_local_time_in_the_named_zone_is_kept_with_its_offset(tmp_path: Path) -> None:
    export = _timed(
        tmp_path, "2026-03-29T01:30", "2026-03-29 03:30", "2026-03-30", "2026-03-29T02:30Z"
    )
    zone = ledger.rules.parse_zone("Europe/Paris")
    assert [r["date"] for r in read_ledger(export, zone=zone)] == [
        "2026-03-29T01:30+01:00",
        "2026-03-29 03:30+02:00",
        "2026-03-30",
        "2026-03-29T02:30Z",
    ]


def test_an_amount_finer_than_a_cent_is_shown_exactly() -> None:
    """It read 'ledger 35.00, workbook 35.00 (differs)'."""
    status, _ = reconcile(
        [Booked("r1", "ORD-1", Decimal("35.00"), "USD")],
        [{"reference": "ORD-1", "amount": Decimal("35.004"), "currency": "USD"}],
    )
    assert status == {"r1": "amount differs: ledger 35.004 USD, workbook 35.00 USD"}


def test_a_line_with_more_values_than_the_header_is_refused_not_cut(tmp_path: Path) -> None:
    """An unquoted comma in a description shifted the amount: the extra value was dropped and
    the line imported with the wrong columns."""
    export = tmp_path / "billing.csv"
    export.write_text(
        HEADER + "2026-12-07,lot,ORD-1,1.00,USD\n2026-12-08,GPU, 4090,ORD-2,1.00,USD\n",
        encoding="utf-8",
    )
    with pytest.raises(LedgerError) as err:
        read_ledger(export)
    assert err.value.message == (
        f"{export}: line 3: 1 value(s) more than the header's 5 column(s) ('USD'): a value "
        "holding a comma without quotes shifts the values after it, so this line's amount and "
        "date cannot be trusted; nothing was imported"
    )
    assert (
        err.value.hint == 'quote each value holding a comma ("GPU, 4090"), or export the CSV again'
    )
