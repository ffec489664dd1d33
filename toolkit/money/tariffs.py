"""The tariff rules as the toolkit sees them, plus the Tariffs sheet <-> catalog.

The rules themselves live once, in ``tariffs/calcul_forfaits.py`` (a standalone
script, shipped with the package and loaded from there as the module
``calcul_forfaits``); this module re-exports them, turns their errors into
``toolkit.errors`` ones, finds the shipped catalog, and converts between the
catalog and the workbook's sheet.
Stdlib only.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from toolkit import layout
from toolkit.errors import CatalogError, UsageError
from toolkit.plumbing.shipped import TARIFF_CATALOG, TARIFF_RULES, shipped


def _load_rules() -> ModuleType:
    """``calcul_forfaits``, loaded from the shipped ``tariffs/calcul_forfaits.py`` itself.

    Loaded by path, not imported: the file is also a standalone script that a person runs
    beside its catalog, outside any package (SPEC R25, tariffs/README.md), so it cannot live
    under ``toolkit/``. It imports the standard library only; tests/project/test_architecture.py
    keeps this the one module loaded by path and the file free of toolkit imports, so the
    import graph it checks misses no edge.
    """
    if "calcul_forfaits" in sys.modules:  # already loaded (by us, or run as a script)
        return sys.modules["calcul_forfaits"]
    path = shipped(TARIFF_RULES)
    spec = importlib.util.spec_from_file_location("calcul_forfaits", path)
    if spec is None or spec.loader is None:
        raise CatalogError(f"{path}: cannot load the tariff rules", hint="reinstall iteragpu-lab")
    module = importlib.util.module_from_spec(spec)
    sys.modules["calcul_forfaits"] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:  # the type checker reads the same file (mypy_path = "tariffs")
    import calcul_forfaits as rules
    from calcul_forfaits import Catalog, Meter, Plan, TariffError
else:
    rules = _load_rules()
    Catalog, Meter, Plan, TariffError = rules.Catalog, rules.Meter, rules.Plan, rules.TariffError
PLAN_DAYS: tuple[int, ...] = rules.PLAN_DAYS
UNDEFINED: str = rules.UNDEFINED
DEFAULT_CURRENCY: str = rules.DEFAULT_CURRENCY
#: An ISO 4217 code as catalogs and billing exports write it: the one pattern.
CURRENCY: re.Pattern[str] = rules.CURRENCY
budget = rules.budget
cost_per_accepted = rules.cost_per_accepted
usd = rules.usd
money = rules.money
same_provider = rules.same_provider


@contextlib.contextmanager
def translated(error: type[UsageError] = CatalogError) -> Iterator[None]:
    """Re-raise the rules' TariffError as ``error`` (exit code 2), message and hint kept."""
    try:
        yield
    except rules.TariffError as exc:
        raise error(exc.message, hint=exc.hint) from exc


def load_catalog(path: str | Path | None = None, name: str | None = None) -> Catalog:
    """The catalog CSV at ``path`` (default: the shipped one), checked; CatalogError if bad.

    Messages name the file as ``name`` (default: the path as given).
    """
    with translated():
        if path is None:
            default = shipped(TARIFF_CATALOG)
            return rules.load_catalog(default, name or default.name)
        return rules.load_catalog(path, name or str(path))


def catalog_from_sheet(
    rows: Sequence[dict[str, Any]], row_numbers: Sequence[int] = (), origin: str = "sheet Tariffs"
) -> Catalog:
    """The catalog held by the Tariffs sheet's rows; CatalogError naming the row and column.

    Cells must hold what the Settlement formulas can match: dates and slugs as
    text, whole numbers for cards and days, a number for the price.
    """
    entries: list[Plan | Meter] = []
    for i, row in enumerate(rows):
        excel = row_numbers[i] if i < len(row_numbers) else i + 2

        def locate(column: str, excel: int = excel) -> str:
            return f"{origin}, row {excel}, column {column}"

        row = with_iso_date(row)
        _check_sheet_types(row, locate)
        with translated():
            entries.append(rules.make_row(row, locate))
    plans, meters = rules.split_rows(entries)
    with translated():
        return rules.build_catalog(plans, origin, meters)


def with_iso_date(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with a catalog_date typed in Excel (a date cell, read as midnight of that day)
    as the ISO day it stands for, ``2026-09-24``: Excel's dates and ISO text alike."""
    date = row.get("catalog_date")
    if isinstance(date, str) and len(date) > 10 and date[10:] in ("T00:00", "T00:00:00"):
        return {**row, "catalog_date": date[:10]}
    return row


def _check_sheet_types(row: dict[str, Any], locate: Any) -> None:
    for name in ("cards_per_lot", "plan_days", "price_per_lot_usd", "price_per_hour"):
        value = row.get(name)
        if isinstance(value, str):
            raise CatalogError(
                f"{locate(name)}: {value!r} is text, not a number",
                hint="type the number itself, without quotes or units",
            )


def catalog_from_workbook(data: Any, origin: str = "sheet Tariffs") -> Catalog:
    """The catalog held by a WorkbookData's Tariffs sheet."""
    return catalog_from_sheet(
        data.tables[layout.TARIFFS.name], data.row_numbers.get(layout.TARIFFS.name, []), origin
    )


def tariff_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """Tariffs sheet rows (one per flat plan, then one per metered price, keyed by the
    sheet's columns) from a catalog.

    The currency is always written (every amount has one); an unnamed provider
    stays an empty cell, and so do the columns the row's kind has not.
    """
    entries: tuple[Plan | Meter, ...] = (*catalog.plans, *catalog.meters)
    return [tariff_row(entry) for entry in entries]


def tariff_row(entry: Plan | Meter) -> dict[str, Any]:
    """The Tariffs sheet row of one flat plan or metered price."""
    row = {name: getattr(entry, name, None) for name in layout.TARIFFS.names}
    row["provider"] = entry.provider or None
    return row
