"""The flat-rate calculator: the seed's prices, its guards, its errors, one implementation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.paths import ROOT
from toolkit import layout
from toolkit.cli import cli
from toolkit.errors import CatalogError
from toolkit.money import tariffs
from toolkit.plumbing.shipped import TARIFF_CATALOG, shipped
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

rules = tariffs.rules
SCRIPT = ROOT / "tariffs" / "calcul_forfaits.py"
CSV = ROOT / "tariffs" / "tarifs-forfaits.csv"
HEADER = ",".join(rules.COLUMNS)
RTX = "2026-09-24,rtx-4090,RTX 4090,1,7,110.00,IteraGPU catalog"
B200 = "2026-09-24,b200,B200,2,7,2071.00,IteraGPU catalog"


def calc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    """Run the standalone calculator's main; return (exit code, stdout lines, stderr lines)."""
    code = rules.main(list(argv))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def write_catalog(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "catalog.csv"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the seed


def test_seed_example_runs_with_only_the_two_files_and_no_package(tmp_path: Path) -> None:
    """In a folder holding only the script and the CSV, with no site-packages, it prints 220.00."""
    shutil.copy(SCRIPT, tmp_path)
    shutil.copy(CSV, tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "calcul_forfaits.py",
            "--gpu",
            "rtx-4090",
            "--days",
            "7",
            "--lots",
            "2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "catalog: tarifs-forfaits.csv (snapshot of 2026-09-24)",
        "plan: RTX 4090 (rtx-4090), 7 days, 110.00 USD per lot of 1 card",
        "flat price: 220.00 USD for 2 GPUs (2 lots of 1 card x 110.00 USD per lot)",
        "billing: flat; the whole plan is due however short the run (no hourly billing)",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "calcul_forfaits.py",
        "tarifs-forfaits.csv",
    ]


def test_shipped_catalog_holds_only_the_two_known_prices() -> None:
    """The 2026-09-24 snapshot has the RTX 4090 and B200 7-day prices, and nothing invented."""
    catalog = tariffs.load_catalog()
    assert [
        (p.catalog_date, p.gpu_slug, p.gpu_name, p.cards_per_lot, p.plan_days, p.price_per_lot_usd)
        for p in catalog.plans
    ] == [
        ("2026-09-24", "rtx-4090", "RTX 4090", 1, 7, Decimal("110.00")),
        ("2026-09-24", "b200", "B200", 2, 7, Decimal("2071.00")),
    ]
    assert all(p.source for p in catalog.plans)


def test_b200_lot_already_holds_two_cards_and_is_never_doubled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One B200 lot for 7 days is 2,071.00 USD for 2 GPUs, not 4,142.00."""
    plan = tariffs.load_catalog().plan("b200", 7)
    assert rules.budget(plan, 1) == Decimal("2071.00")
    code, out, _ = calc(capsys, "--gpu", "b200", "--days", "7", "--lots", "1")
    assert code == 0
    assert out[2] == (
        "flat price: 2,071.00 USD for 2 GPUs (1 lot of 2 cards x 2,071.00 USD per lot)"
    )


def test_lots_count_lots_and_the_output_says_how_many_cards(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three B200 lots are 6 cards and three times the lot price."""
    code, out, _ = calc(capsys, "--gpu", "b200", "--days", "7", "--lots", "3")
    assert code == 0
    assert out[2] == (
        "flat price: 6,213.00 USD for 6 GPUs (3 lots of 2 cards x 2,071.00 USD per lot)"
    )


def test_without_accepted_results_no_per_result_cost_is_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = calc(capsys, "--gpu", "rtx-4090", "--days", "7", "--lots", "2")
    assert code == 0
    assert not [line for line in out if "per accepted" in line]


def test_accepted_results_add_the_cost_per_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = calc(
        capsys, "--gpu", "rtx-4090", "--days", "7", "--lots", "2", "--accepted-results", "4"
    )
    assert code == 0
    assert out[-1] == (
        "cost per accepted result: 55.00 USD (220.00 USD / 4 distinct validated corpora)"
    )


def test_zero_accepted_results_leave_the_cost_undefined_and_the_money_spent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = calc(capsys, "--gpu", "b200", "--days", "7", "--accepted-results", "0")
    assert code == 0
    assert out[-1] == (
        "cost per accepted result: undefined (0 accepted results); the "
        "2,071.00 USD spent stays in the settlement"
    )
    assert rules.cost_per_accepted(Decimal("2071.00"), 0) is None


def test_amounts_stay_decimal_and_show_exactly_a_quotient_rounded_half_up_to_the_cent() -> None:
    per = rules.cost_per_accepted(Decimal("220.00"), 3)
    assert isinstance(per, Decimal)
    assert per == Decimal("220.00") / 3
    assert rules.usd(rules.to_cent(per)) == "73.33 USD"
    assert rules.to_cent(Decimal("0.125")) == Decimal("0.13")
    assert rules.usd(Decimal("0.125")) == "0.125 USD"  # a price is shown as it is
    assert rules.usd(Decimal("2071")) == "2,071.00 USD"


# --------------------------------------------------------------------------- plans and hours


def test_96_hours_is_over_the_3_day_plan_and_within_the_7_day_plan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = calc(capsys, "--hours", "96")
    assert code == 0
    assert out == [
        "schedule: 96 h",
        "plan     hours  covers 96 h",
        "3 days   72 h   no (short by 24 h)",
        "7 days   168 h  yes",
        "30 days  720 h  yes",
        "candidates: 7-day and 30-day plans (covering the schedule says nothing about "
        "finishing on time)",
    ]


def test_a_schedule_equal_to_a_plan_is_covered_by_it() -> None:
    assert [c.covers for c in rules.coverage(Decimal(72))] == [True, True, True]
    assert [c.covers for c in rules.coverage(Decimal("72.01"))] == [False, True, True]


def test_beyond_30_days_the_plan_is_never_extended(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = calc(capsys, "--hours", "800")
    assert code == 0
    assert out[-1] == (
        "candidates: none; the 800 h schedule is longer than the longest plan (30 days, 720 h): "
        "revise the schedule, or price the extra 80 h explicitly; plans are never extended "
        "automatically"
    )


def test_with_a_gpu_each_plan_shows_its_price_or_that_it_is_missing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = calc(capsys, "--gpu", "rtx-4090", "--lots", "2", "--hours", "96")
    assert code == 0
    assert out[2:6] == [
        "plan     hours  covers 96 h         flat price (2 lots)",
        "3 days   72 h   no (short by 24 h)  no price in the catalog",
        "7 days   168 h  yes                 220.00 USD",
        "30 days  720 h  yes                 no price in the catalog",
    ]


def test_a_short_run_still_pays_the_whole_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """Two hours on a 7-day plan cost the 7-day price: no hourly billing."""
    code, out, _ = calc(capsys, "--gpu", "rtx-4090", "--days", "7", "--hours", "2")
    assert code == 0
    assert "flat price: 110.00 USD for 1 GPU (1 lot of 1 card x 110.00 USD per lot)" in out


def test_start_and_end_give_the_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = calc(
        capsys, "--start", "2026-12-07T09:00+01:00", "--end", "2026-12-11T09:00+01:00"
    )
    assert code == 0
    assert out[0] == "schedule: 2026-12-07T09:00+01:00 to 2026-12-11T09:00+01:00 = 96 h"


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--gpu", "h100", "--days", "7"],
            "error: unknown GPU 'h100' in the catalog of 2026-09-24 (tarifs-forfaits.csv); known: "
            "b200, rtx-4090",
        ),
        (
            ["--gpu", "rtx-4090", "--days", "5"],
            "error: plan length 5 days: plans last 3, 7 or 30 days",
        ),
        (
            ["--gpu", "rtx-4090", "--days", "3"],
            "error: no 3-day price for rtx-4090 in the catalog of 2026-09-24: add it to "
            "tarifs-forfaits.csv (it has the 7-day plan)",
        ),
        (
            ["--gpu", "rtx-4090", "--days", "7", "--lots", "0"],
            "error: --lots '0': expected a whole number of lots, 1 or more (count lots, not cards)",
        ),
        (
            ["--gpu", "rtx-4090", "--days", "7", "--lots", "-2"],
            "error: --lots '-2': expected a whole number of lots, 1 or more (count lots, not cards)",
        ),
        (
            ["--gpu", "rtx-4090", "--days", "7", "--accepted-results", "-1"],
            "error: --accepted-results '-1': expected a whole number >= 0 of distinct validated "
            "corpora",
        ),
        (
            ["--gpu", "rtx-4090", "--days", "7", "--accepted-results", "2.5"],
            "error: --accepted-results '2.5': expected a whole number >= 0 of distinct validated "
            "corpora",
        ),
        (
            ["--start", "2026-12-11T09:00", "--end", "2026-12-07T09:00"],
            "error: the schedule ends at 2026-12-07T09:00+00:00, not after its start "
            "2026-12-11T09:00+00:00",
        ),
        (["--hours", "0"], "error: --hours '0': expected a number of hours > 0"),
        (
            ["--start", "next monday", "--end", "2026-12-07T09:00"],
            "error: --start 'next monday' is not a date-time",
        ),
        ([], "error: nothing to compute"),
    ],
)
def test_bad_input_is_a_clear_error_with_exit_code_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = calc(capsys, *argv)
    assert code == 2
    assert out == []
    assert err[0] == message
    assert err[1].startswith("  what to do: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            f"catalog_date,gpu_slug,gpu_name,plan_days,price_per_lot_usd,source\n{RTX}\n",
            "catalog.csv, line 1: missing column(s) cards_per_lot",
        ),
        (
            f"{HEADER}\n{RTX}\n2026-09-24,b200,B200,2,7,2O71.00,x\n",
            "catalog.csv, line 3, column 6 (price_per_lot_usd): '2O71.00' is not a price in USD",
        ),
        (
            f"{HEADER}\n{RTX}\n2026-09-24,b200,B200,2,7,0,x\n",
            "catalog.csv, line 3, column 6 (price_per_lot_usd): '0' is not a price in USD",
        ),
        (
            f"{HEADER}\n2026-09-24,rtx-4090,RTX 4090,1,14,110.00,x\n",
            "catalog.csv, line 2, column 5 (plan_days): '14' is not 3, 7, 30",
        ),
        (
            f"{HEADER}\n2026-09-24,rtx-4090,RTX 4090,one,7,110.00,x\n",
            "catalog.csv, line 2, column 4 (cards_per_lot): 'one' is not a whole number >= 1",
        ),
        (
            f"{HEADER}\n24/09/2026,rtx-4090,RTX 4090,1,7,110.00,x\n",
            "catalog.csv, line 2, column 1 (catalog_date): '24/09/2026' is not a date YYYY-MM-DD",
        ),
        (
            f"{HEADER}\n2026-09-24,rtx-4090,RTX 4090,1,7,110.00,\n",
            "catalog.csv, line 2, column 7 (source): empty; every catalog row needs a source",
        ),
        (
            f"{HEADER}\n2026-09-24,rtx-4090,RTX 4090,1,7,110.00\n",
            "catalog.csv, line 2: 6 fields, the header has 7",
        ),
        (
            f"{HEADER}\n{RTX}\n{RTX}\n",
            "catalog.csv, line 3: a second 7-day price for rtx-4090 in the catalog of 2026-09-24 (the "
            "first is at catalog.csv, line 2)",
        ),
        (f"{HEADER}\n", "catalog.csv: no price rows"),
        (
            f'{HEADER}\n{RTX}\n2026-09-24,b200,"B200,2,7,2071.00,x\n',
            "catalog.csv, line 3: not valid CSV (unexpected end of data)",
        ),
        (
            f"{HEADER}\n{RTX}\n".encode() + b"2026-09-24,b200,B\xe9200,2,7,2071.00,x\n",
            "catalog.csv, line 3: not UTF-8 text",
        ),
    ],
)
def test_a_malformed_catalog_names_the_line_and_column(
    tmp_path: Path, text: str | bytes, message: str
) -> None:
    path = write_catalog(tmp_path, text)
    with pytest.raises(rules.TariffError) as caught:
        rules.load_catalog(path, path.name)
    assert caught.value.message == message


