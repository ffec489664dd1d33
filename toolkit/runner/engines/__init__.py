"""Engines: load the variant's model and run it, beneath the task kinds.

- ``contract``: what a task kind asks of a loaded model (Predictor, Generator);
- ``model``, ``causal_lm``: load a classifier or a causal LM with transformers, and the
  generation window;
- ``torch_engine``: the torch engine of both tasks, over those loaders;
- ``cache``: converted models beside the workbook, keyed by the source model's hash;
- ``onnx``: classification by onnxruntime (export with torch.onnx's dynamo exporter,
  dynamic int8 by onnxruntime's quantizer, a session configured as a deployer would);
- ``plugin``: ``python:MODULE:CALLABLE``, a user's own predictor;
- ``ctranslate``: generation by CTranslate2 (converted causal LM, greedy decoding);
- ``registry``: every engine's loader, one table per task.

Which engine a variant names, and whether it is installed, is
:mod:`toolkit.plumbing.engines` (no engine imported there).
"""
