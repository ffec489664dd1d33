"""The formulas of a large sheet iteralab writes as values (Attempts, Manifest), found by a
scan of the sheet's XML rather than by parsing every cell.

iteralab writes no formula in those sheets, so any formula there was typed by a person:
``=1+1`` over a measured duration reads as a blank (openpyxl saves no value with it) or as
the value a spreadsheet computed, and validation would call the cell empty or edited
rather than say what it holds. openpyxl's reader would parse every cell to find one (seconds
on a 10,000-attempt sheet); this scan looks for a formula element and costs about as much
as unpacking the part. A formula shared down a range (Excel's fill) is given to each cell
as openpyxl's reader gives it: the first cell's, moved to the cell.
"""

from __future__ import annotations

import re
import zipfile
from typing import IO
from xml.sax.saxutils import unescape

from toolkit.workbook.comments import split_reference
from toolkit.workbook.model import Formula
from toolkit.workbook.openpyxl_reading import Translator

#: Bytes unpacked at a time; a chunk is cut at its last ``<c `` so that no cell straddles two.
CHUNK = 1 << 20
#: A cell holding a formula element: its reference, the element's attributes and text.
_CELL = re.compile(rb'<c r="([A-Z]+[0-9]+)"[^>]*>\s*<f(\s[^>]*)?(?:/>|>([^<]*)</f>)')
_SHARED = re.compile(rb'\st="shared"')
_INDEX = re.compile(rb'\ssi="([0-9]+)"')
#: Formulas named per sheet at most (the first ones say where to look).
MAX_FOUND = 200


def typed_formulas(handle: IO[bytes], part: str) -> dict[tuple[int, int], Formula]:
    """The formulas of worksheet ``part`` by (Excel row, column), 1-based, at most
    :data:`MAX_FOUND`. ``handle`` is the open .xlsx file (left at 0)."""
    found: dict[tuple[int, int], Formula] = {}
    shared: dict[bytes, tuple[str, str]] = {}  # index -> (formula, its first cell)
    try:
        with zipfile.ZipFile(handle) as archive, archive.open(part) as stream:
            carry = b""
            while len(found) < MAX_FOUND:
                chunk = stream.read(CHUNK)
                text = carry + chunk
                cut = text.rfind(b"<c ") if chunk else -1
                body, carry = (text[:cut], text[cut:]) if cut > 0 else (text, b"")
                if b"<f" in body:
                    _collect(body, found, shared)
                if not chunk:
                    break
    finally:
        handle.seek(0)
    return found


def _collect(
    text: bytes, found: dict[tuple[int, int], Formula], shared: dict[bytes, tuple[str, str]]
) -> None:
    for match in _CELL.finditer(text):
        reference = match.group(1).decode("ascii")
        attributes = match.group(2) or b""
        formula = unescape((match.group(3) or b"").decode("utf-8", "replace"))
        index = _INDEX.search(attributes) if _SHARED.search(attributes) else None
        if index is not None and formula:
            shared[index.group(1)] = (formula, reference)
        elif index is not None and index.group(1) in shared:
            first, origin = shared[index.group(1)]
            formula = Translator(f"={first}", origin).translate_formula(reference)[1:]
        if not formula:
            continue  # a shared formula whose first cell was not found: nothing to quote
        column, row = split_reference(reference)
        found[(row, column)] = Formula(formula, None, b't="array"' in attributes)
        if len(found) >= MAX_FOUND:
            return
