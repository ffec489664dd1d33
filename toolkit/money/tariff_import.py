"""Another provider's dated price snapshot, read whole and merged into the Tariffs rows.

A snapshot is one provider's prices of one date, in one CSV file (``iteralab tariffs
import``): the catalog's columns (``catalog_date``, ``gpu_slug``, ``gpu_name``,
``cards_per_lot``, ``source``) plus ``provider`` and ``currency``, which ``--provider``
and ``--currency`` may give for the whole file instead, and the prices of either kind:
flat plans (``plan_days`` and ``price_per_lot``; ``price_per_lot_usd``, the shipped
catalog's header, is read too) and metered prices, sold by the hour or the second on
demand or spot (``market``, ``price_per_hour``, ``billing_seconds``). A file holds the
columns of one kind or of both; a line is metered when its ``price_per_hour`` is
filled. ``--column FIELD=HEADER`` names a column the file calls otherwise.

Every line is checked by the tariff rules themselves (``calcul_forfaits.make_row``)
before anything is written, and every bad line is reported with its file, line
and column: nothing is imported from a file that does not read whole. Merging
replaces the rows of the same (provider, date) snapshots, in place, and keeps
every other snapshot: importing a file twice changes nothing. Stdlib only.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.errors import CatalogError, UsageError
from toolkit.money.columns import column_mapping
from toolkit.money.tariffs import Meter, Plan, rules, same_provider, tariff_row

#: What a snapshot line holds, by field name (``--column FIELD=HEADER``).
FIELDS = (
    "catalog_date",
    "provider",
    "gpu_slug",
    "gpu_name",
    "cards_per_lot",
    "plan_days",
    "price_per_lot",
    "market",
    "price_per_hour",
    "billing_seconds",
    "currency",
    "source",
)
#: The fields of each kind of price: a file holds every column of one kind, or of both.
FLAT_FIELDS = ("plan_days", "price_per_lot")
METERED_FIELDS = ("market", "price_per_hour", "billing_seconds")
#: Headers read for the price when ``--column price_per_lot=...`` does not name one.
PRICE_HEADERS = ("price_per_lot", "price_per_lot_usd")
#: The catalog column (Tariffs sheet, calcul_forfaits) each field fills.
TO_CATALOG = {**{f: f for f in FIELDS}, "price_per_lot": "price_per_lot_usd"}
#: A provider's price list is kilobytes; this refuses a wrong file before reading it.
MAX_SNAPSHOT_BYTES = 16 * 2**20
#: Bad lines listed in one error; the count says how many more there are.
SHOWN_PROBLEMS = 20


class SnapshotError(CatalogError):
    """A price snapshot that cannot be imported. Exit code 2; nothing is written."""


def parse_mapping(pairs: Sequence[str]) -> dict[str, str]:
    """``FIELD=HEADER`` options as a field -> header dict; UsageError for a bad one."""
    return column_mapping(pairs, FIELDS, "price_per_lot=Price")


def _text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_SNAPSHOT_BYTES:
            raise SnapshotError(
                f"{path}: over the {MAX_SNAPSHOT_BYTES:,}-byte limit of a price snapshot",
                hint="import one provider's price list of one date",
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise SnapshotError(
            f"{path}: cannot read the price snapshot ({exc.strerror or exc})", hint="check the path"
        ) from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SnapshotError(
            f"{path}, line {line}: not UTF-8 text", hint="save the file as CSV UTF-8"
        ) from exc


def _headers(
    path: Path, found: list[str], mapping: Mapping[str, str], given: Mapping[str, str | None]
) -> dict[str, str | None]:
    """Field -> header of the file (None for provider/currency given by an option, and for
    the columns of a kind of price the file does not hold)."""
    headers: dict[str, str | None] = {}
    missing = []
    for field in FIELDS:
        if field in mapping:
            header: str | None = mapping[field]
        elif field == "price_per_lot":
            header = next((h for h in PRICE_HEADERS if h in found), PRICE_HEADERS[0])
        else:
            header = field
        if header not in found:
            if given.get(field) is not None and field not in mapping:
                header = None  # the option gives it for every line
            elif field not in (*FLAT_FIELDS, *METERED_FIELDS):
                missing.append(f"{field} (header {header!r})")
        headers[field] = header
    missing += _kinds_missing(headers, found)
    if missing:
        raise SnapshotError(
            f"{path}, line 1: no column for {', '.join(missing)}; the header holds "
            f"{', '.join(repr(h) for h in found) or 'nothing'}",
            hint="add the columns, name them with --column FIELD=HEADER (fields: "
            f"{', '.join(FIELDS)}), or give --provider NAME and --currency ISO for the "
            "whole file",
        )
    for field in (*FLAT_FIELDS, *METERED_FIELDS):
        if headers[field] not in found:
            headers[field] = None  # a kind of price the file does not hold
    return headers


def _kinds_missing(headers: Mapping[str, str | None], found: list[str]) -> list[str]:
    """The price columns the file lacks: those of a kind it holds in part, or, when it holds
    neither kind, both kinds' (a flat plan or a metered price, in words)."""
    held = {
        kind: [f for f in fields if headers[f] in found]
        for kind, fields in (("flat", FLAT_FIELDS), ("metered", METERED_FIELDS))
    }
    if not held["flat"] and not held["metered"]:
        return [
            f"{' and '.join(FLAT_FIELDS)} (a flat plan) or {', '.join(METERED_FIELDS)} "
            "(a metered price)"
        ]
    missing = []
    for kind, fields in (("flat", FLAT_FIELDS), ("metered", METERED_FIELDS)):
        if held[kind]:
            missing += [f"{f} (header {headers[f]!r})" for f in fields if f not in held[kind]]
    return missing


