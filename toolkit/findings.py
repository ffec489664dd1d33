"""A finding: one thing wrong in a workbook, located so a person can fix it. Stdlib only."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True, order=True)
class Finding:
    """Sheet, Excel row (None for the whole sheet), column, check name, message."""

    sheet: str
    row: int | None
    column: str
    check: str
    message: str

    def as_dict(self) -> dict[str, object]:
        """The finding as a JSON-ready dict."""
        return asdict(self)

    def location(self) -> str:
        """``Sheet!row column`` as a person reads it."""
        where = f"{self.sheet}!{self.row}" if self.row is not None else self.sheet
        return f"{where} {self.column}".strip()
