"""The measurement runner: the only package that imports torch or transformers.

- ``plan``: rotation order, warm-up rule, resume (pure, no torch);
- ``spec``: what one attempt is told (AttemptSpec; no torch);
- ``decoding``: the Protocol's task and decoding rule (no torch);
- ``attempt``: one attempt to a journal record: the dispatcher to its task kind, the
  interrupt guard, the row of a worker that died without one;
- ``tasks``: the task kinds (classification, generation), the columns each fills and the
  engine seam beneath them (``tasks.predictor``);
- ``phases``, ``attempt_parts``: the phases every attempt runs through and the cells every
  kind fills alike;
- ``model``, ``generation``, ``agreement``, ``evaluation``: load a classifier or a causal LM,
  the generation window, the quality checks;
- ``environment``, ``rocm_stack``: what is really installed (OS, CPU, torch build, GPU, driver);
- ``compilation``, ``precision``, ``reproducibility``: torch.compile per attempt, fp32 pinned
  to full precision, the Protocol's determinism and seeds;
- ``probes``, ``peak``, ``flops``, ``achieved``: timers and memory peaks, the peak probe,
  the FLOP count, rates and utilisation;
- ``faults``: the documented fault-injection hook used by tests and drills;
- ``worker``, ``forkserver``, ``campaign_lock``, ``campaign``: a fresh process per attempt,
  the fork server, one writer per workbook, the campaign loop.

Importing this package imports no torch; its modules do, lazily where they can.
"""
