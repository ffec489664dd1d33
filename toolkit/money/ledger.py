"""A provider's billing export, read and reconciled with the Rentals sheet (seed 000).

A billing export is a CSV file with one charge per line: ``date``,
``description``, ``reference`` (order or invoice), ``amount`` and
``currency``. Providers name these columns their own way: a mapping
(``amount=Total``) says which header holds which field. Reading checks every
line (a number for the amount, an ISO 4217 code for the currency) and stops at
the first bad one with the file, line and column: nothing is imported from a
file that does not read whole.

:func:`reconcile` matches ledger lines to rentals by reference and says, per
rental, matched / amount differs / not in the ledger, and which ledger lines
no rental accounts for. Stdlib only.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from toolkit.errors import UsageError
from toolkit.money.columns import column_mapping
from toolkit.money.tariffs import CURRENCY, rules

FIELDS = ("date", "description", "reference", "amount", "currency")
REQUIRED = ("date", "reference", "amount", "currency")
#: A billing export of a few rentals is kilobytes; a year of a busy account a few MB.
MAX_LEDGER_BYTES = 64 * 2**20
#: The Ledger sheet's rows below its header in one Excel sheet (1,048,576 rows).
MAX_LEDGER_LINES = 1_048_575
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_AMOUNT = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$")
NO_LEDGER = "no ledger imported"


class LedgerError(UsageError):
    """A billing export that cannot be imported: bad input, exit code 2 (as a tariff
    import's); nothing is written."""


def parse_mapping(pairs: Sequence[str]) -> dict[str, str]:
    """``FIELD=HEADER`` options as a field -> header dict; UsageError for a bad one."""
    return column_mapping(pairs, FIELDS, "amount=Total")


def read_ledger(
    path: str | Path,
    mapping: Mapping[str, str] | None = None,
    label: str | None = None,
    zone: dt.tzinfo | None = None,
) -> list[dict[str, Any]]:
    """The charges of a billing export, one dict per line (amount as Decimal, currency upper
    case, date as ISO 8601 text, source ``LABEL:LINE``, ``LABEL`` the file's name unless
    given); LedgerError naming the file, line and column otherwise. ``zone``: the export's
    time zone, for date-times written without a UTC offset (:func:`_date`)."""
    path = Path(path)
    label = label or path.name
    headers = {field: (mapping or {}).get(field, field) for field in FIELDS}
    try:
        if path.stat().st_size > MAX_LEDGER_BYTES:
            raise LedgerError(
                f"{path}: over the {MAX_LEDGER_BYTES:,}-byte limit of a billing export",
                hint="export the months of the campaign only",
            )
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise LedgerError(
            f"{path}: cannot read the billing export ({exc.strerror or exc})", hint="check the path"
        ) from exc
    except UnicodeDecodeError as exc:
        raise LedgerError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
            hint="export it as CSV in UTF-8",
        ) from exc
    reader = csv.DictReader(io.StringIO(text, newline=""))
    found = [h.strip() for h in reader.fieldnames or []]
    reader.fieldnames = found
    by_case = {h.casefold(): h for h in found}  # a header matches whatever its case
    headers = {field: by_case.get(header.casefold(), header) for field, header in headers.items()}
    missing = [
        f"{field} (header {headers[field]!r})" for field in REQUIRED if headers[field] not in found
    ]
    if missing:
        raise LedgerError(
            f"{path}: line 1: no column for {', '.join(missing)}; the header holds "
            f"{', '.join(repr(h) for h in found) or 'nothing'}",
            hint="name the columns with --column FIELD=HEADER, e.g. --column amount=Total "
            "(fields: " + ", ".join(FIELDS) + ")",
        )
    rows = []
    for record in reader:
        line = reader.line_num
        if None in record:  # csv's key for the values past the header's last column
            raise _extra_fields(path, line, len(found), list(record[None]))
        values = {field: str(record.get(headers[field]) or "").strip() for field in FIELDS}
        if not any(values.values()):
            continue
        rows.append(
            {
                **{f: values[f] or None for f in ("description", "reference")},
                "date": _date(values["date"], path, line, headers["date"], zone),
                "amount": _amount(values["amount"], path, line, headers["amount"]),
                "currency": _currency(values["currency"], path, line, headers["currency"]),
                "source": f"{label}:{line}",
            }
        )
        if len(rows) > MAX_LEDGER_LINES:
            raise LedgerError(
                f"{path}: line {line}: more than {MAX_LEDGER_LINES:,} charges, the most the "
                "Ledger sheet holds (an Excel sheet has 1,048,576 rows); nothing was imported",
                hint="export the months of the campaign only (or the campaign's account)",
            )
    if not rows:
        raise LedgerError(
            f"{path}: no charge in the billing export", hint="export the lines of the rental period"
        )
    return rows


def _extra_fields(path: Path, line: int, columns: int, extra: list[str]) -> LedgerError:
    """A line with more values than the header has columns: a value holding a comma without
    quotes shifts every value after it, so no column of the line can be trusted."""
    shown = ", ".join(repr(v) for v in extra[:3]) + (" ..." if len(extra) > 3 else "")
    return LedgerError(
        f"{path}: line {line}: {len(extra)} value(s) more than the header's {columns} "
        f"column(s) ({shown}): a value holding a comma without quotes shifts the values after "
        "it, so this line's amount and date cannot be trusted; nothing was imported",
        hint='quote each value holding a comma ("GPU, 4090"), or export the CSV again',
    )


