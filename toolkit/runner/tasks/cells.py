"""An Attempts row as it is built: the cell rule (a measurement is a value or an empty cell
with its reason) and the cells every kind of attempt fills alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from toolkit import layout
from toolkit.evidence.measured_cells import LAYOUT_CELL
from toolkit.runner.spec import AttemptSpec

#: Cells.put: a column's value, or None and the reason it is empty.
Put = Callable[..., None]


class Cells:
    """An Attempts row being built under the layout this process writes.

    Each :meth:`put` names a column that layout declares; a measurement is a value or an
    empty cell with its reason (the reason column is the row's to fill, not the caller's);
    and the row records the layout version in its own ``layout`` cell, so that validate
    judges it by the columns of that layout.
    """

    def __init__(self) -> None:
        self.sheet = layout.ATTEMPTS
        self.version = layout.LAYOUT_VERSION
        self._columns = {c.name: c for c in self.sheet.columns if c.name != LAYOUT_CELL}
        self.row: dict[str, Any] = {LAYOUT_CELL: self.version}

    def put(self, name: str, value: Any, reason: str | None = None) -> None:
        """Set column ``name`` to ``value``, and a measurement's reason column to ``reason``
        when ``value`` is None. AssertionError (a bug of the task kind, never a row) for a
        name the layout does not declare, a measurement empty without a reason, or a reason
        given for a column that is not a measurement."""
        column = self._columns.get(name)
        if column is None:
            raise AssertionError(
                f"Attempts column {name!r} is not one layout {self.version} lets a task kind "
                "fill: declare it in toolkit/layout.py (a measurement's reason column and the "
                "layout cell are filled by the row itself)"
            )
        if not column.measurement:
            if reason is not None:
                raise AssertionError(f"{name} is not a measurement: it has no reason column")
            self.row[name] = value
            return
        if value is None and not reason:
            raise AssertionError(f"{name} is empty without a reason")
        self.row[name] = value
        self.row[column.reason] = None if value is not None else reason


def seconds(value: float | None) -> float | None:
    """Seconds as the row holds them: microseconds, or None."""
    return None if value is None else round(value, 6)


def identity_cells(
    put: Put, spec: AttemptSpec, started_at: str, status: str, manifest_id: str
) -> None:
    """The columns that say which attempt the row is, how it ended and what it ran under."""
    for name, value in (
        ("attempt_id", spec.attempt_id),
        ("variant_id", spec.variant["variant_id"]),
        ("repetition", spec.repetition),
        ("order_position", spec.order_position),
        ("started_at", started_at),
        ("status", status),
        ("protocol_sha256", spec.protocol_sha256),
        ("manifest_id", manifest_id),
    ):
        put(name, value)


def verdict_cells(
    put: Put, status: str, verdict: str, subgroups: str | None, ids_match: bool
) -> None:
    """The quality verdict, the subgroups' metrics, and whether the corpus is accepted: a
    completed attempt whose ids match and whose verdict is pass."""
    put("quality_verdict", verdict)
    put("subgroup_metrics", subgroups)
    accepted = status == "completed" and ids_match and verdict == "pass"
    put("corpus_accepted", layout.YES if accepted else layout.NO)


def memory_cells(
    put: Put, device: torch.device, peaks: tuple[int, int] | None, rss: int | None
) -> None:
    """CUDA allocated and reserved peaks (read before anything else ran), host RSS peak."""
    if peaks is None:
        reason = (
            "cpu variant: torch.cuda memory counters do not apply"
            if device.type != "cuda"
            else "CUDA memory counters unavailable"
        )
        put("mem_allocated_peak_bytes", None, reason)
        put("mem_reserved_peak_bytes", None, reason)
    else:
        put("mem_allocated_peak_bytes", peaks[0])
        put("mem_reserved_peak_bytes", peaks[1])
    put("host_rss_peak_bytes", rss, None if rss is not None else "no peak memory figure on this OS")


def export_cell(put: Put, export_s: float | None, attempted: bool, nothing: str) -> None:
    """The export's duration; else why none: the export failed (``attempted``), or there
    was nothing to export (``nothing`` says why)."""
    if export_s is not None:
        put("export_s", seconds(export_s))
    else:
        put("export_s", None, "export failed (see notes)" if attempted else nothing)


def file_cells(put: Put, predictions_rel: str | None, predictions_sha: str | None) -> None:
    """The predictions file, and the columns a later step fills (exclusion, row hash)."""
    put("predictions_path", predictions_rel)
    put("predictions_sha256", predictions_sha)
    put("excluded", layout.NO)
    put("exclusion_reason", None)
    put("pre_amendment", layout.NO)
    put("row_sha256", None)
