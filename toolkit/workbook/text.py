"""Untrusted text is text: one helper for every string written into a cell.

Error messages, file paths, labels, notes and typed fields all pass through
:func:`cell_text` before xlsxwriter's ``write_string`` writes them as shared
strings (``t="s"``), so ``=cmd|...``, ``+1``, ``@SUM(...)`` or ``http://...``
stay text: never a formula, a number or a link. What the helper changes,
and why (docs/bad-inputs.md lists it too):

- control characters U+0000-U+001F other than tab, line feed and carriage
  return, and the non-characters U+FFFE/U+FFFF, are removed: XML 1.0 (the
  xlsx format) cannot hold them and Excel refuses such files;
- an unpaired UTF-16 surrogate (text decoded with ``surrogateescape``) becomes
  U+FFFD: it cannot be encoded in UTF-8, and xlsxwriter would fail mid-save;
- a string longer than Excel's 32,767-character cell limit (counted in UTF-16
  units, as Excel counts) is cut and ends with :data:`TRUNCATION_MARK`.

Stdlib only.
"""

from __future__ import annotations

import re

#: Excel's limit on the characters of one cell (UTF-16 code units).
EXCEL_CELL_LIMIT = 32_767
TRUNCATION_MARK = " [truncated by iteralab: Excel cells hold 32,767 characters]"

_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: How OOXML escapes a character in a string: ``_xHHHH_`` (``_x005F_`` is a literal ``_``).
_OOXML_ESCAPE = re.compile("_x([0-9A-Fa-f]{4})_")


def cell_text(value: object) -> str:
    """Return ``value`` as a string safe for an Excel cell (see the module docstring).

    Idempotent: ``cell_text(cell_text(v)) == cell_text(v)``. Callers write the
    result with xlsxwriter's ``write_string``.
    """
    text = str(value)
    if text.isascii() and text.isprintable() and len(text) <= EXCEL_CELL_LIMIT:
        return text  # the common case, nothing to change: skip the searches below
    if _SURROGATE.search(text):
        # Pairs written as two code points are joined; lone halves become U+FFFD.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    text = _ILLEGAL.sub("", text)
    if len(text) > EXCEL_CELL_LIMIT // 2 and utf16_length(text) > EXCEL_CELL_LIMIT:
        text = _cut(text, EXCEL_CELL_LIMIT - len(TRUNCATION_MARK)) + TRUNCATION_MARK
    return text


def utf16_length(text: str) -> int:
    """Length of ``text`` as Excel counts it: UTF-16 code units (an emoji counts 2)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _cut(text: str, units: int) -> str:
    """The longest prefix of ``text`` within ``units`` UTF-16 units, never half a pair."""
    encoded = text.encode("utf-16-le", "surrogatepass")[: units * 2]
    if len(encoded) >= 2 and 0xD8 <= encoded[-1] <= 0xDB:  # a high surrogate cut from its pair
        encoded = encoded[:-2]
    return encoded.decode("utf-16-le")


def ooxml_unescape(text: str) -> str:
    """Decode OOXML's ``_xHHHH_`` escapes, left to right, as Excel does.

    xlsxwriter writes a carriage return as ``_x000D_`` and a literal
    ``_x0041_`` as ``_x005F_x0041_``; openpyxl's reader leaves the first as
    is and strips every ``x005F_`` it meets, so the store decodes with this.
    """
    if "_x" not in text:
        return text
    return _OOXML_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
