"""One JSON line per request: what was planned, what was sent and what came back, when.

Times are seconds on the client's monotonic clock: a measured request's from the measured
phase's start (the first is due at 0), a warm-up request's from the warm-up's start. Each
line is written, flushed and synced as its request ends, so a run stopped by Ctrl-C or
SIGKILL keeps every request that finished before it. The metrics are computed from this
file alone (:mod:`toolkit.serving.metrics`); its SHA-256 is the run's evidence.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import TracebackType
from typing import Any

from toolkit.errors import ToolkitError, UsageError

MEASURED = "measured"
WARMUP = "warmup"
#: Where a record's output token count comes from: the server's own ``usage`` (asked for
#: with ``stream_options.include_usage``), or the count of streamed pieces that carried text.
FROM_USAGE = "usage"
FROM_STREAM = "stream"


@dataclass
class Record:
    """One request. ``ok`` is True only for a stream that ended with a finish reason or
    ``[DONE]``; a failed request keeps what it got and says why in ``reason``."""

    index: int
    phase: str
    prompt_id: str
    scheduled_s: float
    sent_s: float | None = None
    #: When the request's headers began to go out (httpx's trace of the first header write):
    #: the send less the client's own time to build the request and find a connection.
    #: Some peers (guidellm) start their time to first token here; None in files written
    #: before it was recorded, and for a request that never reached the wire.
    headers_s: float | None = None
    first_token_s: float | None = None
    token_s: list[float] = field(default_factory=list)
    end_s: float | None = None
    ok: bool = False
    reason: str | None = None
    http_status: int | None = None
    output_tokens: int | None = None
    output_tokens_from: str | None = None
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    text: str = ""

    @property
    def lag_s(self) -> float | None:
        """How late the client sent it: actual send minus due time."""
        return None if self.sent_s is None else self.sent_s - self.scheduled_s


_NAMES = tuple(f.name for f in fields(Record))
#: Keys a requests file written before them lacks (read as None).
_ADDED_LATER = frozenset({"headers_s"})


class RecordWriter:
    """Appends records to a new JSONL file, each synced to disk before the next."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._handle = path.open("x", encoding="utf-8")
        except FileExistsError as exc:
            raise UsageError(
                f"{path}: a run already wrote its requests here",
                hint="give another output folder (a run never overwrites its evidence)",
            ) from exc

    def write(self, record: Record) -> None:
        """Append one record as a JSON line and sync it."""
        self._handle.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file (every record is already on disk)."""
        self._handle.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_records(path: str | Path) -> list[Record]:
    """Every record of a requests file, in file order (the order requests ended).

    Raises ToolkitError naming the file and line of a line that is not a record."""
    path = Path(path)
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                records.append(_record(line, path, number))
    return records


def _record(line: str, path: Path, number: int) -> Record:
    try:
        data: Any = json.loads(line)
        if not isinstance(data, dict) or (set(data) ^ set(_NAMES)) - _ADDED_LATER:
            raise ValueError(f"expected exactly the keys {', '.join(_NAMES)}")
        return Record(**data)
    except (ValueError, TypeError) as exc:
        raise ToolkitError(
            f"{path}, line {number}: not a request record ({exc})",
            hint="a requests file is written by serve-bench; never edit it by hand",
        ) from exc
