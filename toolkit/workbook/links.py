"""Hyperlinks a person added to a workbook's cells, read from the archive's XML.

A save writes no hyperlink (text stays text: :mod:`toolkit.workbook.render`), so a link
typed in Excel or LibreOffice would vanish at the next save: the store names each one and
refuses to save (:func:`toolkit.workbook.store.check_keepable`). The value readers do not
give hyperlinks; each sheet's XML is scanned in chunks for its ``<hyperlink>`` elements
(they follow the cells).
"""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ElementTree
import zipfile
from typing import IO

from toolkit.workbook.comments import PACKAGE, sheet_parts

#: A hyperlink element with or without a namespace prefix, up to its end.
_LINK = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?hyperlink\s[^>]*>")
_REF = re.compile(rb'\sref="([^"]*)"')
_TARGET = re.compile(rb'\s(?:[A-Za-z_][\w.-]*:)?(id|location)="([^"]*)"')
#: Bytes read at a time from a sheet's XML.
_CHUNK = 1 << 20
#: Links named per workbook (the first ones say where to look).
MAX_NAMED = 20


def cell_links(handle: IO[bytes]) -> list[tuple[str, str, str]]:
    """The hyperlinks of every sheet as (sheet name, cell reference, target), at most
    :data:`MAX_NAMED`; the target is the address or the place in the workbook it opens."""
    found: list[tuple[str, str, str]] = []
    try:
        with zipfile.ZipFile(handle) as archive:
            present = set(archive.namelist())
            for name, part in sheet_parts(archive):
                if part not in present or len(found) >= MAX_NAMED:
                    continue
                elements = _link_elements(archive, part)
                if not elements:
                    continue
                targets = _raw_targets(archive, part)
                for element in elements[: MAX_NAMED - len(found)]:
                    found.append((name, *_described(element, targets)))
    finally:
        handle.seek(0)
    return found


def _link_elements(archive: zipfile.ZipFile, part: str) -> list[bytes]:
    """The hyperlink elements of a sheet part (a tag never straddles two chunks: each is
    cut at its last ``<``)."""
    elements: list[bytes] = []
    carry = b""
    with archive.open(part) as stream:
        while chunk := stream.read(_CHUNK):
            text = carry + chunk
            cut = text.rfind(b"<")
            body, carry = (text[:cut], text[cut:]) if cut > 0 else (text, b"")
            if b"hyperlink" in body:
                elements += _LINK.findall(body)
    return elements + _LINK.findall(carry)


def _raw_targets(archive: zipfile.ZipFile, part: str) -> dict[str, str]:
    """A sheet part's relationships: id -> target as written (a link's web address)."""
    folder, name = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", name + ".rels")
    try:
        root = ElementTree.fromstring(archive.read(rels))
    except (KeyError, ElementTree.ParseError):
        return {}
    return {
        str(rel.get("Id")): str(rel.get("Target")) for rel in root.iter(PACKAGE + "Relationship")
    }


def _described(element: bytes, targets: dict[str, str]) -> tuple[str, str]:
    """A link's cell reference and target (the relationship's address for an outside one,
    ``#place`` for one inside the workbook)."""
    ref = _REF.search(element)
    target = ""
    for kind, value in _TARGET.findall(element):
        text = value.decode("utf-8", "replace")
        target = targets.get(text, "") if kind == b"id" else f"#{text}"
        if target:
            break
    return (ref.group(1).decode("utf-8", "replace") if ref else "?"), target
