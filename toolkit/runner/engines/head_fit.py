"""Fit a linear head for your own labels on an encoder: what ``head_path`` points at.

The embedding is the runner's own (:class:`toolkit.runner.engines.model.HeadClassifier`: mean pooling
over the attention mask, L2 norm), taken with an identity head, so the head is fitted on
exactly what an attempt will feed it. The head is a multinomial logistic regression
(weights and biases, an L2 penalty 1 / (2 C n) on the weights), fitted full-batch with L-BFGS
on the CPU in float64: no randomness, the same head from the same data. It is written as
``head.safetensors`` (``weight`` (labels, hidden), ``bias`` (labels,), float32) and
``head.json`` (format ``iteragpu-linear-head/1``: labels in weight-row order, pooling,
normalisation, the encoder files' SHA-256 that the runner checks, the fit).

The fit reads a tuning file only, kept apart from the comparison corpus (the Protocol's
rule): given the corpus, a shared id or text is refused before anything is loaded.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from toolkit.errors import CorpusError, UsageError
from toolkit.evidence import corpus, tuning
from toolkit.plumbing.atomic import write_text
from toolkit.runner.engines.model import (
    HEAD_FORMAT,
    HeadClassifier,
    _quiet_transformers,
    model_files,
)

BATCH_SIZE = 16
MAX_STEPS = 500


def check_apart(
    train_path: str, train: list[corpus.Item], corpus_path: str, items: list[corpus.Item]
) -> None:
    """UsageError naming the first shared id or text when the tuning file overlaps the
    comparison corpus: the final comparison must not be data the head was fitted on."""
    shared = tuning.compare(train_path, train, corpus_path, items)
    if not shared:
        return
    first = (
        f"id {shared.ids[0][0]!r} (line {shared.ids[0][1]})"
        if shared.ids
        else f"the text of id {shared.texts[0][1]!r} (line {shared.texts[0][2]})"
    )
    raise UsageError(
        f"{train_path} overlaps the comparison corpus {corpus_path} ({shared.summary()}), "
        f"first {first}: a head fitted on them would be measured on what it learned",
        hint="remove the shared rows from the tuning file (keep it apart from the corpus), "
        "then fit again",
    )


def labelled(path: str, items: Sequence[corpus.Item]) -> list[str]:
    """The labels of ``items`` (sorted), every item labelled and at least two labels;
    CorpusError naming the first unlabelled line otherwise."""
    missing = [i for i in items if not i.label]
    if missing:
        raise CorpusError(
            f"{path}, line {missing[0].line}: id {missing[0].id!r} has no label "
            f"({len(missing)} unlabelled)",
            hint="a head is fitted on labelled examples: give every line its label",
        )
    labels = sorted({str(i.label) for i in items})
    if len(labels) < 2:
        raise CorpusError(
            f"{path}: one label only ({labels[0]!r}): nothing to tell apart",
            hint="give examples of every label the corpus uses",
        )
    return labels


def embed(tokenizer: Any, encoder: nn.Module, texts: list[str], max_length: int) -> torch.Tensor:
    """The runner's pooled, normalised embedding of ``texts`` (float64, input order)."""
    hidden = int(getattr(encoder, "config").hidden_size)  # noqa: B009 (nn.Module's typing)
    pooling = HeadClassifier(encoder, torch.eye(hidden), torch.zeros(hidden)).eval()
    rows = []
    with torch.inference_mode():
        for start in range(0, len(texts), BATCH_SIZE):
            batch = tokenizer(
                texts[start : start + BATCH_SIZE],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            rows.append(pooling(**batch).double())
    return torch.cat(rows)


def fit(x: torch.Tensor, y: torch.Tensor, classes: int, c: float) -> tuple[torch.Tensor, ...]:
    """Weights and biases of a multinomial logistic regression of ``y`` on ``x``."""
    weight = torch.zeros(classes, x.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS(
        [weight, bias], max_iter=MAX_STEPS, tolerance_grad=1e-9, line_search_fn="strong_wolfe"
    )

    def loss() -> torch.Tensor:
        optimiser.zero_grad()
        value = nn.functional.cross_entropy(x @ weight.T + bias, y)
        value = value + (weight**2).sum() / (2 * c * len(y))
        value.backward()
        return value

    optimiser.step(loss)
    return weight.detach(), bias.detach()


def fit_head(
    train_path: Path,
    model_path: str,
    out: Path,
    corpus_path: Path | None = None,
    c: float = 1.0,
    max_length: int = 512,
) -> dict[str, Any]:
    """Fit and write the head of ``model_path``'s encoder on ``train_path``; head.json's
    content. ``corpus_path``: the comparison corpus the tuning file must stay apart from."""
    from safetensors.torch import save_file
    from transformers import AutoModel, AutoTokenizer

    train = corpus.read_corpus(train_path)
    labels = labelled(str(train_path), train)
    if corpus_path is not None:
        check_apart(str(train_path), train, str(corpus_path), corpus.read_corpus(corpus_path))
    files = model_files(model_path, Path.cwd())
    _quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(str(files.folder), local_files_only=True)
    encoder = AutoModel.from_pretrained(
        str(files.folder), local_files_only=True, dtype=torch.float32
    )
    x = embed(tokenizer, encoder, [i.text for i in train], max_length)
    y = torch.tensor([labels.index(str(i.label)) for i in train])
    weight, bias = fit(x, y, len(labels), c)
    correct = int(((x @ weight.T + bias).argmax(1) == y).sum())
    out.mkdir(parents=True, exist_ok=True)
    save_file(
        {"weight": weight.float().contiguous(), "bias": bias.float().contiguous()},
        str(out / "head.safetensors"),
    )
    meta = {
        "format": HEAD_FORMAT,
        "labels": labels,
        "pooling": "mean",
        "normalize": "l2",
        "max_length": max_length,
        "hidden_size": int(weight.shape[1]),
        "logits": "pooled @ weight.T + bias; prediction = argmax",
        "encoder": {"path": model_path, "files": files.hashes},
        "fit": {
            "estimator": "multinomial logistic regression, L-BFGS in float64 (iteralab head fit)",
            "C": c,
            "tuning_file": train_path.name,
            "tuning_sha256": hashlib.sha256(train_path.read_bytes()).hexdigest(),
            "rows": len(train),
            "rows_per_label": dict(sorted(Counter(str(i.label) for i in train).items())),
            "training_accuracy": round(correct / len(train), 4),
            "kept_apart_from": None if corpus_path is None else corpus_path.name,
        },
    }
    write_text(out / "head.json", json.dumps(meta, indent=2) + "\n")
    return meta
