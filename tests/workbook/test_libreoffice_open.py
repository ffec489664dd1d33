"""The workbook opens cleanly in LibreOffice: converted headless and read back."""

from __future__ import annotations

from pathlib import Path

import openpyxl

from tests.support.recalc import needs_soffice, recalculate
from toolkit import editing, layout
from toolkit.evidence import locking, protocol
from toolkit.evidence.validate import validate
from toolkit.workbook import store
from toolkit.workbook.template import DEFAULT_PATH


@needs_soffice
def test_template_round_trips_through_libreoffice(tmp_path: Path) -> None:
    """Every sheet and header survives a LibreOffice conversion."""
    converted = recalculate(DEFAULT_PATH, tmp_path / "lo")
    book = openpyxl.load_workbook(converted, read_only=True)
    assert book.sheetnames == [s.name for s in layout.SHEETS]
    attempts_header = next(book["Attempts"].iter_rows(max_row=1, values_only=True))
    assert list(attempts_header[: len(layout.ATTEMPTS.names)]) == layout.ATTEMPTS.names


@needs_soffice
def test_filled_locked_workbook_reads_back_valid_after_libreoffice(
    tmp_path: Path, filled_workbook: Path
) -> None:
    """A filled, locked workbook saved by LibreOffice is still read as valid by iteralab."""
    with editing.change(filled_workbook, refresh_derived=False) as edit:
        data = edit.data
        sha = locking.lock(data)
    converted = recalculate(filled_workbook, tmp_path / "lo")
    (tmp_path / "lo" / "corpus.jsonl").write_bytes((tmp_path / "corpus.jsonl").read_bytes())
    back = store.read(converted)
    assert validate(back, converted) == []
    assert protocol.require_lock(back, converted) == sha
    assert back.forms["Protocol"]["threshold"] == 0.6
    assert [v["variant_id"] for v in back.tables["Variants"]] == ["b1-fp32", "b4-fp32", "b8-fp32"]
