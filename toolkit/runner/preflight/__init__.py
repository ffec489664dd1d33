"""The pre-flight: each distinct model loaded once and one batch run before a campaign spends
its hours.

- ``checks``: the checks themselves (torch), variant by variant;
- ``result``: their outcome, as the campaign's process reads it back (no torch);
- ``heard``: whether Ctrl-C or SIGTERM arrived meanwhile (a predictor's own KeyboardInterrupt
  is its fault, not a stop).

Run in a worker process by :mod:`toolkit.runner.driver.preflight_apart`, so that the
campaign's own process never imports torch. Importing this package imports no torch.
"""
