"""Cell comments a workbook's file holds (notes typed in Excel or LibreOffice).

A save writes only the header notes of :mod:`toolkit.layout` (each column's help): any
other comment ("invoice disputed") would vanish, so the store names it and refuses to save
(:func:`toolkit.workbook.store.check_keepable`). Read from the archive's XML: the value
readers do not give comments.
"""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ElementTree
import zipfile
from collections.abc import Iterator
from typing import IO

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
RELATION = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
PACKAGE = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def part_targets(archive: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """A part's relationships: id -> (type, target part name)."""
    folder, name = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", name + ".rels")
    if rels not in archive.namelist():
        return {}
    out = {}
    for rel in ElementTree.fromstring(archive.read(rels)).iter(PACKAGE + "Relationship"):
        target = str(rel.get("Target"))
        resolved = (
            target.lstrip("/")
            if target.startswith("/")
            else posixpath.normpath(posixpath.join(folder, target))
        )
        out[str(rel.get("Id"))] = (str(rel.get("Type")), resolved)
    return out


def sheet_parts(archive: zipfile.ZipFile) -> Iterator[tuple[str, str]]:
    """Each sheet as (sheet name, its part's name in the archive), in workbook order."""
    sheets = part_targets(archive, "xl/workbook.xml")
    for sheet in ElementTree.fromstring(archive.read("xl/workbook.xml")).iter(MAIN + "sheet"):
        yield str(sheet.get("name")), sheets.get(str(sheet.get(RELATION)), ("", ""))[1]


def cell_comments(handle: IO[bytes]) -> list[tuple[str, str, str]]:
    """Every comment of every sheet as (sheet name, cell reference, text)."""
    found: list[tuple[str, str, str]] = []
    try:
        with zipfile.ZipFile(handle) as archive:
            for name, part in sheet_parts(archive):
                for kind, target in part_targets(archive, part).values():
                    if not kind.endswith("/comments") or target not in archive.namelist():
                        continue
                    for comment in ElementTree.fromstring(archive.read(target)).iter(
                        MAIN + "comment"
                    ):
                        text = "".join(t.text or "" for t in comment.iter(MAIN + "t"))
                        found.append((name, str(comment.get("ref")), text))
    finally:
        handle.seek(0)
    return found


def split_reference(ref: str) -> tuple[int, int]:
    """``"C1"`` -> (3, 1): a cell reference's column number and row (0, 0 when malformed)."""
    letters = ref.rstrip("0123456789")
    digits = ref[len(letters) :]
    if not letters.isalpha() or not letters.isascii() or not digits:
        return 0, 0
    column = 0
    for char in letters.upper():
        column = column * 26 + ord(char) - 64
    return column, int(digits)
