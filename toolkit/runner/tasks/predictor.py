"""The engine seam: what a task kind asks of the model it measures, and the torch engine.

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
:class:`TorchClassifier` and :class:`TorchGenerator`; other engines add their loader to
the registries and nothing above this module changes.
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

from toolkit.errors import ModelError
from toolkit.evidence import corpus
from toolkit.plumbing import engines, padding
from toolkit.runner import attempt_parts
from toolkit.runner.engines import causal_lm
from toolkit.runner.engines import model
from toolkit.runner.instruments import flops


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


class Loaded(attempt_parts.Loaded, Protocol):
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


class TorchClassifier(Tokenized):
    """The torch engine of classification: a transformers classifier (or encoder + head)."""

    engine = "torch"
    engine_artifact: str | None = None
    tokens_reason: str | None = None

    def __init__(self, loaded: model.LoadedModel, variant: dict[str, Any]) -> None:
        self.engine_notes: list[str] = []
        self.loaded = loaded
        self.tokenizer = loaded.tokenizer
        self.device = loaded.device
        self.model_revision = loaded.model_revision
        self.tokenizer_revision = loaded.tokenizer_revision
        self.attention_backend = loaded.attention_backend
        self.set_padding(variant)

    @classmethod
    def load(cls, variant: dict[str, Any], base: Path) -> TorchClassifier:
        """Load the variant's model on its device (:func:`toolkit.runner.engines.model.load`)."""
        return cls(model.load(variant, base), variant)

    def predict(
        self, items: Sequence[corpus.Item], timer: AbstractContextManager[Any] | None = None
    ) -> Batch:
        prepared = self.prepare(items)
        return Batch(self.labels_of(self.launch(prepared, timer)), prepared.lengths, prepared.width)

    def prepare(self, items: Sequence[corpus.Item], *, pin: bool = False) -> Prepared:
        """One batch's inputs on the host, its token counts and width; ``pin``: in pinned
        memory, for a copy to the device that does not block the host."""
        inputs = self.encode([i.text for i in items], "pt")
        mask = inputs["attention_mask"]
        if pin:
            inputs = {k: v.pin_memory() for k, v in inputs.items()}
        return Prepared(inputs, [int(n) for n in mask.sum(dim=1)], int(mask.shape[1]))

    def launch(
        self,
        prepared: Prepared,
        timer: AbstractContextManager[Any] | None = None,
        *,
        non_blocking: bool = False,
    ) -> torch.Tensor:
        """Copy the batch to the device and run the model: each input's predicted class
        index, left on the device (nothing waits for it)."""
        inputs = prepared.inputs
        if self.device.type != "cpu":
            inputs = {k: v.to(self.device, non_blocking=non_blocking) for k, v in inputs.items()}
        with torch.inference_mode():
            if timer is None:
                logits = self.loaded.module(**inputs)
            else:
                with timer:
                    logits = self.loaded.module(**inputs)
        return logits.argmax(dim=-1)

    def labels_of(self, indexes: torch.Tensor) -> list[str]:
        """Class indexes (on any device) brought to the host as labels."""
        labels = self.loaded.labels
        return [labels[p] for p in indexes.tolist()]

    def warm(self, rows: int, width: int) -> None:
        """Run the model once on a synthetic ``rows`` x ``width`` batch (no corpus text)."""
        prepared = Prepared(self.synthetic(rows, width, "pt"), [], width)
        self.labels_of(self.launch(prepared))

    def flop_cost(self) -> tuple[flops.Cost | None, str | None]:
        return flops.cost_of(self.loaded.module)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def close(self) -> None:
        self.loaded = None  # type: ignore[assignment]


class TorchGenerator:
    """The torch engine of generation: a transformers causal LM's ``generate``."""

    engine = "torch"
    engine_artifact: str | None = None
    #: Why the KV cache's peak is empty when generate() returns no cache tensors.
    kv_cache_reason = "generate() returned no KV cache tensors"

    def __init__(
        self, lm: causal_lm.LoadedLM, variant: dict[str, Any], rule: causal_lm.DecodingRule
    ) -> None:
        self.engine_notes: list[str] = []
        self.lm = lm
        self.variant = variant
        self.rule = rule
        self.device = lm.device
        self.model_revision = lm.model_revision
        self.tokenizer_revision = lm.tokenizer_revision
        self.attention_backend = lm.attention_backend
        #: The model folder (the bandwidth ceiling sizes the model from its config).
        self.folder = lm.folder

    @classmethod
    def load(
        cls, variant: dict[str, Any], base: Path, rule: causal_lm.DecodingRule
    ) -> TorchGenerator:
        """Load the variant's causal LM (:func:`toolkit.runner.engines.causal_lm.load_lm`)."""
        return cls(causal_lm.load_lm(variant, base, rule), variant, rule)

    def generate(
        self,
        items: Sequence[corpus.Item],
        window: causal_lm.GenerationWindow,
        after_batch: Callable[[int], None],
    ) -> None:
        causal_lm.run_window(self.lm, self.variant, self.rule, items, window, after_batch)

    def flop_cost(self) -> tuple[flops.Cost | None, str | None]:
        return flops.cost_of(self.lm.module, generating=True)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def close(self) -> None:
        self.lm = None  # type: ignore[assignment]


#: Each engine's classifier loader, by the variant's ``engine`` (blank: torch).
CLASSIFIERS: dict[str, Callable[[dict[str, Any], Path], Predictor]] = {
    "torch": TorchClassifier.load,
}
#: Each engine's generator loader, by the variant's ``engine`` (blank: torch).
GENERATORS: dict[str, Callable[[dict[str, Any], Path, causal_lm.DecodingRule], Generator]] = {
    "torch": TorchGenerator.load,
}


def engine_of(variant: dict[str, Any], loaders: dict[str, Any]) -> Any:
    """The loader of the variant's engine (every ``python:MODULE:CALLABLE`` under
    ``python:``); ModelError naming the ones there are."""
    name = engines.engine_of(variant)
    if name.startswith(engines.PYTHON_PREFIX):
        name = engines.PYTHON_PREFIX
    if name not in loaders:
        raise ModelError(
            f"variant {variant.get('variant_id', '?')}: engine {name!r} is not "
            "one this runner has for its task",
            hint=f"write one of {', '.join(sorted(loaders))} in its engine cell",
        )
    return loaders[name]


def load_classifier(variant: dict[str, Any], base: Path) -> Predictor:
    """The variant's classifier, loaded by its engine."""
    loader: Callable[[dict[str, Any], Path], Predictor] = engine_of(variant, CLASSIFIERS)
    return loader(variant, base)


def load_generator(variant: dict[str, Any], base: Path, rule: causal_lm.DecodingRule) -> Generator:
    """The variant's causal LM under ``rule``, loaded by its engine."""
    loader = engine_of(variant, GENERATORS)
    generator: Generator = loader(variant, base, rule)
    return generator
