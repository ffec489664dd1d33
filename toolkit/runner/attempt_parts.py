"""What every kind of attempt (classification, generation) builds its row with.

One place for the cell rule (a measurement is a value or an empty cell with its
reason), the error text a failed row carries, the traceback a failure must
drop before memory is released, the CUDA errors that end a shared campaign,
the seed an attempt runs with (R17), the process state every attempt starts
from, the cells every kind fills alike, the predictions file read back, and
the Manifest row's shared columns and id. The phases themselves:
:mod:`toolkit.runner.tasks.phases`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from toolkit import layout
from toolkit.evidence import corpus
from toolkit.evidence.measured_cells import LAYOUT_CELL
from toolkit.plumbing.clock import now_text
from toolkit.plumbing.digests import file_sha256
from toolkit.runner import plan
from toolkit.runner.engines.contract import ManifestFacts
from toolkit.runner.instruments import precision, probes, reproducibility
from toolkit.runner.spec import AttemptSpec

#: torch's threads in this process before any attempt pinned its own. An attempt that
#: declares none runs with these, not with whatever the previous attempt in a shared
#: campaign process declared (torch.set_num_threads outlives the attempt).
STARTING_THREADS = torch.get_num_threads()


def attempt_threads(spec: Any) -> int:
    """The torch threads ``spec`` runs with: its own, else the process's starting count."""
    return int(spec.threads or STARTING_THREADS)


#: Where an attempt sends its progress events (phase changes, items done).
Emit = Callable[[dict[str, Any]], None]


#: Cells.put: a column's value, or None and the reason it is empty.
Put = Callable[..., None]


class AttemptTimeout(Exception):
    """The attempt ran past its allowed duration."""


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


def error_text(exc: BaseException) -> str:
    """A failure as one line of the row's notes: its type and the first line of its text."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:400]}" if text else type(exc).__name__


def forget_traceback(error: BaseException) -> None:
    """Drop the frames a failure holds (with them the batch's tensors and the model): an
    exception caught in a frame it references is a cycle only the collector would free."""
    pending: list[BaseException | None] = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending += [current.__cause__, current.__context__]


def breaks_cuda(error: BaseException) -> bool:
    """Whether ``error`` is a CUDA error other than out-of-memory: after one, the process's
    CUDA context may be unusable (a sticky error fails every later CUDA call)."""
    if isinstance(error, torch.OutOfMemoryError) or not isinstance(error, RuntimeError):
        return False
    accelerator = getattr(torch, "AcceleratorError", None)  # torch >= 2.8
    if accelerator is not None and isinstance(error, accelerator):
        return True
    return any(mark in str(error) for mark in ("CUDA error", "CUBLAS_STATUS_", "CUDNN_STATUS_"))


def attempt_seed(spec: Any) -> int | None:
    """The seed the attempt runs with: its slot's, else the protocol's first (R17)."""
    if spec.seed is not None:
        return int(spec.seed)
    declared = plan.seeds(spec.protocol.get("seeds"))
    return declared[0] if declared else None


def start_process(
    spec: Any, device: torch.device
) -> tuple[int, int | None, tuple[int, int] | None]:
    """Put this process in the state the attempt is measured in: torch threads, fp32 at full
    precision (R16), the Protocol's determinism choices and the attempt's seed (R17), CUDA
    peaks reset after memory is released. Returns (threads, seed, the peaks' baseline)."""
    threads = attempt_threads(spec)
    torch.set_num_threads(threads)
    precision.pin_fp32()
    reproducibility.apply(spec.protocol, device)
    seed = attempt_seed(spec)
    reproducibility.seed(seed)
    return threads, seed, probes.start_cuda_peaks(device)


# ---- the cells every kind of attempt fills alike


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


# ---- evaluation: the predictions file read back, the reference's checked


def read_back(spec: AttemptSpec, predictions_sha: str, notes: list[str]) -> list[dict[str, Any]]:
    """The exported predictions file's rows; a file changed since export is noted."""
    rows = corpus.read_predictions(spec.predictions_file)
    if file_sha256(spec.predictions_file) != predictions_sha:
        notes.append("predictions file changed between export and evaluation")
    return rows


def reference_changed(ref: dict[str, Any]) -> str:
    """Why the reference variant's predictions file is not used."""
    return f"reference predictions {ref['predictions_path']} missing or changed since its attempt"


def checked_reference(spec: AttemptSpec, notes: list[str]) -> Path | None:
    """The reference variant's predictions file when it is still what its attempt wrote
    (None without a reference; a missing or changed file is noted and not used)."""
    ref = spec.reference
    if ref is None:
        return None
    path = spec.base / ref["predictions_path"]
    if not path.exists() or file_sha256(path) != ref["predictions_sha256"]:
        notes.append(reference_changed(ref) + ": not used")
        return None
    return path


# ---- the Manifest row


def manifest_content(
    spec: AttemptSpec, loaded: ManifestFacts | None, seed: int | None
) -> dict[str, Any]:
    """The Manifest columns every kind of attempt fills alike: the variant's settings, the
    model's revisions (None when it was not loaded), the seeds and the process policy."""
    variant, protocol = spec.variant, spec.protocol
    return {
        "variant_id": variant["variant_id"],
        "corpus_path": protocol["corpus_path"],
        "model_revision": loaded.model_revision if loaded else None,
        "tokenizer_revision": loaded.tokenizer_revision if loaded else None,
        "precision": variant["precision"],
        "quantization": variant["quantization"],
        "compile": variant["compile"],
        "attention_backend": loaded.attention_backend if loaded else variant["attention_backend"],
        "padding": variant["padding"],
        "max_length": int(variant["max_length"]),
        "seeds": (
            f"torch.manual_seed({seed}); protocol seeds {protocol.get('seeds')}"
            if seed is not None
            else f"none set (protocol seeds {protocol.get('seeds')!r})"
        ),
        "process_policy": protocol.get("process_policy"),
    }


def manifest_id(content: dict[str, Any]) -> str:
    """The Manifest row's id: a hash of its content."""
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return "m-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def manifest_row(content: dict[str, Any], measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """Complete a Manifest row: ``manifest_id`` from its content and the ``measured``
    columns, ``recorded_at`` now.

    The peak probe varies from run to run, and an attempt's utilisation divides by the peak
    it measured (or reused): hashing it gives attempts that probed apart, or not at all,
    rows of their own, so each row shows the peak its attempts divided by.
    """
    hashed = dict(content)
    if measured:
        hashed["measured"] = measured
    row = {"manifest_id": manifest_id(hashed), "recorded_at": now_text()}
    row.update(content)
    row.update(measured or {})
    return {name: row.get(name) for name in layout.MANIFEST.names}