def source_label(export: Path, workbook: Path) -> str:
    """What a ledger line's ``source`` names its file by: the path from the workbook's folder
    (the file's name, for an export beside it), or the absolute path of one elsewhere. A
    second import of the same file replaces its lines; another provider's bill, even under
    the same file name in another folder, is kept beside them."""
    export, folder = export.resolve(), workbook.resolve().parent
    try:
        return export.relative_to(folder).as_posix()
    except ValueError:
        return str(export)


def check_room(kept: int, new: int, export: Path) -> None:
    """LedgerError when the lines kept and the new ones overflow the Ledger sheet."""
    if kept + new > MAX_LEDGER_LINES:
        raise LedgerError(
            f"{export}: {new:,} charge(s) beside the {kept:,} already in the Ledger sheet "
            f"make more than the {MAX_LEDGER_LINES:,} it holds; nothing was imported",
            hint="export the months of the campaign only",
        )


def _date(
    text: str, path: Path, line: int, column: str, zone: dt.tzinfo | None = None
) -> str | None:
    """A date (``2026-12-07``) or a date-time with its UTC offset (``2026-12-07T09:30Z``,
    ``...T09:30+01:00``), as written; a text that names no real day (``31/02/2026``, ``not a
    date``) is refused. A date-time without an offset names a moment only in the export's
    time zone: read in ``zone`` and kept with the offset it had there; refused without a
    zone, or when the time does not exist there or happens twice (a daylight-saving change),
    rather than guessed."""
    if not text:
        return None
    where = f"{path}: line {line}, column {column!r}:"
    if _DAY.fullmatch(text):
        try:
            dt.date.fromisoformat(text)
        except ValueError:
            raise _not_a_date(where, text) from None
        return text
    try:
        moment = rules.read_time(text)
    except ValueError:
        raise _not_a_date(where, text) from None
    if moment.tzinfo is not None:
        return text
    if zone is None:
        raise LedgerError(
            f"{where} {text} has a time of day but no UTC offset: the moment it names depends "
            "on the export's time zone (and around a daylight-saving change may not exist or "
            "happen twice)",
            hint="name the export's time zone: --tz Europe/Paris (or an offset such as "
            "+01:00), or export the times with their offset (2026-12-07T09:30+01:00) or in "
            "UTC (2026-12-07T08:30Z)",
        )
    try:
        local = rules.parse_time(text, zone, where)
    except rules.TariffError as exc:  # in a gap, or twice (clocks go back)
        raise LedgerError(exc.message, hint=exc.hint) from None
    return text + local.isoformat()[-6:]


def _not_a_date(where: str, text: str) -> LedgerError:
    return LedgerError(
        f"{where} {text!r} is not a date",
        hint="an ISO 8601 date such as 2026-12-07 (or 2026-12-07T09:30Z); "
        "export the dates in that form",
    )


def _amount(text: str, path: Path, line: int, column: str) -> Decimal:
    if not _AMOUNT.match(text):
        raise LedgerError(
            f"{path}: line {line}, column {column!r}: {text!r} is not an amount",
            hint="a number such as 110.00 or -12.50 (a refund), without the "
            "currency sign; the currency goes in its own column",
        )
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation as exc:  # the pattern admits only numbers; kept for safety
        raise LedgerError(f"{path}: line {line}: {text!r} is not an amount") from exc


def _currency(text: str, path: Path, line: int, column: str) -> str:
    code = text.upper()
    if not CURRENCY.match(code):
        raise LedgerError(
            f"{path}: line {line}, column {column!r}: unknown currency {text!r}",
            hint="an ISO 4217 code such as USD or EUR",
        )
    return code


@dataclass(frozen=True)
class Booked:
    """What the workbook says a rental cost: its id, reference, amount and currency."""

    rental_id: str
    reference: str | None
    amount: Decimal | None
    currency: str


def reconcile(
    rentals: Sequence[Booked], ledger: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, str], list[Mapping[str, Any]]]:
    """Per rental id its ledger status, and the ledger lines no rental accounts for."""
    if not ledger:
        return {r.rental_id: NO_LEDGER for r in rentals}, []

    def key(reference: Any) -> str:
        return str(reference or "").strip().casefold()

    by_reference: dict[str, list[Mapping[str, Any]]] = {}
    for entry in ledger:
        by_reference.setdefault(key(entry.get("reference")), []).append(entry)
    status = {}
    claimed = set()
    for r in rentals:
        lines = by_reference.get(key(r.reference), []) if r.reference else []
        if not r.reference:
            status[r.rental_id] = "no reference in Rentals: cannot be matched with the ledger"
            continue
        claimed.add(key(r.reference))
        if not lines:
            status[r.rental_id] = f"not in the ledger (reference {r.reference})"
            continue
        currencies = {str(e.get("currency")) for e in lines}
        if currencies != {r.currency}:
            status[r.rental_id] = (
                f"currency differs: ledger {', '.join(sorted(currencies))}, workbook {r.currency}"
            )
            continue
        charged = sum((_decimal(e.get("amount")) for e in lines), Decimal(0))
        if r.amount is None:
            status[r.rental_id] = (
                f"ledger {rules.amount_text(charged)} {r.currency}, workbook no amount"
            )
        elif charged == r.amount:
            status[r.rental_id] = f"matched ({len(lines)} ledger line(s))"
        else:
            status[r.rental_id] = (
                f"amount differs: ledger {rules.amount_text(charged)} {r.currency}, "
                f"workbook {rules.amount_text(r.amount)} {r.currency}"
            )
    extra = [e for e in ledger if key(e.get("reference")) not in claimed]
    return status, extra


def _decimal(value: Any) -> Decimal:
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
