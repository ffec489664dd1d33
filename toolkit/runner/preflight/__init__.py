"""The pre-flight: each distinct model loaded once and one batch run before a campaign spends
its hours.

- ``checks``: the checks themselves (torch), variant by variant;
- ``result``: their outcome, as the campaign's process reads it back (no torch);
- ``heard``: whether Ctrl-C or SIGTERM arrived meanwhile (a predictor's own KeyboardInterrupt
  is its fault, not a stop);
- ``estimate``: the campaign's hours and cost from those batches (no torch).

Run by :mod:`toolkit.runner.driver.preflight_run`, in a worker process
(:mod:`toolkit.runner.driver.preflight_apart`) for `run`, so that the campaign's own process
never imports torch. Importing this package imports no torch.
"""
