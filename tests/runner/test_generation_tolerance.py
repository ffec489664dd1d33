"""R16 for generation on the sample causal LM: chrF and each subgroup's chrF within the
tolerance of the reference variant's, and the generation fields of `run --json`.

Made deterministic without mocks: a first campaign of the fp32 reference records its
outputs, which become the prompts' ``reference`` texts, so the reference scores chrF 1.0 in
every subgroup. The differing variant keeps only the last 8 tokens of each prompt
(``max_length`` 8, prompts truncated): its outputs for the prompts it cuts (subgroup
``cut=yes``) differ from the reference's, those it keeps whole (``cut=no``) are the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import SAMPLES, attempts, gen_variant, make_generation_campaign
from toolkit import layout
from toolkit.cli import cli
from toolkit.commands.documents import attempt_document
from toolkit.evidence import corpus
from toolkit.plumbing.digests import file_sha256
from toolkit.runner import decoding
from toolkit.runner.engines import causal_lm
from toolkit.runner.tasks import generation as generation_kind

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

CUT_AT = 8
PROMPTS = 12


def _json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference's own outputs as references, then both variants run with --json."""
    first = make_generation_campaign(
        tmp_path_factory.mktemp("first"),
        PROMPTS,
        [gen_variant("b1-fp32", 1)],
        reference_variant="b1-fp32",
        warmup_rule="none",
        subgroups="none",
        stop_rule="max_new_tokens",
    )
    result = CliRunner().invoke(cli, ["run", str(first)])
    assert result.exit_code == 0, result.output
    row = attempts(first)[0]
    outputs = corpus.read_predictions(first.parent / row["predictions_path"])
    lines = (SAMPLES / "prompts.jsonl").read_text(encoding="utf-8").splitlines()[:PROMPTS]
    prompts = []
    for line, out in zip(lines, outputs, strict=True):
        prompt = json.loads(line)
        assert prompt["id"] == out["id"]
        if not out["prediction"].strip():
            continue  # chrF needs a reference text
        prompts.append(
            {
                "id": prompt["id"],
                "text": prompt["text"],
                "reference": out["prediction"],
                "cut": "yes" if out["prompt_tokens"] > CUT_AT else "no",
            }
        )
    assert {p["cut"] for p in prompts} == {"yes", "no"}  # both subgroups in the slice
    book = make_generation_campaign(
        tmp_path_factory.mktemp("second"),
        0,
        [gen_variant("b1-fp32", 1), gen_variant("b1-cut", 1, series=2, max_length=CUT_AT)],
        extra_prompts=prompts,
        reference_variant="b1-fp32",
        warmup_rule="none",
        subgroups="cut",
        tolerance=0.0,
        stop_rule="max_new_tokens",
    )
    result = CliRunner().invoke(cli, ["run", str(book), "--json"])
    assert result.exit_code == 0, result.output
    return {
        "book": book,
        "lines": _json_lines(result.output),
        "rows": {r["variant_id"]: r for r in attempts(book)},
    }


def test_a_subgroup_below_the_reference_less_the_tolerance_fails_by_name(
    campaign: dict[str, Any],
) -> None:
    ref, cut = campaign["rows"]["b1-fp32"], campaign["rows"]["b1-cut"]
    assert ref["metric_value"] == 1.0 and ref["quality_verdict"] == "pass"
    assert ref["subgroup_metrics"].startswith("cut=")
    assert "cut=yes 1.0000" in ref["subgroup_metrics"]
    assert cut["status"] == "completed" and cut["truncated"] > 0
    groups = cut["subgroup_metrics"]
    assert "cut=no 1.0000" in groups  # the prompts it keeps whole: the reference's outputs
    short_of = float(groups.split("cut=yes ")[1].split()[0])
    assert short_of < 1.0
    assert cut["quality_verdict"] == "fail" and cut["corpus_accepted"] == "no"
    assert (
        f"subgroup cut=yes {short_of:.4f} below reference 1.0000 - tolerance 0.0000" in cut["notes"]
    )
    assert "subgroup cut=no" not in cut["notes"]  # within: not named
    assert f"chrF {cut['metric_value']:.4f} below reference 1.0000" in cut["notes"]


def test_run_json_lines_hold_the_generation_fields(campaign: dict[str, Any]) -> None:
    lines = campaign["lines"]
    assert [d["format"] for d in lines] == ["iteralab-attempt/1"] * 2 + ["iteralab-run/1"]
    for document in lines[:2]:
        row = campaign["rows"][document["variant_id"]]
        for name in decoding.GENERATION_COLUMNS:
            reason = layout.ATTEMPTS.column(name).reason
            assert document[name] == row[name], name  # the Attempts row's, same key
            assert document[reason] == row[reason], reason
            assert (document[name] is None) != (document[reason] is None), name
        assert document["generated_tokens"] > 0 and document["ttft_s"] > 0
    ref, cut = lines[0], lines[1]
    assert ref["variant_id"] == "b1-fp32"
    assert ref["token_agreement"] is None
    assert ref["token_agreement_reason"] == "this is the reference variant"
    assert 0 <= cut["token_agreement"] < 1 and cut["token_agreement_reason"] is None
    assert list(cut)[-1] == "notes"
    # A classification protocol's lines stay as they were: no generation keys.
    plain = attempt_document({"attempt": campaign["rows"]["b1-cut"]})
    assert not set(decoding.GENERATION_COLUMNS) & set(plain)


def _spec(book: Path, row: dict[str, Any], reference: dict[str, Any] | None) -> SimpleNamespace:
    from toolkit.workbook import store

    data = store.read(book)
    variant = next(v for v in data.tables["Variants"] if v["variant_id"] == row["variant_id"])
    return SimpleNamespace(
        protocol=data.forms["Protocol"],
        variant=variant,
        base=book.parent,
        predictions_file=book.parent / row["predictions_path"],
        reference=reference,
    )


def test_before_the_reference_has_a_chrf_the_tolerance_is_not_evaluated(
    campaign: dict[str, Any],
) -> None:
    """The recorded predictions file of the cut variant, evaluated again: without a
    reference attempt it is not evaluated; against the reference's file it fails again."""
    book, rows = campaign["book"], campaign["rows"]
    cut = rows["b1-cut"]
    window = causal_lm.GenerationWindow()
    window.items = corpus.read_corpus(book.parent / "prompts.jsonl")
    sha = file_sha256(book.parent / cut["predictions_path"])
    notes: list[str] = []
    alone = generation_kind._evaluate(
        _spec(book, cut, None), sha, window, complete=True, notes=notes
    )
    assert alone is not None and alone["verdict"] == "not evaluated"
    assert "reference b1-fp32 not yet measured: tolerance unchecked" in "; ".join(notes)
    ref = rows["b1-fp32"]
    reference = {
        k: ref[k] for k in ("variant_id", "attempt_id", "predictions_path", "predictions_sha256")
    }
    notes = []
    again = generation_kind._evaluate(
        _spec(book, cut, reference), sha, window, complete=True, notes=notes
    )
    assert again is not None and again["verdict"] == "fail"
    assert again["subgroups"] == cut["subgroup_metrics"]
    assert "subgroup cut=yes" in "; ".join(notes)
