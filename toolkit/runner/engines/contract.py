"""The engine contract: what a task kind asks of the model it measures.

A task kind (:mod:`toolkit.runner.tasks`) owns the phases, the measured window's batching
and bookkeeping, the evaluation and the row; beneath it an *engine* loads the variant's
model and runs it. An engine is a loader, ``load(variant, base) -> predictor``, named by
the variant's ``engine`` (blank: ``torch``) in :data:`CLASSIFIERS` or :data:`GENERATORS`:

- a :class:`Predictor` (Protocol task ``classification``): ``token_lengths`` of texts (the
  window's length order, strata, truncation), ``predict`` one batch of texts to one label
  each, with the batch's token counts (padding, FLOPs); ``synchronize`` waits for the
  device; ``close`` releases the model. ``flop_cost`` says what one token costs, or why
  that is unknown (runner.flops).
- a :class:`Generator` (Protocol task ``generation``): ``generate`` a list of prompts into a
  :class:`toolkit.runner.engines.causal_lm.GenerationWindow` by batches (outputs, token counts,
  time to first token, decode time, KV cache), the same ``synchronize``, ``close`` and
  ``flop_cost``.

Both carry the three Manifest facts of a loaded model (``model_revision``,
``tokenizer_revision``, ``attention_backend``) and the ``device`` they run on. A loader
raises :class:`toolkit.errors.ModelError` for a model it cannot load; a failure inside
``predict`` or ``generate`` is the attempt's (a row, failed). The torch engine is
:mod:`toolkit.runner.engines.torch_engine`; every engine's loader is a line of the tables in
:mod:`toolkit.runner.engines.registry`, and nothing above the engines changes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from toolkit.evidence import corpus
from toolkit.plumbing import padding
from toolkit.runner.engines import causal_lm
from toolkit.runner.instruments import flops


class ManifestFacts(Protocol):
    """What the Manifest reads from a loaded model (every engine's loaded model offers them)."""

    @property
    def model_revision(self) -> str:
        """The hash of the model's files (R3)."""

    @property
    def tokenizer_revision(self) -> str:
        """The hash of the tokenizer's files (R3)."""

    @property
    def attention_backend(self) -> str:
        """The attention implementation really used."""


@dataclass
class Batch:
    """What one :meth:`Predictor.predict` call returns."""

    #: One label per input, in the order given.
    outputs: list[str]
    #: Tokens each input fed the model (after truncation); empty for an engine that reads
    #: text its own way (its ``tokens_reason`` says so).
    lengths: list[int]
    #: The width the batch ran at (its inputs padded to it); 0 with ``lengths`` empty.
    width: int


@dataclass
class Prepared:
    """One batch made ready on the host (:meth:`TorchClassifier.prepare`)."""

    #: The model's inputs (token ids, attention mask, ...), padded to ``width``.
    inputs: dict[str, torch.Tensor]
    #: Tokens each input feeds the model (after truncation).
    lengths: list[int]
    width: int


class Loaded(ManifestFacts, Protocol):
    """What every engine's loaded model offers: the Manifest's facts (revisions, attention
    backend), its device, its FLOPs, a synchronize and a close."""

    @property
    def device(self) -> torch.device:
        """Where the model runs."""

    def flop_cost(self) -> tuple[flops.Cost | None, str | None]:
        """The model's FLOPs per token, or None with why they are unknown."""

    def synchronize(self) -> None:
        """Wait until the device finished what was asked of it."""

    def close(self) -> None:
        """Release the model (an attempt of a shared process must not find it in memory)."""

    #: The Manifest's engine (name and version), what it ran by hash (None for torch: the
    #: model revision says it), and what loading did (an export built or reused).
    engine: str
    engine_artifact: str | None
    engine_notes: list[str]


class Predictor(Loaded, Protocol):
    """A loaded classifier: one label per input, by batches."""

    #: None when the engine counts tokens in the Protocol's tokenizer; else why it does not
    #: (a ``python:`` predictor): token lengths, padding and truncation stay empty with it.
    tokens_reason: str | None

    def token_lengths(
        self, texts: Sequence[str], *, truncate: bool, keep: bool = False
    ) -> list[int] | None:
        """Each text's token count, cut at the variant's max_length when ``truncate``; None
        when the engine has no tokenizer (``tokens_reason``). ``keep``: the length-sorted
        window's call, whose encodings the following ``predict`` calls pad instead of
        tokenizing the same texts again."""

    def predict(
        self, items: Sequence[corpus.Item], timer: AbstractContextManager[Any] | None = None
    ) -> Batch:
        """One batch: a label per input (ids and texts; never the gold label is read);
        ``timer`` wraps only the model's call (R10)."""


class Generator(Loaded, Protocol):
    """A loaded causal LM under the Protocol's decoding rule."""

    rule: causal_lm.DecodingRule
    #: Why the window's KV-cache peak is empty when the engine gave none.
    kv_cache_reason: str

    @property
    def folder(self) -> Path:
        """The model's folder (the bandwidth ceiling sizes the model from its config.json)."""

    def generate(
        self,
        items: Sequence[corpus.Item],
        window: causal_lm.GenerationWindow,
        after_batch: Callable[[int], None],
    ) -> None:
        """Generate ``items`` by batches into ``window``; ``after_batch(done)`` after each."""


class Tokenized:
    """Tokenization shared by the engines that run the Protocol's tokenizer (torch,
    onnxruntime): per batch, or, for a length-sorted window, once for the whole window (to
    sort it) and then padded batch by batch, as a deployment that sorts would do. The
    variant's padding policy sets each batch's width (:mod:`toolkit.plumbing.padding`)."""

    tokenizer: Any
    max_length: int
    policy: padding.Padding
    kept: dict[str, dict[str, list[int]]] | None = None

    def set_padding(self, variant: dict[str, Any]) -> None:
        """Take the variant's max_length and padding policy."""
        self.max_length = int(variant["max_length"])
        self.policy = padding.parse(variant["padding"])

    def token_lengths(
        self, texts: Sequence[str], *, truncate: bool, keep: bool = False
    ) -> list[int]:
        encoded = self.tokenizer(
            list(texts), truncation=truncate, max_length=self.max_length if truncate else None
        )
        rows = encoded["input_ids"]
        self.kept = (
            {text: {key: encoded[key][n] for key in encoded} for n, text in enumerate(texts)}
            if keep
            else None
        )
        return [len(ids) for ids in rows]

    def encode(self, texts: list[str], tensors: str) -> dict[str, Any]:
        """The batch's inputs as ``tensors`` (``"pt"`` or ``"np"``): padded from the kept
        encodings when the window kept them, else tokenized now (by the tokenizer's own
        padding for dynamic and max_length, to the batch's bucket for bucket-N)."""
        if self.kept is not None and all(text in self.kept for text in texts):
            rows = [self.kept[text] for text in texts]
        elif self.policy.kind == padding.BUCKET:
            encoded = self.tokenizer(texts, truncation=True, max_length=self.max_length)
            rows = [{key: encoded[key][n] for key in encoded} for n in range(len(texts))]
        else:
            return dict(
                self.tokenizer(
                    texts,
                    padding="longest" if self.policy.kind == padding.DYNAMIC else "max_length",
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors=tensors,
                )
            )
        longest = max(len(row["input_ids"]) for row in rows)
        return self._padded(rows, self.policy.width(longest, self.max_length), tensors)

    def _padded(self, rows: list[dict[str, list[int]]], width: int, tensors: str) -> dict[str, Any]:
        """Token rows padded to ``width`` on the tokenizer's padding side."""
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        padded: dict[str, Any] = {}
        for key in rows[0]:
            fill = self.tokenizer.pad_token_id if key == "input_ids" else 0
            lists = [
                ([fill] * (width - len(row[key])) + row[key])
                if left
                else (row[key] + [fill] * (width - len(row[key])))
                for row in rows
            ]
            padded[key] = torch.tensor(lists) if tensors == "pt" else np.asarray(lists, np.int64)
        return padded

    def synthetic(self, rows: int, width: int, tensors: str) -> dict[str, Any]:
        """Inputs of ``rows`` x ``width`` tokens made from no text: ordinary (non-special)
        token ids drawn with a fixed seed between the tokenizer's start and end tokens, the
        last row one token shorter and padded, so the batch carries an attention mask with
        padding as the corpus's batches do. For the load phase's warm-up of bucket widths."""
        special = set(self.tokenizer.all_special_ids)
        ordinary = [i for i in range(min(len(self.tokenizer), 30000)) if i not in special]
        draw = random.Random(width * 1000 + rows)
        start = self.tokenizer.cls_token_id or self.tokenizer.bos_token_id
        end = self.tokenizer.sep_token_id or self.tokenizer.eos_token_id
        token_rows = []
        for row in range(rows):
            length = max(2, width - 1) if row == rows - 1 and width > 2 else width
            middle = [draw.choice(ordinary) for _ in range(length - 2)]
            ids = [start, *middle, end] if start is not None and end is not None else middle
            ids = (ids + [draw.choice(ordinary)] * length)[:length]
            encoded = {"input_ids": ids, "attention_mask": [1] * length}
            if "token_type_ids" in self.tokenizer.model_input_names:
                encoded["token_type_ids"] = [0] * length
            token_rows.append(encoded)
        return self._padded(token_rows, width, tensors)
