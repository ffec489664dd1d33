"""Variants whose model_path or head_path names nothing on this machine (no torch).

The runner resolves ``model_path`` (:func:`toolkit.planner.models.resolve_model_path`) and
``head_path`` relative to the workbook's folder; a path that names nothing would fail
every attempt during load. ``iteralab validate`` names each here; a hub id is left to
``iteralab check``, which knows whether it is in the local cache.
"""

from __future__ import annotations

from pathlib import Path

from toolkit.errors import ModelError
from toolkit.findings import Finding
from toolkit.planner.models import resolve_model_path
from toolkit.plumbing import engines
from toolkit.workbook.model import WorkbookData


def model_path_findings(data: WorkbookData, base: Path) -> list[Finding]:
    """One finding per variant whose model_path or head_path names no folder under ``base``
    (the workbook's folder) or on this machine."""
    found = []
    for i, v in enumerate(data.tables["Variants"]):
        row, vid = data.excel_row("Variants", i), v.get("variant_id")
        model = v.get("model_path")
        # An endpoint's model is on its server (validate checks the URL's form).
        served = engines.engine_of(v) == engines.OPENAI_HTTP
        if isinstance(model, str) and model.strip() and not served:
            try:
                resolve_model_path(model, base)
            except ModelError as exc:
                found.append(
                    Finding(
                        "Variants",
                        row,
                        "model_path",
                        "model-files",
                        f"variant {vid!r}: {exc.message}; {exc.hint}",
                    )
                )
        head = v.get("head_path")
        if isinstance(head, str) and head.strip():
            folder = Path(head.strip()).expanduser()
            folder = folder if folder.is_absolute() else base / folder
            if not (folder / "head.json").is_file():
                what = "no head.json in" if folder.is_dir() else "no folder"
                found.append(
                    Finding(
                        "Variants",
                        row,
                        "head_path",
                        "model-files",
                        f"variant {vid!r}: head_path {head!r}: {what} {folder}; "
                        "point it at the folder holding head.json and "
                        "head.safetensors (relative to the workbook's folder)",
                    )
                )
    return found
