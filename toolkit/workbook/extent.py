"""Whether a worksheet's cells stay inside the extent its ``<dimension>`` declares.

calamine sizes its dense grid from the cells it finds, not from the declared
dimension: one value written at XFD1048576 into a sheet that still declares
``A1:X1`` asks for 17 billion cells (549,755,813,888 bytes) and aborts the
process before Python sees an error. So the reader trusts the declared extent
only once the sheet's XML holds no cell reference beyond it (and no cell or row
placed by position alone, which calamine counts on its own): a scan of the
part's text, in chunks, with one regular expression built from the declared
extent, that stops at the first cell beyond it. Stdlib only.
"""

from __future__ import annotations

import re
import string
import zipfile
from typing import IO

from toolkit.layout import letter

#: Bytes unpacked at a time; a chunk is cut at its last ``<`` so that no tag straddles two.
CHUNK = 1 << 20
_LETTERS = string.ascii_uppercase
_DIGITS = string.digits


def _greater(text: str, alphabet: str) -> str:
    """A regular expression matching the strings over ``alphabet`` that are greater than
    ``text`` as numbers or column letters are (longer is greater; same length: by place)."""
    first, last = alphabet[0], alphabet[-1]
    options = [f"[{first}-{last}]{{{len(text) + 1},}}"]
    for i, char in enumerate(text):
        higher = alphabet[alphabet.index(char) + 1 :]
        if higher:
            rest = len(text) - i - 1
            options.append(f"{text[:i]}[{higher[0]}-{last}][{first}-{last}]{{{rest}}}")
    return "|".join(options)


def _beyond_patterns(rows: int, columns: int) -> list[re.Pattern[bytes]]:
    """Patterns for a cell or row reference past ``rows`` x ``columns``, and for a cell or
    row not written as every spreadsheet program writes it (``r="..."`` its first attribute,
    no namespace prefix): those are placed by rules this scan does not follow, so they count
    as beyond. Each pattern starts with a literal, which the regular-expression engine finds
    quickly (about 0.15 s for a 35 MB sheet of 900,000 cells)."""
    row_gt = _greater(str(rows), _DIGITS).encode()
    col_gt = _greater(letter(columns), _LETTERS).encode()
    odd = rb"""(?! r=")[\s/>]"""
    return [
        re.compile(
            rb'<c(?: r="(?:(?:' + col_gt + rb")[0-9]|[A-Z]++(?:" + row_gt + rb')")|' + odd + rb")"
        ),
        re.compile(rb'<row(?: r="(?:' + row_gt + rb')"|' + odd + rb")"),
        re.compile(rb":(?:c|row)[\s/>]"),
    ]


def cells_beyond(handle: IO[bytes], part: str, rows: int, columns: int) -> str | None:
    """The first reference in worksheet ``part`` past the declared ``rows`` x ``columns``
    (e.g. ``XFD1048576``; ``a cell without a reference`` for one placed by position), or
    None when every cell lies inside. ``handle`` is the open .xlsx file (left at 0)."""
    patterns = _beyond_patterns(rows, columns)
    try:
        with zipfile.ZipFile(handle) as archive, archive.open(part) as stream:
            carry = b""
            while chunk := stream.read(CHUNK):
                text = carry + chunk
                cut = text.rfind(b"<")
                body, carry = (text[:cut], text[cut:]) if cut > 0 else (text, b"")
                found = _first(patterns, body)
                if found is not None:
                    return found
            return _first(patterns, carry)
    finally:
        handle.seek(0)


#: A cell or row start tag with its plain reference, from the tag's ``<``.
_REFERENCE = re.compile(rb'<(?:c|row) r="([A-Z]*[0-9]+)"')


def _first(patterns: list[re.Pattern[bytes]], text: bytes) -> str | None:
    """The first match of any of ``patterns`` in ``text``, named: its reference, or what
    it is when it has none."""
    for pattern in patterns:
        found = pattern.search(text)
        if found is None:
            continue
        reference = _REFERENCE.match(text, found.start())
        if reference is None:
            return "a cell or row placed without a plain reference"
        return reference.group(1).decode("ascii")
    return None
