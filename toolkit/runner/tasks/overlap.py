"""The overlapped input pipeline of classification, as a deployer runs it (torch engine).

While the model runs batch *k*, a host thread tokenizes batch *k + 1*; on a CUDA device
its inputs are put in pinned memory there and copied with ``non_blocking=True``. Each
batch's predicted class indexes stay on the device, gathered, and come to the host once,
at the window's end (one copy and one wait instead of one per batch), so the timing
boundary still ends with every prediction on the host, the device synchronised by that
copy. On the CPU nothing is pinned or copied: the tokenizing thread overlaps the model's
own threads, and the predictions stay tensors until the end.

The sequential pipeline (:func:`toolkit.runner.tasks.classification.run_batches`) calls
the same :meth:`prepare`, :meth:`launch` and :meth:`labels_of` one batch after another,
so the two give the same predictions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Protocol

import torch

from toolkit.errors import ModelError
from toolkit.evidence import corpus
from toolkit.runner.engines.contract import Prepared

OVERLAPPED = "overlapped"


class Pipelined(Protocol):
    """What the overlapped pipeline needs of a classifier: the torch engine's steps."""

    device: torch.device

    def prepare(self, items: Sequence[corpus.Item], *, pin: bool = False) -> Prepared: ...

    def launch(
        self,
        prepared: Prepared,
        timer: AbstractContextManager[Any] | None = None,
        *,
        non_blocking: bool = False,
    ) -> torch.Tensor: ...

    def labels_of(self, indexes: torch.Tensor) -> list[str]: ...


def note(device: torch.device) -> str:
    """What the overlapped pipeline did on ``device``, for the row's notes."""
    if device.type == "cuda":
        return (
            "input pipeline overlapped: next batch tokenized on a host thread into pinned "
            "memory, copied without blocking; predictions gathered on the device, brought "
            "to the host once at the window's end"
        )
    return (
        "input pipeline overlapped on the CPU: next batch tokenized on a host thread while "
        "the model runs; nothing to pin or copy; predictions kept as tensors until the "
        "window's end"
    )


def is_overlapped(variant: dict[str, Any]) -> bool:
    """Whether the variant declares the overlapped input pipeline (blank: sequential)."""
    return str(variant.get("input_pipeline") or "").strip() == OVERLAPPED


def pipelined(predictor: Any) -> Pipelined:
    """The predictor, when its engine has the overlapped pipeline; ModelError otherwise."""
    if not all(hasattr(predictor, step) for step in ("prepare", "launch", "labels_of")):
        raise ModelError(
            f"input_pipeline overlapped: the {predictor.engine} engine has no overlapped "
            "pipeline (the torch engine has)",
            hint="declare input_pipeline sequential (or blank) for this engine",
        )
    return predictor


def run(
    predictor: Pipelined,
    batches: Sequence[Sequence[corpus.Item]],
    tally: Callable[[int, Prepared], None],
    after_batch: Callable[[int], None],
    deliver: Callable[[list[str]], None],
    timer: AbstractContextManager[Any] | None = None,
) -> None:
    """Predict ``batches`` overlapped: ``deliver`` gets one label per item, in batch order,
    once at the end.

    ``tally(k, prepared)`` counts batch ``k``'s tokens as it is launched, ``after_batch``
    gets the items launched so far. A failure midway still delivers the labels of the
    batches that ran when the device allows it, then raises.
    """
    pin = predictor.device.type == "cuda"
    gathered: list[torch.Tensor] = []

    def prepare(k: int) -> Prepared:
        return predictor.prepare(batches[k], pin=pin)

    launched = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="iteralab-tokenize") as pool:
        pending: Future[Prepared] | None = pool.submit(prepare, 0) if batches else None
        try:
            for k in range(len(batches)):
                assert pending is not None
                prepared = pending.result()
                pending = pool.submit(prepare, k + 1) if k + 1 < len(batches) else None
                gathered.append(predictor.launch(prepared, timer, non_blocking=pin))
                tally(k, prepared)
                launched += len(batches[k])
                after_batch(launched)
        except BaseException:
            if pending is not None:
                pending.cancel()
            if gathered:
                with contextlib.suppress(Exception):  # a broken device keeps what it holds
                    deliver(predictor.labels_of(torch.cat(gathered)))
            raise
    if gathered:
        deliver(predictor.labels_of(torch.cat(gathered)))
