"""Converted models beside the workbook, keyed by the source model's hash.

``<workbook folder>/engine_cache/<engine>/<key>/``: the key hashes the source model's
revision (its files' SHA-256s), the conversion's settings and the converter's versions,
so a changed model, setting or converter converts again and an unchanged one is reused.
A conversion is built in a temporary sibling folder and renamed into place whole: an
interrupted one leaves nothing that looks finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolkit.plumbing.atomic import write_text

CACHE_FOLDER = "engine_cache"


@dataclass(frozen=True)
class Built:
    """A cached conversion: its folder, whether this call built it, and in how long."""

    folder: Path
    built: bool
    seconds: float

    def note(self, what: str) -> str:
        """``onnx export built in 21.4 s (first use; inside load_s)`` or ``... reused``."""
        rel = f"{self.folder.parent.parent.name}/{self.folder.parent.name}/{self.folder.name}"
        if self.built:
            return f"{what} built in {self.seconds:.1f} s (first use, inside load_s): {rel}"
        return f"{what} reused from {rel}"


def key(settings: dict[str, object]) -> str:
    """A short hash of the conversion's settings (source revision included)."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cached(
    base: Path, engine: str, settings: dict[str, object], build: Callable[[Path], None]
) -> Built:
    """The folder holding ``engine``'s conversion for ``settings``; ``build(folder)`` fills
    an empty folder the first time."""
    target = base / CACHE_FOLDER / engine / key(settings)
    if (target / "settings.json").is_file():
        return Built(target, False, 0.0)
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(work)
        write_text(
            work / "settings.json", json.dumps(settings, sort_keys=True, default=str, indent=1)
        )
        try:
            os.replace(work, target)
        except OSError:  # another process finished the same conversion first
            if not (target / "settings.json").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Built(target, True, time.perf_counter() - start)


def sha256_of(path: Path) -> str:
    """SHA-256 of one file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
