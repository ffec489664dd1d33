"""``python:MODULE:CALLABLE``: a user's own predictor, measured like any other variant.

The contract (docs/engines.md):

- ``CALLABLE(variant, folder)`` builds the predictor: ``variant`` is the Variants row
  (a dict of its cells), ``folder`` the variant's ``model_path`` resolved against the
  workbook's folder. It runs inside the load phase.
- ``predictor.predict(records) -> outputs``: ``records`` is one batch (the variant's
  ``batch_size``) of ``{"id": str, "text": str}`` in processing order; ``outputs`` holds
  exactly one ``{"id": ..., "label": ...}`` per record, each id one of the batch's.
- optional ``predictor.synchronize()``: wait for device work; called before the measured
  window's clock stops (and after each warm-up pass).
- optional ``predictor.close()``: release what it holds; called after the window.

``MODULE`` is imported from ``sys.path``, then from the workbook's folder. A predictor
that raises, returns a wrong count, a foreign or repeated id or a non-text label ends
the attempt as failed with that reason; the campaign goes on.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from toolkit.errors import ModelError
from toolkit.evidence import corpus
from toolkit.planner.models import file_hashes, resolve_model_path, tree_hash
from toolkit.plumbing import engines
from toolkit.plumbing.digests import file_sha256
from toolkit.runner.engines.contract import Batch

NO_TOKENIZER = "none: a python: predictor reads text its own way"
NO_FLOPS = "a python: predictor's work is its own: FLOPs not counted"
NO_TOKENS = "a python: predictor reads text its own way: tokens not counted"


class PredictorError(Exception):
    """A predictor broke the contract (wrong count, foreign id, bad label)."""


class PythonPredictor:
    """A user's predictor as the classification task runs it (a
    :class:`engines.contract.Predictor`): ids and texts in, checked labels out."""

    tokenizer_revision = NO_TOKENIZER
    attention_backend = "n/a (python: predictor)"
    tokens_reason: str | None = NO_TOKENS

    def __init__(
        self,
        predictor: Any,
        variant: dict[str, Any],
        model_revision: str,
        engine: str,
        artifact: str,
    ) -> None:
        self.predictor = predictor
        self.device = torch.device(str(variant["device"]))
        self.model_revision = model_revision
        self.engine: str = engine
        self.engine_artifact: str | None = artifact
        self.engine_notes: list[str] = []

    def token_lengths(self, texts: Sequence[str], *, truncate: bool, keep: bool = False) -> None:
        """None: the predictor reads text its own way (``tokens_reason``)."""
        return None

    def predict(
        self, items: Sequence[corpus.Item], timer: AbstractContextManager[Any] | None = None
    ) -> Batch:
        records = [{"id": i.id, "text": i.text} for i in items]
        with timer if timer is not None else nullcontext():
            outputs = self.predictor.predict(records)
        return Batch(check_outputs(records, outputs), [], 0)

    def flop_cost(self) -> tuple[None, str]:
        return None, NO_FLOPS

    def synchronize(self) -> None:
        """The predictor's ``synchronize()``, when it has one."""
        sync = getattr(self.predictor, "synchronize", None)
        if callable(sync):
            sync()

    def close(self) -> None:
        """The predictor's ``close()``, when it has one. It runs after the row is written:
        a failure there is not the measurement's and is ignored (the contract says so)."""
        close = getattr(self.predictor, "close", None)
        self.predictor = None
        if callable(close):
            with contextlib.suppress(Exception):
                close()


def _import(module_name: str, base: Path) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise  # the module itself imports something missing: its own error
    sys.path.append(str(base))  # the workbook's folder, after everything installed
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ModelError(
            f"python: module {module_name!r} not found on sys.path nor in {base}",
            hint="install it (pip install -e YOUR_PACKAGE), or put it beside the workbook",
        ) from exc


