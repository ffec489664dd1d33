"""Campaigns on a Ray cluster: the only package that imports ray (the ``cluster`` extra).

- ``labels``: a variant's label and the Ray resource a node advertises for it (pure);
- ``workers``: the ``ray start`` / ``ray stop`` command lines behind ``iteralab worker``;
- ``bundle``: the workbook-relative model folders packed once for the object store;
- ``task``: one attempt on a node (staging, fingerprint and GPU checks, the runner's
  own :func:`~toolkit.runner.attempt.run_attempt`), its predictions returned as bytes;
- ``executor``: the driver's loop: one Ray task per attempt, rotation within each
  label, labels in parallel, every write on the driver.

It sits above the runner and below the commands; ``labels`` and ``workers`` import no ray.
"""
