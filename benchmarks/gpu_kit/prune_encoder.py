"""Shrink a BERT-style encoder folder for a lent GPU machine, its outputs exact on given texts.

    python benchmarks/gpu_kit/prune_encoder.py MODEL_DIR OUT_DIR TEXTS.jsonl [MORE.jsonl ...]

A lent machine receives at most 64 MiB and the sample encoder's model.safetensors is 91 MB.
Every weight is kept except the rows of the word-embedding matrix that no token of the given
texts uses (every string field of every JSON line, tokenized untruncated by the folder's fast
and slow tokenizers). OUT_DIR gets ``pruned.safetensors.xz`` (about 46 MB for
all-MiniLM-L6-v2 and the sample corpus) and ``model/``, the folder's other files.
rebuild_encoder.py puts the matrix back with zeros in the unused rows: an embedding lookup
reads only the rows its tokens name, so on the given texts the outputs are bit-identical to
the original's. The rebuilt file's SHA-256 differs from the original's (the Manifest records
the rebuilt one), so the original's is kept in the file's metadata.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
import sys
from pathlib import Path

SPECIAL = {0, 100, 101, 102, 103}  # [PAD] [UNK] [CLS] [SEP] [MASK] in BERT vocabularies


def used_token_ids(model_dir: Path, texts: list[Path]) -> set[int]:
    """Every token id the folder's fast and slow tokenizers give the texts' string fields."""
    from transformers import AutoTokenizer

    fast = AutoTokenizer.from_pretrained(str(model_dir))
    slow = AutoTokenizer.from_pretrained(str(model_dir), use_fast=False)
    ids = SPECIAL | set(fast.all_special_ids)
    for path in texts:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            for value in record.values() if isinstance(record, dict) else ():
                if isinstance(value, str):
                    ids.update(fast(value)["input_ids"])
                    ids.update(slow(value)["input_ids"])
    return ids


def prune(model_dir: Path, out: Path, texts: list[Path]) -> Path:
    """Write ``out/pruned.safetensors.xz`` and ``out/model/``; return the .xz file."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    weights_path = model_dir / "model.safetensors"
    weights = load_file(str(weights_path))
    key = next(k for k in weights if k.endswith("word_embeddings.weight"))
    matrix = weights.pop(key)
    rows = np.array(sorted(used_token_ids(model_dir, texts)), dtype=np.int64)
    weights["__rows__"], weights["__values__"] = rows, matrix[rows]
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        model_dir,
        out / "model",
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("model.safetensors", "__pycache__"),
    )
    digest = hashlib.sha256(weights_path.read_bytes()).hexdigest()
    plain = out / "pruned.safetensors"
    save_file(
        weights,
        str(plain),
        metadata={"key": key, "shape": json.dumps(list(matrix.shape)), "original_sha256": digest},
    )
    packed = out / "pruned.safetensors.xz"
    with plain.open("rb") as fh, lzma.open(packed, "wb", preset=6) as xz:
        shutil.copyfileobj(fh, xz)
    plain.unlink()
    print(
        f"kept {len(rows)} of {matrix.shape[0]} embedding rows -> {packed} "
        f"({packed.stat().st_size / 2**20:.1f} MiB)"
    )
    return packed


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    prune(Path(sys.argv[1]), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
