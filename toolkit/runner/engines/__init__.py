"""Engines other than torch: what a deployer ships, measured through the same phases.

- ``cache``: converted models beside the workbook, keyed by the source model's hash;
- ``onnx``: classification by onnxruntime (export with torch.onnx's dynamo exporter,
  dynamic int8 by onnxruntime's quantizer, a session configured as a deployer would);
- ``predictor``: ``python:MODULE:CALLABLE``, a user's own predictor, and its contract;
- ``ctranslate``: generation by CTranslate2 (converted causal LM, greedy decoding).

Which engine a variant names, and whether it is installed, is
:mod:`toolkit.plumbing.engines` (no engine imported there).
"""
