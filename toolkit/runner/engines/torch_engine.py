"""The torch engine: a transformers classifier (or encoder + head) and a causal LM's
``generate``, behind the contract of :mod:`toolkit.runner.engines.contract`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch

from toolkit.evidence import corpus
from toolkit.runner.engines import causal_lm, model
from toolkit.runner.engines.contract import Batch, Prepared, Tokenized
from toolkit.runner.instruments import flops


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