def test_a_malformed_catalog_stops_the_calculator_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_catalog(tmp_path, f"{HEADER}\n2026-09-24,b200,B200,2,7,2071 USD,x\n")
    code, _, err = calc(capsys, "--catalog", str(path), "--gpu", "b200", "--days", "7")
    assert code == 2
    assert err[0] == (
        f"error: {path}, line 2, column 6 (price_per_lot_usd): '2071 USD' is not a price in USD"
    )


def test_an_unreadable_catalog_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.csv"
    code, _, err = calc(capsys, "--catalog", str(missing), "--gpu", "b200", "--days", "7")
    assert code == 2
    assert err[0] == f"error: {missing}: cannot read the catalog (No such file or directory)"


def test_a_catalog_with_a_bom_and_crlf_lines_from_excel_reads(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, f"\ufeff{HEADER}\r\n{B200}\r\n".encode())
    assert rules.load_catalog(path).plan("b200", 7).price_per_lot_usd == Decimal("2071.00")


def test_the_newest_snapshot_is_used_unless_a_date_is_given(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path, f"{HEADER}\n{B200}\n2026-10-01,b200,B200,2,7,1999.00,October catalog\n"
    )
    catalog = rules.load_catalog(path)
    assert catalog.plan("b200", 7).price_per_lot_usd == Decimal("1999.00")
    assert catalog.plan("b200", 7, "2026-09-24").price_per_lot_usd == Decimal("2071.00")