def read_snapshot(
    path: str | Path,
    mapping: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    currency: str | None = None,
) -> list[Plan | Meter]:
    """The flat plans and metered prices of a provider's price snapshot (CSV), every line
    checked, in file order.

    ``provider`` and ``currency`` give those fields for lines (or a file) that
    lack them; a line that states another value is an error. Raises
    SnapshotError listing every bad line (file, line, column, what to do).
    """
    path = Path(path)
    given = {
        "provider": (provider or "").strip() or None,
        "currency": (currency or "").strip().upper() or None,
    }
    if given["currency"] is not None and not rules.CURRENCY.match(given["currency"]):
        raise UsageError(
            f"--currency {currency!r}: not an ISO 4217 currency code",
            hint="three letters such as USD or EUR",
        )
    reader = csv.reader(io.StringIO(_text(path), newline=""), strict=True)
    try:
        found = [h.strip() for h in next(reader, [])]
        headers = _headers(path, found, mapping or {}, given)
        problems: list[str] = []
        plans: list[Plan | Meter] = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            plan = _line(
                path,
                reader.line_num,
                row,
                found=found,
                headers=headers,
                given=given,
                problems=problems,
            )
            if plan is not None:
                plans.append(plan)
    except csv.Error as exc:
        raise SnapshotError(
            f"{path}, line {reader.line_num}: not valid CSV ({exc})",
            hint="fix the quoting on that line; nothing was imported",
        ) from exc
    problems += _duplicates(plans)
    if problems:
        more = len(problems) - SHOWN_PROBLEMS
        listed = problems[:SHOWN_PROBLEMS] + ([f"... and {more} more"] if more > 0 else [])
        raise SnapshotError(
            f"{path}: {len(problems)} line(s) cannot be imported; nothing was written:\n  - "
            + "\n  - ".join(listed),
            hint="correct those lines (or map the columns with --column FIELD=HEADER) and "
            "import the file again",
        )
    if not plans:
        raise SnapshotError(
            f"{path}: no price line under the header",
            hint="one line per (GPU, plan length) or (GPU, market, billing step) with its "
            "real price; a missing price is a missing line, never 0",
        )
    return plans


