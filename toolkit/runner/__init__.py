"""The measurement runner: the only package that imports torch or transformers.

- ``plan``: rotation order, warm-up rule, resume (pure, no torch);
- ``environment``: what is really installed (OS, CPU, torch build, GPU, driver);
- ``model``: resolve and load a model folder (classifier, or encoder + linear head);
- ``compilation``: torch.compile per attempt (fresh caches, counted compilations);
- ``precision``: float32 pinned to full precision (no TF32), and what could override it;
- ``probes``: host and CUDA timers, memory peaks and release, the attention kernel seen;
- ``faults``: the documented fault-injection hook used by tests;
- ``attempt``: one attempt, phase by phase, to a journal record;
- ``worker``: ``python -m toolkit.runner.worker SPEC`` runs one attempt in a fresh process;
- ``forkserver``: imports the runner once per campaign run and forks a worker per attempt;
- ``campaign``: the campaign loop (rotation, fresh processes, journal, ingest, progress);
- ``demo``: the sample campaign.

Importing this package imports no torch; its modules do, lazily where they can.
"""
