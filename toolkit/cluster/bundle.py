"""What travels to the nodes once: the corpus and the workbook-relative model folders.

A Variants ``model_path`` or ``head_path`` naming a folder beside the workbook
(``head``, ``models/minilm``) exists only on the driver's machine: it is packed
here (tar, uncompressed: weights do not compress) and put once in Ray's object
store. ``package:NAME`` and hub ids resolve on each node, as they do on a rented
box run apart; an absolute path must exist on every node. The model revision hash
the attempt records says which files really ran (R3).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolkit.errors import UsageError

#: The largest folder packed into the object store; beyond it, install it on each node.
MAX_FOLDER_BYTES = 2 * 2**30


def local_folders(variants: Iterable[dict[str, Any]], base: Path) -> dict[str, Path]:
    """The workbook-relative folders the variants name, by the text they name them with."""
    found: dict[str, Path] = {}
    for variant in variants:
        for column in ("model_path", "head_path"):
            text = str(variant.get(column) or "").strip()
            if not text or text.startswith("package:") or Path(text).expanduser().is_absolute():
                continue
            folder = base / text
            if folder.is_dir():  # else a hub id, as resolve_model_path reads it
                found[text] = folder
    return found


def pack(folder: Path, name: str) -> bytes:
    """``folder``'s files as tar bytes; UsageError when it is larger than the limit."""
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    if size > MAX_FOLDER_BYTES:
        raise UsageError(
            f"model folder {name} ({folder}) holds {size:,} bytes, more than the "
            f"{MAX_FOLDER_BYTES:,} a cluster run sends through Ray's object store",
            hint="install the model on every node and name it so in Variants: "
            "package:NAME, a hub id, or an absolute path that exists on each node",
        )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(folder, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, target: Path) -> None:
    """Extract :func:`pack`'s bytes into ``target`` (nothing outside it, no links out)."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        archive.extractall(target, filter="data")