def _module_files(module: Any) -> dict[str, str]:
    """SHA-256 of the module's source: its file, or every .py file of its package."""
    path = Path(getattr(module, "__file__", "") or "")
    if not path.is_file():
        return {}
    if path.name == "__init__.py":
        return {
            p.relative_to(path.parent).as_posix(): file_sha256(p)
            for p in sorted(path.parent.rglob("*.py"))
            if "__pycache__" not in p.parts
        }
    return {path.name: file_sha256(path)}


def _package_version(module_name: str) -> str:
    top = module_name.split(".")[0]
    names = metadata.packages_distributions().get(top, [])
    for name in names:
        found = engines.version(name)
        if found:
            return f"{name} {found}"
    return "not an installed distribution"


def load(variant: dict[str, Any], base: Path) -> PythonPredictor:
    """Import the variant's predictor and build it on its ``model_path`` folder."""
    engine = engines.engine_of(variant)
    target = engines.python_target(engine)
    if target is None:
        raise ModelError(
            f"engine {engine!r} is not python:MODULE:CALLABLE", hint="see docs/engines.md"
        )
    module_name, name = target
    module = _import(module_name, base)
    build = getattr(module, name, None)
    if not callable(build):
        raise ModelError(
            f"{module_name} has no callable {name!r}",
            hint="engine is python:MODULE:CALLABLE, CALLABLE(variant, folder) "
            "returning an object with predict(records)",
        )
    folder, hub_id = resolve_model_path(str(variant["model_path"]), base)
    if folder is None:
        raise ModelError(
            f"model_path {hub_id!r}: a python: predictor takes a local folder",
            hint="point model_path at the folder the predictor loads",
        )
    predictor = build(dict(variant), folder)
    if not callable(getattr(predictor, "predict", None)):
        raise ModelError(
            f"{module_name}.{name}(variant, folder) returned an object without predict(records)",
            hint="see the contract in docs/engines.md",
        )
    files = _module_files(module)
    shown = ", ".join(f"{n} {h[:16]}" for n, h in sorted(files.items())) or "no source file"
    artifact = f"{module_name}.{name}; module files {shown}"
    return PythonPredictor(
        predictor,
        variant,
        tree_hash(file_hashes(folder)),
        f"python {_package_version(module_name)}",
        artifact,
    )


def check_outputs(records: Sequence[dict[str, str]], outputs: Any) -> list[str]:
    """The labels of ``outputs`` in the order of ``records``; PredictorError when the
    outputs are not one ``{"id", "label"}`` per record of the batch."""
    try:
        rows = list(outputs)
    except TypeError:
        raise PredictorError(
            f"predict() returned {type(outputs).__name__}, not a list of {{'id', 'label'}}"
        ) from None
    if len(rows) != len(records):
        raise PredictorError(
            f"predict() returned {len(rows)} output(s) for a batch of "
            f"{len(records)} (first id {records[0]['id']!r})"
        )
    wanted = {r["id"] for r in records}
    labels: dict[str, str] = {}
    for row in rows:
        if not isinstance(row, dict) or "id" not in row or "label" not in row:
            raise PredictorError(
                f"predict() returned {row!r}: each output is {{'id': ..., 'label': ...}}"
            )
        rid, label = str(row["id"]), row["label"]
        if rid not in wanted:
            raise PredictorError(f"predict() returned id {rid!r}, which is not in its batch")
        if rid in labels:
            raise PredictorError(f"predict() returned id {rid!r} twice in one batch")
        if not isinstance(label, str):
            raise PredictorError(
                f"predict() returned label {label!r} for id {rid!r}: a label is text"
            )
        labels[rid] = label
    return [labels[r["id"]] for r in records]


def reference_strata(path: Path | None) -> dict[str, str]:
    """Each id's length stratum as the reference attempt's tokenizer counted it (a python:
    predictor has no tokenizer of the Protocol's): empty without a reference file."""
    if path is None:
        return {}
    return {
        str(r["id"]): str(r["stratum"])
        for r in corpus.read_predictions(path)
        if r.get("stratum") is not None
    }
