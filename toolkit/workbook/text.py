"""Untrusted text is text: one helper for every string written into a cell."""

from __future__ import annotations

import re

EXCEL_CELL_LIMIT = 32_767
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
TRUNCATION_MARK = " [truncated by iteralab: Excel cells hold 32,767 characters]"


def cell_text(value: object) -> str:
    """Return ``value`` as a string safe for an Excel cell.

    Characters Excel forbids are removed and strings over Excel's 32,767
    character limit are cut, saying so. Callers write the result with
    xlsxwriter's ``write_string`` so that ``=...`` or ``http...`` stay text.
    """
    text = _ILLEGAL.sub("", str(value))
    if len(text) > EXCEL_CELL_LIMIT:
        text = text[: EXCEL_CELL_LIMIT - len(TRUNCATION_MARK)] + TRUNCATION_MARK
    return text
