"""The measurement runner: the only package that imports torch or transformers.

Its modules and subpackages, lowest layer first: each imports only what is listed before it
or shares its layer (``spec``, ``plan`` and ``decoding`` are one layer; ``preflight``,
``attempt`` and ``lost`` another). tests/project/test_architecture.py holds the runner to these
layers, and this list to the package's contents:

- ``spec``: what one attempt is told (AttemptSpec; no torch);
- ``plan``: rotation order, warm-up rule, resume (pure, no torch);
- ``decoding``: the Protocol's task and decoding rule (no torch);
- ``instruments``: what is measured and how: the installed stack, timers and memory peaks,
  the peak probe, FLOPs and utilisation, torch.compile, precision, seeds, fault injection;
- ``engines``: load a model and run it: the engine contract, the torch engine (classifier
  and causal-LM loaders, the generation window), onnxruntime, CTranslate2, a user's own
  predictor, and the one table of every engine's loader;
- ``tasks``: the task kinds (classification, generation), the phases every attempt runs
  through, the cells, Manifest row and failures every kind records alike, the quality checks;
- ``preflight``: each distinct model loaded once and one batch run before a campaign;
- ``attempt``: one attempt to a journal record: the dispatcher to its task kind, the
  interrupt guard, the row of a worker that died without one;
- ``lost``: the interrupted row of an attempt killed with its run (one rule for resume,
  ingest and report);
- ``driver``: a fresh process per attempt, the fork server, one writer per workbook, the
  campaign loop (``python -m toolkit.runner.driver.worker`` is the worker process).

Importing this package imports no torch; its modules do, lazily where they can.
"""
