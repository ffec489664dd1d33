"""Every engine's loader, by the name a variant writes in its ``engine`` cell (blank:
``torch``): one table per task, read by the task kinds through :func:`load_classifier` and
:func:`load_generator`. An engine is added by a line here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from toolkit.errors import ModelError
from toolkit.plumbing import engines
from toolkit.runner.engines import causal_lm, ctranslate, onnx, plugin
from toolkit.runner.engines.contract import Generator, Predictor
from toolkit.runner.engines.torch_engine import TorchClassifier, TorchGenerator

#: A loader of one task's engines (a classifier's or a generator's).
Loader = TypeVar("Loader")

#: Each engine's classifier loader, by the variant's ``engine`` (blank: torch).
CLASSIFIERS: dict[str, Callable[[dict[str, Any], Path], Predictor]] = {
    "torch": TorchClassifier.load,
    engines.ONNXRUNTIME: onnx.load,
    engines.PYTHON_PREFIX: plugin.load,
}
#: Each engine's generator loader, by the variant's ``engine`` (blank: torch).
GENERATORS: dict[str, Callable[[dict[str, Any], Path, causal_lm.DecodingRule], Generator]] = {
    "torch": TorchGenerator.load,
    engines.CTRANSLATE2: ctranslate.load,
}


def engine_of(variant: dict[str, Any], loaders: dict[str, Loader]) -> Loader:
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
