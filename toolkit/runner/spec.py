"""One attempt's spec: plain JSON-ready values the driver writes and a worker reads.

Kept apart from :mod:`toolkit.runner.attempt` so the driver (the campaign, the Ray
executor) builds specs without importing torch: the fork server imports torch once for
the workers, and the driver's import would only compete with it for a core.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from toolkit.plumbing import beside


@dataclass
class AttemptSpec:
    """Everything one attempt needs, as plain JSON-ready values."""

    workbook: str
    attempt_id: str
    variant: dict[str, Any]
    repetition: int
    order_position: int
    protocol: dict[str, Any]
    protocol_sha256: str
    corpus_sha256: str
    corpus_items: int
    reference: dict[str, Any] | None = None
    threads: int | None = None
    timeout_s: float | None = None
    #: The seed of this attempt's slot (R17); None: the protocol's first seed, if any (a
    #: spec written before seeds were kept apart).
    seed: int | None = None

    def to_json(self) -> str:
        """The spec as a JSON text (what the worker process reads)."""
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> AttemptSpec:
        """The spec from :meth:`to_json`'s text."""
        return cls(**json.loads(text))

    @property
    def campaign_key(self) -> str:
        """This run of the campaign: the workbook's path and the run's tag (the attempt id's
        last part), what the attempts' peak probes are merged by into the campaign's maximum
        (:func:`toolkit.runner.instruments.peak.measure`)."""
        return f"{Path(self.workbook).resolve()}#{self.attempt_id.rsplit('-', 1)[-1]}"

    @property
    def base(self) -> Path:
        """The workbook's folder: relative paths start here."""
        return Path(self.workbook).resolve().parent

    @property
    def predictions_file(self) -> Path:
        """``<workbook stem>_predictions/<attempt_id>.jsonl`` beside the workbook."""
        return beside.predictions_file(self.base / Path(self.workbook).name, self.attempt_id)
