"""A sample ``python:`` predictor: TF-IDF + logistic regression, no GPU, no torch.

It asks the finance question "do we need a GPU at all?": a bag-of-words classifier
fitted on ``calibration.jsonl`` only (R2) by ``samples/build_tfidf.py``, run through
the campaign as ``engine = python:austen_tfidf:Predictor`` with ``model_path =
austen_tfidf`` (this folder). The fit is plain JSON (vocabulary, idf, coefficients),
read without pickle and applied with numpy exactly as scikit-learn's
``TfidfVectorizer`` + ``LogisticRegression`` do; the build script checks that both
give the same labels.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "iteragpu-tfidf-logreg/1"


class Predictor:
    """The contract of docs/engines.md: built from the variant's row and folder."""

    def __init__(self, variant: dict[str, Any], folder: Path) -> None:
        fit = json.loads((Path(folder) / "model.json").read_text(encoding="utf-8"))
        if fit.get("format") != FORMAT:
            raise ValueError(
                f"{folder}/model.json: format {fit.get('format')!r}, expected {FORMAT}"
            )
        self.labels = [str(label) for label in fit["labels"]]
        self.vocabulary = {str(k): int(v) for k, v in fit["vocabulary"].items()}
        self.idf = np.asarray(fit["idf"], dtype=np.float64)
        self.coef = np.asarray(fit["coef"], dtype=np.float64)
        self.intercept = np.asarray(fit["intercept"], dtype=np.float64)
        self.sublinear = bool(fit["sublinear_tf"])
        self.token = re.compile(fit["token_pattern"])

    def features(self, texts: list[str]) -> np.ndarray:
        """TF-IDF rows as scikit-learn computes them (lowercase, token pattern, unigrams,
        idf weighting, L2 normalisation)."""
        rows = np.zeros((len(texts), len(self.idf)))
        for r, text in enumerate(texts):
            for word in self.token.findall(text.lower()):
                column = self.vocabulary.get(word)
                if column is not None:
                    rows[r, column] += 1.0
        if self.sublinear:
            counted = rows > 0
            rows[counted] = 1.0 + np.log(rows[counted])
        rows *= self.idf
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1.0, norms)

    def predict(self, records: list[dict[str, str]]) -> list[dict[str, str]]:
        """One ``{"id", "label"}`` per record."""
        scores = self.features([r["text"] for r in records]) @ self.coef.T + self.intercept
        return [
            {"id": r["id"], "label": self.labels[int(best)]}
            for r, best in zip(records, scores.argmax(axis=1), strict=True)
        ]
