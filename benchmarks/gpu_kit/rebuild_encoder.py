"""Rebuild the encoder folder that prune_encoder.py shrank, and retarget a head copy to it.

    python benchmarks/gpu_kit/rebuild_encoder.py PRUNED_DIR OUT_MODEL_DIR [HEAD_DIR]

OUT_MODEL_DIR receives the folder's files and a full model.safetensors (unused embedding rows
zero). A linear head records the SHA-256 of the encoder files it was fitted on (head.json) and
the runner refuses another encoder, so HEAD_DIR (a copy of samples/head/, never the shipped
one) gets the rebuilt file's hash in place of the original's, with a note saying why.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
import sys
from pathlib import Path


def retarget_head(head_dir: Path, model_file: Path, original: str) -> None:
    """Point ``head_dir/head.json`` at ``model_file``; refuse a head fitted on another file."""
    path = head_dir / "head.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    files = meta["encoder"]["files"]
    if files.get("model.safetensors") != original:
        raise SystemExit(
            f"{path}: fitted on another model.safetensors than the one pruned "
            f"(original SHA-256 {original})"
        )
    files["model.safetensors"] = hashlib.sha256(model_file.read_bytes()).hexdigest()
    meta["encoder"]["note"] = (
        "model.safetensors rebuilt by benchmarks/gpu_kit with unused "
        f"embedding rows zeroed; original SHA-256 {original}"
    )
    path.write_text(json.dumps(meta, indent=2), encoding="utf-8")


def rebuild(pruned: Path, out: Path, head: Path | None = None) -> Path:
    """Write ``out/model.safetensors`` and the folder's other files; return the weights file."""
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load, save_file

    data = lzma.open(pruned / "pruned.safetensors.xz").read()
    out.mkdir(parents=True, exist_ok=True)
    probe = out / ".meta.safetensors"  # safe_open reads metadata from a file only
    probe.write_bytes(data)
    with safe_open(str(probe), "np") as fh:
        meta = fh.metadata()
    probe.unlink()
    weights = load(data)
    rows, values = weights.pop("__rows__"), weights.pop("__values__")
    matrix = np.zeros(json.loads(meta["shape"]), dtype=values.dtype)
    matrix[rows] = values
    weights[meta["key"]] = matrix
    shutil.copytree(pruned / "model", out, dirs_exist_ok=True)
    target = out / "model.safetensors"
    save_file(weights, str(target))
    if head is not None:
        retarget_head(head, target, meta["original_sha256"])
    print(
        f"rebuilt {target} ({len(rows)} embedding rows kept; original SHA-256 "
        f"{meta['original_sha256']})"
    )
    return target


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    rebuild(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) == 4 else None)
