"""Task kinds: what one attempt loads, runs, checks and records, per Protocol task.

From the top down:

- :func:`toolkit.runner.attempt.run_attempt` picks the kind of the Protocol's task
  (:mod:`.kinds`) and hands it the attempt;
- a *task kind* (:mod:`.classification`, :mod:`.generation`) declares its steps for the
  phases every attempt runs through (:meth:`toolkit.runner.tasks.phases.AttemptRun.run_steps`):
  ``session``, ``load`` (the model and its first, untimed calls), ``warm_pass``, ``measure``
  (the measured window), ``phase_done``; then its own evaluation, export, Manifest row and
  cells (``record``);
- beneath a kind, an *engine* (:mod:`toolkit.runner.engines`): load a model, predict a batch
  of records to outputs (a classifier) or generate a list of prompts (a generator),
  synchronize, close. torch is the engine every kind ships with; another engine adds its
  loader to :mod:`toolkit.runner.engines.registry` and the kinds above it stay as they are;
- what every kind records alike: :mod:`.cells` (the row), :mod:`.manifest` (the Manifest
  row), :mod:`.predictions` (the file read back), :mod:`.failures`, :mod:`.process_state`
  (threads, seed, progress events); :mod:`.evaluation` and :mod:`.agreement` (the quality
  checks);
- :mod:`.columns`: which measured Attempts column each kind fills; every row is checked
  against the layout before it is recorded (a measured column with neither a value nor a
  reason is a bug, never a row).
"""