def _line(
    path: Path,
    line: int,
    row: list[str],
    *,
    found: list[str],
    headers: Mapping[str, str | None],
    given: Mapping[str, str | None],
    problems: list[str],
) -> Plan | Meter | None:
    """One line's plan or metered price, or None after adding its first problem to
    ``problems``."""
    if len(row) != len(found):
        problems.append(
            f"{path}, line {line}: {len(row)} fields, the header has {len(found)} "
            '(what to do: quote a field that holds a comma, e.g. "a, b")'
        )
        return None
    cells = dict(zip(found, row, strict=True))
    place = {TO_CATALOG[f]: h for f, h in headers.items()}

    def locate(column: str) -> str:
        header = place.get(column)
        if header is None:
            return f"{path}, line {line}, --{column}"
        return f"{path}, line {line}, column {found.index(header) + 1} ({header})"

    if headers["plan_days"] is None and not cells[str(headers["price_per_hour"])].strip():
        problems.append(
            f"{locate('price_per_hour')}: empty; a file without plan_days and price_per_lot "
            "columns holds metered prices only (what to do: fill in the price per hour of "
            "one lot, or remove the line if the price is unknown)"
        )
        return None

    values: dict[str, object] = {}
    for field, header in headers.items():
        values[TO_CATALOG[field]] = cells[header].strip() if header is not None else ""
    for field in ("provider", "currency"):
        cell, option = str(values[field]), given[field]
        stated = cell.upper() if field == "currency" else cell
        if (
            option is not None
            and stated
            and not (same_provider(stated, option) if field == "provider" else stated == option)
        ):
            problems.append(
                f"{locate(field)}: {cell!r} but --{field} {option} was given (what "
                f"to do: leave the option out, or correct the line)"
            )
            return None
        values[field] = stated or option or ""
        if not values[field]:
            problems.append(
                f"{locate(field)}: empty; every imported price names its {field} "
                f"(what to do: fill it in, or give --{field} for the whole file)"
            )
            return None
    try:
        return rules.make_row(values, locate)
    except rules.TariffError as exc:
        problems.append(f"{exc.message} (what to do: {exc.hint})" if exc.hint else exc.message)
        return None


def _duplicates(plans: Sequence[Plan | Meter]) -> list[str]:
    """A problem for each line that prices again what an earlier line prices: the same
    plan length, or the same lot, market and billing step, of one GPU, provider and date."""
    seen: dict[tuple[object, ...], Plan | Meter] = {}
    problems = []
    for p in plans:
        identity = (p.provider.casefold(), p.catalog_date, p.gpu_slug)
        if isinstance(p, Plan):
            key: tuple[object, ...] = (*identity, p.plan_days)
            what, keep = f"{p.plan_days}-day price", "GPU and plan length"
        else:
            key = (*identity, p.cards_per_lot, p.market, p.billing_seconds)
            what = f"{p.market} price {rules.billing_text(p.billing_seconds)}"
            keep = "GPU, lot size, market and billing step"
        if key in seen:
            problems.append(
                f"{p.where}: a second {what} for {p.gpu_slug} of {p.provider} on "
                f"{p.catalog_date} (the first is at {seen[key].where}) (what to do: keep one "
                f"line per provider, date, {keep})"
            )
        else:
            seen[key] = p
    return problems


# --------------------------------------------------------------------------- merge


@dataclass(frozen=True)
class Merged:
    """The Tariffs rows after an import, and what the import did to them."""

    rows: list[dict[str, Any]]
    snapshots: list[tuple[str, str]]  # (provider, catalog_date) imported, in file order
    replaced: int  # rows of those snapshots the sheet held before
    kept: int  # rows of other snapshots, left as they were
    changed: bool  # False when the sheet already held exactly these rows


def snapshot_key(provider: Any, catalog_date: Any) -> tuple[str, str]:
    """A snapshot's identity: (provider, date), the provider's case and spaces ignored."""
    return (str(provider or "").strip().casefold(), str(catalog_date or "").strip())


def merge(existing: Sequence[dict[str, Any]], plans: Sequence[Plan | Meter]) -> Merged:
    """``existing`` Tariffs rows with the snapshots of ``plans`` put in place of their earlier
    rows (where the first of them stood; at the end when new); other rows kept in order."""
    snapshots = list(dict.fromkeys((p.provider, p.catalog_date) for p in plans))
    keys = {snapshot_key(*s) for s in snapshots}
    new = [tariff_row(p) for p in plans]
    rows: list[dict[str, Any]] = []
    replaced, placed = 0, False
    for row in existing:
        if snapshot_key(row.get("provider"), row.get("catalog_date")) in keys:
            replaced += 1
            if not placed:
                rows += new
                placed = True
            continue
        rows.append(dict(row))
    if not placed:
        rows += new
    changed = [_plain(r) for r in existing] != [_plain(r) for r in rows]
    return Merged(rows, snapshots, replaced, len(existing) - replaced, changed)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A row's cells compared as values: numbers as Decimal, text stripped, blanks left out."""
    out: dict[str, Any] = {}
    for name in layout.TARIFFS.names:
        value = row.get(name)
        if isinstance(value, float):
            value = Decimal(repr(value))
        elif isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            value = Decimal(value)
        elif isinstance(value, str):
            value = value.strip()
        if value not in (None, ""):
            out[name] = value
    return out
