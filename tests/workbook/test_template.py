"""The template is generated from the layout and matches a fresh build."""

from __future__ import annotations

from pathlib import Path

import openpyxl

from toolkit import layout
from toolkit.workbook.template import DEFAULT_PATH, build_template

EXPECTED_SHEETS = [
    "Guide",
    "Overview",
    "Protocol",
    "Variants",
    "Attempts",
    "Manifest",
    "Tariffs",
    "Rentals",
    "Schedule",
    "Memory",
    "Summary",
    "Verification",
    "Settlement",
    "Ledger",
    "Decision",
    "Audit",
]


def _cells(path: Path) -> dict[str, list[tuple[str, object, str]]]:
    book = openpyxl.load_workbook(path)
    return {
        ws.title: [
            (c.coordinate, c.value, c.number_format)
            for row in ws.iter_rows()
            for c in row
            if c.value is not None
        ]
        for ws in book.worksheets
    }


def test_committed_template_equals_a_fresh_build(tmp_path: Path) -> None:
    """Cell by cell (values and formats), the committed template is what the layout builds."""
    fresh = build_template(tmp_path / "fresh.xlsx")
    assert _cells(DEFAULT_PATH) == _cells(fresh), (
        "workbook_template.xlsx is stale: run `python -m toolkit.workbook.template`"
    )


def test_sheets_are_in_the_declared_order() -> None:
    """The template holds the product's sheets, in order, with these names."""
    assert openpyxl.load_workbook(DEFAULT_PATH).sheetnames == EXPECTED_SHEETS
    assert [s.name for s in layout.SHEETS] == EXPECTED_SHEETS


def test_table_headers_follow_the_layout() -> None:
    """Row 1 of every table sheet lists exactly the declared columns, reasons included."""
    book = openpyxl.load_workbook(DEFAULT_PATH)
    for sheet in layout.SHEETS:
        if sheet.kind == "table":
            header = [c.value for c in book[sheet.name][1]]
            assert header == sheet.names, sheet.name


def test_every_missable_measurement_has_a_reason_column() -> None:
    """Each measurement column of Attempts is followed by its _reason column."""
    names = layout.ATTEMPTS.names
    for col in layout.ATTEMPTS.columns:
        if col.measurement:
            assert names[names.index(col.name) + 1] == f"{col.name}_reason"
    assert "measured_s_reason" in names and "mem_allocated_peak_bytes_reason" in names


def test_closed_fields_have_dropdowns_reaching_spare_rows() -> None:
    """Choice columns carry list validation down to the spare rows, for hand-typed rows."""
    ws = openpyxl.load_workbook(DEFAULT_PATH)["Variants"]
    validations = {str(dv.sqref): dv.formula1 for dv in ws.data_validations.dataValidation}
    precision_col = openpyxl.utils.get_column_letter(layout.VARIANTS.names.index("precision") + 1)
    assert validations[f"{precision_col}2:{precision_col}1001"] == '"fp32,bf16,fp16"'


def test_headers_are_frozen_and_formats_distinguish_inputs(tmp_path: Path) -> None:
    """Tables freeze their header; durations, bytes and money get their number formats."""
    from toolkit.workbook.model import WorkbookData
    from toolkit.workbook.render import render

    data = WorkbookData.empty()
    data.append(
        "Attempts", {"attempt_id": "a1", "measured_s": 20.5, "host_rss_peak_bytes": 123456789}
    )
    data.append("Tariffs", {"gpu_slug": "rtx-4090", "price_per_lot_usd": 110})
    render(data, tmp_path / "w.xlsx")
    book = openpyxl.load_workbook(tmp_path / "w.xlsx")
    assert book["Attempts"].freeze_panes == "B2"
    assert book["Protocol"].freeze_panes == "A2"
    letter = openpyxl.utils.get_column_letter
    attempts = book["Attempts"]
    measured = attempts[f"{letter(layout.ATTEMPTS.names.index('measured_s') + 1)}2"]
    rss = attempts[f"{letter(layout.ATTEMPTS.names.index('host_rss_peak_bytes') + 1)}2"]
    price = book["Tariffs"][f"{letter(layout.TARIFFS.names.index('price_per_lot_usd') + 1)}2"]
    assert (measured.value, measured.number_format) == (20.5, '0.000" s"')
    assert (rss.value, rss.number_format) == (123456789, "#,##0")
    assert (price.value, price.number_format) == (110, '#,##0.00" USD"')
    protocol = book["Protocol"]
    assert protocol["B2"].fill.fgColor.rgb != protocol["A2"].fill.fgColor.rgb


def test_empty_table_cells_are_left_unwritten_under_their_column_format(tmp_path: Path) -> None:
    """A blank cell is not written (a third of a large Attempts sheet); the column's
    format still covers it, so a value typed there in Excel gets the column's format."""
    import zipfile

    from toolkit.workbook import store
    from toolkit.workbook.model import WorkbookData
    from toolkit.workbook.render import render

    data = WorkbookData.empty()
    data.append("Attempts", {"attempt_id": "a1", "measured_s": 20.5, "notes": ""})
    render(data, tmp_path / "w.xlsx")
    with zipfile.ZipFile(tmp_path / "w.xlsx") as archive:
        sheet = archive.read("xl/worksheets/sheet5.xml").decode()  # Attempts: 5th sheet
    row2 = sheet.split('<row r="2"', 1)[1].split("</row>", 1)[0]
    assert row2.count("<c ") == 2  # attempt_id and measured_s only
    letter = openpyxl.utils.get_column_letter
    load_col = letter(layout.ATTEMPTS.names.index("load_s") + 1)
    ws = openpyxl.load_workbook(tmp_path / "w.xlsx")["Attempts"]
    assert ws.column_dimensions[load_col].number_format == '0.000" s"'
    back = store.read(tmp_path / "w.xlsx").tables["Attempts"]
    assert back == [
        {name: {"attempt_id": "a1", "measured_s": 20.5}.get(name) for name in layout.ATTEMPTS.names}
    ]
