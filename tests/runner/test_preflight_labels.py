"""The pre-flight refuses a classifier whose answers cannot be the corpus's labels.

A bare encoder loaded as a sequence classifier gets a classifier head initialised at random
(LABEL_0, LABEL_1): measured, it scores 0 with every prediction LABEL_0. `check` refuses it
before any attempt, naming the variant, as it refuses a model whose labels are not the
corpus's and a predictor answering outside the corpus's label set.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import make_campaign, variant
from toolkit.cli import cli
from toolkit.errors import ModelError
from toolkit.runner.preflight import checks as preflight

pytestmark = pytest.mark.campaign  # loads the sample model

CONSTANT = """
class Constant:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        return [{"id": r["id"], "label": "LABEL_0"} for r in records]
"""


def test_check_refuses_an_encoder_whose_classifier_head_transformers_initialised(
    tmp_path: Path,
) -> None:
    book = make_campaign(
        tmp_path, 8, [variant("bare", 4, head_path=None)], reference_variant="bare"
    )
    result = CliRunner().invoke(cli, ["check", str(book)])
    assert result.exit_code != 0, result.output
    said = " ".join(result.stderr.split())
    assert "variant bare: model " in said or "bare:" in said
    assert "lacks trained weights for classifier.bias, classifier.weight" in said
    assert "give head_path a linear head fitted on your labels" in said
    assert "Traceback" not in result.output


def test_check_refuses_a_predictor_answering_outside_the_corpus_label_set(
    tmp_path: Path,
) -> None:
    (tmp_path / "constant.py").write_text(CONSTANT, encoding="utf-8")
    book = make_campaign(
        tmp_path,
        8,
        [variant("const", 4, engine="python:constant:Constant", model_path="head", head_path=None)],
        reference_variant="const",
    )
    result = CliRunner().invoke(cli, ["check", str(book)])
    assert result.exit_code != 0, result.output
    said = " ".join(result.stderr.split())
    assert "const: predicts 'LABEL_0', outside the corpus's label set ('emma'," in said


def test_the_sample_head_passes_on_a_corpus_using_some_of_its_labels() -> None:
    """A corpus of four of the head's six labels is fine: the head can answer each of them."""
    head = ["emma", "persuasion", "pride-and-prejudice", "sense-and-sensibility"]
    preflight._refuse_foreign_labels(variant("b1", 1), [*head, "mansfield-park"], [], head[:3])
    with pytest.raises(ModelError, match="can only predict 'LABEL_0', 'LABEL_1', and the "):
        preflight._refuse_foreign_labels(variant("b1", 1), ["LABEL_0", "LABEL_1"], [], head)
    # An unlabelled corpus holds nothing to compare with.
    preflight._refuse_foreign_labels(variant("b1", 1), None, ["LABEL_0"], [])
