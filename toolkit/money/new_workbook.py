"""A new campaign workbook: the template, its Tariffs sheet holding the shipped catalog
snapshot (tariffs/tarifs-forfaits.csv), so that the Settlement can price flat plans from the
start. Never over an existing file, never in a folder that does not exist.
"""

from __future__ import annotations

from pathlib import Path

from toolkit.errors import UsageError
from toolkit.money import tariffs
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData


def create(workbook: Path) -> tariffs.Catalog:
    """Create a new campaign workbook from the template, its Tariffs sheet holding the shipped
    catalog snapshot (returned); UsageError when the file exists (never overwritten), is
    not an .xlsx or its folder does not exist."""
    exists = UsageError(
        f"{workbook} already exists: not overwritten",
        hint="choose another name, or delete the file yourself",
    )
    if workbook.exists():
        raise exists
    if workbook.suffix.lower() != ".xlsx":
        raise UsageError(
            f"{workbook}: a campaign workbook ends in .xlsx",
            hint=f"use {workbook.with_suffix('.xlsx')}",
        )
    _require_folder(workbook)
    data = WorkbookData.empty()
    catalog = tariffs.load_catalog()
    for row in tariffs.tariff_rows(catalog):
        data.append("Tariffs", row)
    try:
        store.create(data, workbook)
    except FileExistsError:
        raise exists from None
    return catalog


def _require_folder(workbook: Path) -> None:
    """The folder that will hold a new workbook exists: a file is created, never folders (a
    mistyped folder would otherwise start a campaign somewhere unexpected)."""
    folder = workbook.parent
    if folder.is_dir():
        return
    if folder.exists():
        raise UsageError(
            f"{workbook}: {folder} is a file, not a folder; nothing created",
            hint="give a path in an existing folder",
        )
    raise UsageError(
        f"{workbook}: the folder {folder} does not exist; nothing created",
        hint=f"create it first (mkdir -p {folder}), or give a path in an existing folder",
    )