# --------------------------------------------------------------------------- one implementation


def test_iteralab_cost_prints_what_the_standalone_script_prints(
    runner: CliRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--gpu",
        "rtx-4090",
        "--days",
        "7",
        "--lots",
        "2",
        "--accepted-results",
        "3",
        "--hours",
        "96",
    ]
    _, standalone, _ = calc(capsys, *argv)
    result = runner.invoke(cli, ["cost", *argv])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == standalone


def test_iteralab_cost_runs_the_module_in_tariffs() -> None:
    """No second copy of the rules: the package imports tariffs/calcul_forfaits.py itself."""
    assert Path(rules.__file__).resolve() == SCRIPT
    assert shipped(TARIFF_CATALOG).resolve() == CSV


def test_iteralab_cost_bad_input_exits_2(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["cost", "--gpu", "b200", "--days", "7", "--lots", "0"])
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == (
        "error: --lots '0': expected a whole number of lots, 1 or more (count lots, not cards)"
    )


def test_iteralab_cost_takes_another_catalog(runner: CliRunner, tmp_path: Path) -> None:
    path = write_catalog(tmp_path, f"{HEADER}\n2026-09-24,rtx-4090,RTX 4090,1,3,55.50,mine\n")
    result = runner.invoke(
        cli, ["cost", "--catalog", str(path), "--gpu", "rtx-4090", "--days", "3", "--lots", "2"]
    )
    assert result.exit_code == 0, result.output
    assert (
        "flat price: 111.00 USD for 2 GPUs (2 lots of 1 card x 55.50 USD per lot)"
        in result.output.splitlines()
    )


