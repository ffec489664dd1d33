"""Every file and folder the toolkit keeps beside a workbook ``NAME.xlsx``, named once.

Evidence (kept with the workbook, copied with it):

- ``NAME.journal.jsonl``: every attempt's record, appended before the workbook sees it;
  ``NAME.journal.torn-N``: a torn last line set aside;
- ``NAME.chain.json``: the chain anchor (how many Attempts rows the chain reaches, its head);
- ``NAME.runs.jsonl``: the run log: each campaign run's start, its end with the attempts it
  started (each journal start line names its run), and its time breakdown;
- ``NAME_predictions/ATTEMPT.jsonl``: each attempt's predictions file;
- ``NAME.bak.xlsx``: the workbook before its last save.

Locks, each named for what it guards (none is evidence):

- ``NAME.xlsx.lock``: the *workbook file* — one save at a time (``store.writer_lock``);
- ``NAME.campaign.lock`` and ``NAME.campaign.json``: the *campaign* — one ``run`` at a time
  on a workbook, and who holds it (``runner.driver.campaign_lock``).
  (The *protocol lock* of ``evidence.locking`` is no file: a hash recorded in Audit.)

Outputs: ``NAME_report/``, the report's folder.
"""

from __future__ import annotations

from pathlib import Path

JOURNAL_SUFFIX = ".journal.jsonl"
TORN_INFIX = ".journal.torn-"


def _named(workbook: str | Path, suffix: str) -> Path:
    workbook = Path(workbook)
    return workbook.with_name(workbook.stem + suffix)


def journal(workbook: str | Path) -> Path:
    """``NAME.journal.jsonl``."""
    return _named(workbook, JOURNAL_SUFFIX)


def torn(workbook: str | Path, number: int) -> Path:
    """``NAME.journal.torn-N``: where a torn last line of the journal is kept."""
    return _named(workbook, f"{TORN_INFIX}{number}")


def anchor(workbook: str | Path) -> Path:
    """``NAME.chain.json``."""
    return _named(workbook, ".chain.json")


def predictions_folder(workbook: str | Path) -> Path:
    """``NAME_predictions/``: each attempt's predictions file (``merge`` copies another
    machine's there too)."""
    return _named(workbook, "_predictions")


def predictions_file(workbook: str | Path, attempt_id: str) -> Path:
    """``NAME_predictions/ATTEMPT.jsonl``."""
    return predictions_folder(workbook) / f"{attempt_id}.jsonl"


def backup(workbook: str | Path) -> Path:
    """``NAME.bak.xlsx``: the workbook as it was before its last save."""
    return _named(workbook, ".bak.xlsx")


def workbook_lock(workbook: str | Path) -> Path:
    """``NAME.xlsx.lock``: held while one command saves the workbook."""
    workbook = Path(workbook)
    return workbook.with_name(workbook.name + ".lock")


def campaign_lock(workbook: str | Path) -> Path:
    """``NAME.campaign.lock``: held while one ``run`` drives the campaign."""
    return _named(workbook, ".campaign.lock")


def campaign_holder(workbook: str | Path) -> Path:
    """``NAME.campaign.json``: who holds (or last held) the campaign lock."""
    return _named(workbook, ".campaign.json")


def report_folder(workbook: str | Path) -> Path:
    """``NAME_report/``: the report's files."""
    return _named(workbook, "_report")


def run_times(workbook: str | Path) -> Path:
    """``NAME.runs.jsonl``: the run log (:mod:`toolkit.evidence.run_log`): each run's start, its
    end and its time breakdown, one JSON line each."""
    return _named(workbook, ".runs.jsonl")
