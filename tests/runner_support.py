"""Small real campaigns for the runner tests: a slice of the sample corpus, the real head.

The slice is the first N rows of samples/corpus.jsonl; the model is the
installed all-MiniLM-L6-v2 with samples/head, on the CPU. Of the first 24
rows, 13 are classified right at max length 256 (tests/test_samples.py holds
the predictions of the first 100).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.conftest import variant  # noqa: F401  (re-exported for the runner tests)
from toolkit import layout
from toolkit.evidence import locking
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

PROTOCOL: dict[str, Any] = {
    "scenario": "offline classification of a slice of the Austen corpus (runner tests)",
    "corpus_path": "corpus.jsonl",
    "tuning_data": "calibration.jsonl (chapters apart from the corpus)",
    "validated_corpus_definition": "exactly the expected ids, accuracy over the threshold, "
    "within tolerance of the reference",
    "metric": "accuracy",
    "threshold": 0.5,
    "tolerance": 0.01,
    "reference_variant": "b1-fp32",
    "subgroups": "stratum,label",
    "warmup_rule": "first 4 items once, not timed",
    "repetitions": 1,
    "order_rotation": "rotate",
    "process_policy": "shared",
    "timing_boundary": "read corpus, tokenize, transfer, infer, predictions on the host",
    "exclusion_rule": "only a documented external cause, for every variant alike",
    "seeds": "0",
    "determinism": "inference only",
    "reproduction_target": "bounded numeric deviation",
    "expected_outputs": 1,
    "deadline": "2026-12-11T09:00+01:00",
}


def make_campaign(folder: Path, items: int, variants: list[dict[str, Any]],
                  lock: bool = True, **protocol_fields: Any) -> Path:
    """A workbook in ``folder`` with the first ``items`` corpus rows and the sample head."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SAMPLES / "corpus.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "corpus.jsonl").write_text("".join(lines[:items]), encoding="utf-8")
    shutil.copytree(SAMPLES / "head", folder / "head", dirs_exist_ok=True)
    data = WorkbookData.empty()
    data.forms["Protocol"].update({**PROTOCOL, **protocol_fields})
    for row in variants:
        data.append("Variants", row)
    if lock:
        locking.lock(data)
    path = folder / "campaign.xlsx"
    store.save(data, path)
    return path


def attempts(path: Path) -> list[dict[str, Any]]:
    """The Attempts rows of the workbook at ``path``."""
    return store.read(path).tables["Attempts"]


def unexplained(row: dict[str, Any]) -> list[str]:
    """Measurement columns of an Attempts row that are empty without a reason."""
    return [c.name for c in layout.ATTEMPTS.columns
            if c.measurement and row.get(c.name) is None and not row.get(c.reason)]
