"""Campaign progress: rich bars on a terminal, plain lines elsewhere, nothing with --quiet.

One bar for the campaign (attempts) and one for the current attempt (items of
the phase running); one line per finished attempt.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from toolkit.commands.documents import attempt_document, emit


def attempt_line(record: dict[str, Any]) -> str:
    """One line summing up a finished attempt (under 80 characters for usual ids)."""
    row = record["attempt"]
    head = f"{row['attempt_id']:<16} {row['status']:<9}"
    if row["status"] != "completed":
        return f"{head} {(row.get('notes') or '').split('; ')[0]}"
    metric = row.get("metric_value")
    quality = f"metric {metric:.4f}" if metric is not None else "metric -"
    verdict = "accepted" if row.get("corpus_accepted") == "yes" else "not accepted"
    return (
        f"{head} measured {row['measured_s']:7.2f} s  {quality}  "
        f"{row['quality_verdict']}, {verdict}"
    )


class Display:
    """Plain output: one line per attempt, no bars (logs, pipes, tests)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def start(self, total: int, done: int = 0) -> None:
        """The campaign begins with ``total`` attempts, ``done`` of them already recorded."""

    def attempt(self, label: str) -> None:
        """An attempt starts."""

    def phase(self, name: str) -> None:
        """The running attempt enters a phase."""

    def items(self, done: int, total: int) -> None:
        """Items done in the current phase."""

    def finished(self, record: dict[str, Any]) -> None:
        """An attempt is recorded."""
        self.echo(attempt_line(record))

    def echo(self, text: str) -> None:
        """A line of output (suppressed with --quiet)."""
        if not self.quiet:
            click.echo(text)

    def stop(self) -> None:
        """The campaign ends."""


class JsonLines(Display):
    """`run --json`: one JSON line per finished attempt on stdout; other lines on stderr.
    ``own``: the columns only the Protocol's task kind fills (its lines carry them)."""

    def __init__(self, own: tuple[str, ...] = ()) -> None:
        super().__init__(False)
        self.own = own

    def finished(self, record: dict[str, Any]) -> None:
        """An attempt is recorded: its iteralab-attempt/1 line."""
        emit(attempt_document(record, self.own))

    def echo(self, text: str) -> None:
        """Warnings go to stderr, where they cannot break the JSON stream."""
        click.echo(text, err=True)


class RichDisplay(Display):
    """Live bars on a terminal: the campaign and the current attempt."""

    def __init__(self) -> None:
        super().__init__(False)
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description:<34}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        self.campaign_task: Any = None
        self.attempt_task: Any = None
        self.label = ""

    def start(self, total: int, done: int = 0) -> None:
        self.progress.start()
        self.campaign_task = self.progress.add_task("campaign", total=total, completed=done)

    def attempt(self, label: str) -> None:
        if self.attempt_task is not None:
            self.progress.remove_task(self.attempt_task)
        self.label = label
        self.attempt_task = self.progress.add_task(f"{label} start", total=None)

    def phase(self, name: str) -> None:
        self.progress.update(self.attempt_task, description=f"{self.label} {name}", completed=0)

    def items(self, done: int, total: int) -> None:
        self.progress.update(self.attempt_task, completed=done, total=total)

    def finished(self, record: dict[str, Any]) -> None:
        self.progress.console.print(attempt_line(record), highlight=False, markup=False)
        self.progress.advance(self.campaign_task)

    def echo(self, text: str) -> None:
        self.progress.console.print(text, highlight=False, markup=False)

    def stop(self) -> None:
        if self.attempt_task is not None:
            self.progress.remove_task(self.attempt_task)
            self.attempt_task = None
        self.progress.stop()


def make(quiet: bool) -> Display:
    """Bars on an interactive terminal, plain lines otherwise (or with NO_COLOR set),
    nothing when quiet."""
    if quiet:
        return Display(quiet=True)
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return RichDisplay()
    return Display()