# --------------------------------------------------------------------------- Tariffs sheet


def test_the_tariffs_sheet_declares_the_catalog_columns() -> None:
    assert tuple(layout.TARIFFS.names) == rules.COLUMNS + rules.OPTIONAL_COLUMNS


def test_the_tariffs_sheet_round_trips_the_catalog(tmp_path: Path) -> None:
    catalog = tariffs.load_catalog()
    data = WorkbookData.empty()
    for row in tariffs.tariff_rows(catalog):
        data.append("Tariffs", row)
    path = tmp_path / "w.xlsx"
    store.save(data, path)
    back = tariffs.catalog_from_workbook(store.read(path))
    assert [
        (p.gpu_slug, p.plan_days, p.cards_per_lot, p.price_per_lot_usd, p.source)
        for p in back.plans
    ] == [
        (p.gpu_slug, p.plan_days, p.cards_per_lot, p.price_per_lot_usd, p.source)
        for p in catalog.plans
    ]


def test_a_catalog_date_excel_turned_into_a_date_reads_as_its_iso_day() -> None:
    row = {
        "catalog_date": "2026-09-24T00:00",
        "gpu_slug": "b200",
        "gpu_name": "B200",
        "cards_per_lot": 2,
        "plan_days": 7,
        "price_per_lot_usd": 2071.0,
        "source": "x",
    }
    catalog = tariffs.catalog_from_sheet([row], [2])
    assert [(p.catalog_date, p.price_per_lot_usd) for p in catalog.plans] == [
        ("2026-09-24", Decimal("2071.0"))
    ]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"price_per_lot_usd": "110.00"},
            "sheet Tariffs, row 2, column price_per_lot_usd: '110.00' is text, not a number",
        ),
        ({"plan_days": 5}, "sheet Tariffs, row 2, column plan_days: 5 is not 3, 7, 30"),
    ],
)
def test_a_bad_tariffs_row_names_the_sheet_row_and_column(
    override: dict[str, object], message: str
) -> None:
    row = {
        "catalog_date": "2026-09-24",
        "gpu_slug": "b200",
        "gpu_name": "B200",
        "cards_per_lot": 2,
        "plan_days": 7,
        "price_per_lot_usd": 2071.0,
        "source": "x",
    }
    row.update(override)
    with pytest.raises(CatalogError) as caught:
        tariffs.catalog_from_sheet([row], [2])
    assert caught.value.message == message
    assert caught.value.exit_code == 2
