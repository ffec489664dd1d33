#!/usr/bin/env python3
"""Fit the sample TF-IDF + logistic-regression predictor on samples/calibration.jsonl.

The comparison corpus is not read for the fit (R2): C is chosen by 5-fold
cross-validation grouped by chapter on the calibration split, like the MiniLM head
(samples/train_head.py). Writes samples/austen_tfidf/model.json (vocabulary, idf,
coefficients as JSON: no pickle to trust), then reloads it through the predictor the
campaign runs and checks that it gives scikit-learn's labels on every calibration and
corpus text; records the corpus accuracy in the file, after the fit.

Usage:  python samples/build_tfidf.py      # needs scikit-learn; a few seconds
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from austen_tfidf import FORMAT, Predictor  # noqa: E402

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
C_GRID = [3.0, 10.0, 30.0]
MAX_FEATURES = 6000


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def vectorizer() -> TfidfVectorizer:
    return TfidfVectorizer(
        lowercase=True,
        token_pattern=TOKEN_PATTERN,
        sublinear_tf=True,
        min_df=2,
        max_features=MAX_FEATURES,
    )


def main() -> None:
    calibration, corpus = read(HERE / "calibration.jsonl"), read(HERE / "corpus.jsonl")
    texts, labels = [r["text"] for r in calibration], [r["label"] for r in calibration]
    chapters = [r["id"].rsplit("-p", 1)[0] for r in calibration]
    scores = {}
    for c in C_GRID:
        pipe = make_pipeline(vectorizer(), LogisticRegression(C=c, max_iter=2000))
        scores[c] = float(
            np.mean(
                cross_val_score(pipe, texts, labels, groups=chapters, cv=GroupKFold(n_splits=5))
            )
        )
    best = max(C_GRID, key=lambda c: (scores[c], -c))
    vec = vectorizer().fit(texts)
    model = LogisticRegression(C=best, max_iter=2000).fit(vec.transform(texts), labels)
    fit = {
        "format": FORMAT,
        "labels": [str(x) for x in model.classes_],
        "token_pattern": TOKEN_PATTERN,
        "sublinear_tf": True,
        "vocabulary": {k: int(v) for k, v in sorted(vec.vocabulary_.items())},
        "idf": [round(float(x), 7) for x in vec.idf_],
        "coef": [[round(float(x), 7) for x in row] for row in np.ascontiguousarray(model.coef_)],
        "intercept": [round(float(x), 7) for x in model.intercept_],
        "fit": {
            "data": "calibration.jsonl",
            "rows": len(texts),
            "C": best,
            "cv_accuracy": {str(c): round(s, 4) for c, s in scores.items()},
            "scikit_learn": version("scikit-learn"),
        },
    }
    folder = HERE / "austen_tfidf"
    (folder / "model.json").write_text(
        json.dumps(fit, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    loaded = Predictor({}, folder)
    for rows in (calibration, corpus):
        ours = [p["label"] for p in loaded.predict(rows)]
        theirs = list(model.predict(vec.transform([r["text"] for r in rows])))
        differ = sum(a != b for a, b in zip(ours, theirs, strict=True))
        if differ:
            raise SystemExit(f"the JSON predictor differs from scikit-learn on {differ} texts")
    accuracy = float(
        np.mean(
            [p["label"] == r["label"] for p, r in zip(loaded.predict(corpus), corpus, strict=True)]
        )
    )
    fit["evaluation"] = {"data": "corpus.jsonl", "accuracy": round(accuracy, 4)}
    (folder / "model.json").write_text(
        json.dumps(fit, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    print(
        f"C {best} (cv {scores[best]:.4f}); corpus accuracy {accuracy:.4f}; "
        f"{len(fit['vocabulary'])} words; {(folder / 'model.json').stat().st_size} bytes"
    )


if __name__ == "__main__":
    main()
