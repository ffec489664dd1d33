"""The campaign's driver: which attempts run where, and the one writer of their records.

- ``campaign``: the campaign loop (rotation, journal, ingestion, progress) over an executor:
  :class:`~toolkit.runner.driver.campaign.LocalExecutor` here, a Ray cluster's in
  :mod:`toolkit.cluster.executor`;
- ``worker``: ``python -m toolkit.runner.driver.worker SPEC`` runs one attempt in a fresh
  process;
- ``forkserver``: imports the runner once per campaign run and forks a worker per attempt;
- ``campaign_lock``: one ``run`` per workbook at a time (the campaign lock, a file beside
  the workbook: :mod:`toolkit.plumbing.beside`).
"""
