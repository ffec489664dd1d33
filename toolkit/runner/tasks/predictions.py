"""The predictions file read back after it was written, and the reference it is compared with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolkit.evidence import corpus
from toolkit.plumbing.digests import file_sha256
from toolkit.runner.spec import AttemptSpec


def read_back(spec: AttemptSpec, predictions_sha: str, notes: list[str]) -> list[dict[str, Any]]:
    """The exported predictions file's rows; a file changed since export is noted."""
    rows = corpus.read_predictions(spec.predictions_file)
    if file_sha256(spec.predictions_file) != predictions_sha:
        notes.append("predictions file changed between export and evaluation")
    return rows


def reference_changed(ref: dict[str, Any]) -> str:
    """Why the reference variant's predictions file is not used."""
    return f"reference predictions {ref['predictions_path']} missing or changed since its attempt"


def checked_reference(spec: AttemptSpec, notes: list[str]) -> Path | None:
    """The reference variant's predictions file when it is still what its attempt wrote
    (None without a reference; a missing or changed file is noted and not used)."""
    ref = spec.reference
    if ref is None:
        return None
    path = spec.base / ref["predictions_path"]
    if not path.exists() or file_sha256(path) != ref["predictions_sha256"]:
        notes.append(reference_changed(ref) + ": not used")
        return None
    return path
