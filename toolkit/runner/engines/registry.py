"""The engines beside torch, registered with the task kinds' loaders (tasks.predictor).

Imported by the task kinds (tasks.classification, tasks.generation), so that a variant's
``engine`` finds its loader; the torch engine is tasks.predictor's own.
"""

from __future__ import annotations

from toolkit.plumbing import engines
from toolkit.runner.engines import ctranslate, onnx, plugin
from toolkit.runner.tasks import predictor

predictor.CLASSIFIERS.update({engines.ONNXRUNTIME: onnx.load, engines.PYTHON_PREFIX: plugin.load})
predictor.GENERATORS.update({engines.CTRANSLATE2: ctranslate.load})
