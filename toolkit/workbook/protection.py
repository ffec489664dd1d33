"""Sheet protections that carry a password, read from the archive's XML.

Every save writes every sheet protected without a password (:mod:`toolkit.workbook.render`):
grey cells locked, blue ones open. A password a person set (Excel writes a salted SHA-512 of
it) cannot be written again by the toolkit, and would vanish at the next save: the store
names each such sheet and refuses to save (:func:`toolkit.workbook.store.check_keepable`).
"""

from __future__ import annotations

import re
import zipfile
from typing import IO

from toolkit.workbook.comments import sheet_parts

_TAG = b"<sheetProtection"
_PASSWORD = re.compile(rb"\s(password|hashValue)=\"[^\"]+\"")
#: Bytes read at a time from a sheet's XML (the protection follows the cells).
_CHUNK = 1 << 20


def passworded_sheets(handle: IO[bytes]) -> list[str]:
    """The names of the sheets whose protection carries a password, in workbook order."""
    found = []
    try:
        with zipfile.ZipFile(handle) as archive:
            for name, part in sheet_parts(archive):
                if part in archive.namelist() and _has_password(archive, part):
                    found.append(name)
    finally:
        handle.seek(0)
    return found


def _has_password(archive: zipfile.ZipFile, part: str) -> bool:
    """Whether the sheet part's ``<sheetProtection>`` element holds a password hash."""
    tail = b""
    with archive.open(part) as stream:
        while chunk := stream.read(_CHUNK):
            text = tail + chunk
            start = text.find(_TAG)
            if start >= 0:
                element = text[start:] + stream.read(4096)  # the element's attributes
                end = element.find(b">")
                return bool(_PASSWORD.search(element[: end if end >= 0 else None]))
            tail = text[-len(_TAG) :]
    return False
