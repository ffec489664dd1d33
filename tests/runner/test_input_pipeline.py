"""The declared input pipelines and bucketed padding, on the real sample model (CPU).

``overlapped`` gives the predictions ``sequential`` gives, to the byte of the predictions
file; ``bucket-N`` warms every (rows, width) its buckets allow on synthetic token ids before
the window, tokenizing no corpus text for it; repetition 1 records the cold pass apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import SAMPLES, attempts, make_campaign, unexplained, variant
from toolkit.cli import cli
from toolkit.evidence import corpus
from toolkit.evidence.validate import validate
from toolkit.plumbing import padding
from toolkit.report import summary
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def test_a_bucket_pads_to_the_next_multiple_capped_at_max_length() -> None:
    policy = padding.parse("bucket-32")
    assert [policy.width(n, 100) for n in (1, 32, 33, 64, 65, 99)] == [32, 32, 64, 64, 96, 100]
    assert policy.widths(100) == [32, 64, 96, 100]
    assert padding.parse("dynamic").widths(100) is None
    assert padding.parse("max_length").widths(100) == [100]


@pytest.mark.parametrize(
    ("value", "max_length", "problem"),
    [
        (
            "bucket-0",
            256,
            "'bucket-0': the bucket size after 'bucket-' must be a whole number >= 1",
        ),
        (
            "bucket-x",
            256,
            "'bucket-x': the bucket size after 'bucket-' must be a whole number >= 1",
        ),
        (
            "bucket-1.5",
            256,
            "'bucket-1.5': the bucket size after 'bucket-' must be a whole number >= 1",
        ),
        ("bucket32", 256, "'bucket32' is not a padding policy"),
        (
            "bucket-512",
            256,
            "bucket-512 is wider than max_length 256: every batch would be padded to max_length",
        ),
        ("bucket-256", 256, None),
        ("max_length", 256, None),
    ],
)
def test_padding_problems_are_named(value: str, max_length: int, problem: str | None) -> None:
    assert padding.problem(value, max_length) == problem


# ---------------------------------------------------------------- the load phase's warm-up


class _Tokenizer:
    """The model's tokenizer, recording every text it is asked to tokenize."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def __call__(self, texts: Any, *args: Any, **kwargs: Any) -> Any:
        self.texts.extend([texts] if isinstance(texts, str) else texts)
        return self.inner(texts, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __len__(self) -> int:
        return len(self.inner)


@pytest.fixture(scope="module")
def bucketed() -> tuple[Any, dict[str, Any], list[corpus.Item]]:
    """The sample model as a bucket-32, batch-4 variant loads it; 30 corpus items (the last
    batch holds 2)."""
    from toolkit.runner.engines.registry import load_classifier

    row = variant("b4-bucket32", 4, padding="bucket-32")
    return (
        load_classifier(row, SAMPLES),
        row,
        corpus.read_corpus(SAMPLES / "corpus.jsonl")[:30],
    )


def test_bucket_warm_up_covers_every_window_shape_on_synthetic_ids(
    bucketed: tuple[Any, dict[str, Any], list[corpus.Item]],
) -> None:
    from toolkit.runner.tasks.classification import Window, first_calls, run_batches

    predictor, row, items = bucketed
    seen: list[tuple[int, int]] = []
    hook = predictor.loaded.module.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(tuple(kwargs["input_ids"].shape)),
        with_kwargs=True,
    )
    recorder = _Tokenizer(predictor.tokenizer)
    predictor.tokenizer = recorder
    try:
        shapes, kernels = first_calls(predictor, row, items)
        warmed, tokenized = set(seen), list(recorder.texts)
        seen.clear()
        run_batches(predictor, row, items, Window(), lambda done: None)
    finally:
        hook.remove()
        predictor.tokenizer = recorder.inner
    assert tokenized == []  # no corpus text for the warm-up
    widths = [32, 64, 96, 128, 160, 192, 224, 256]
    assert shapes == [(rows, width) for width in widths for rows in (2, 4)]
    assert set(shapes) <= warmed
    in_window = set(seen)
    assert in_window <= warmed
    assert {width for _, width in in_window} <= set(widths)
    assert kernels is not None and kernels.startswith("2x32: ")


# ---------------------------------------------------------------- attempts, end to end


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two repetitions of batch 4 over 24 items: sequential, overlapped, and bucket-32."""
    rows = [
        variant("b4-fp32", 4),
        variant("b4-overlapped", 4, series=2, input_pipeline="overlapped"),
        variant("b4-bucket32", 4, series=2, padding="bucket-32"),
    ]
    book = make_campaign(
        tmp_path_factory.mktemp("pipeline"), 24, rows, repetitions=2, reference_variant="b4-fp32"
    )
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    return book


def _rows(book: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["variant_id"], r["repetition"]): r for r in attempts(book)}


def test_overlapped_gives_the_sequential_predictions_file_byte_for_byte(campaign: Path) -> None:
    rows = _rows(campaign)
    for repetition in (1, 2):
        sequential, overlapped = rows["b4-fp32", repetition], rows["b4-overlapped", repetition]
        assert overlapped["status"] == "completed"
        assert overlapped["predictions_sha256"] == sequential["predictions_sha256"]
        assert overlapped["padded_tokens"] == sequential["padded_tokens"]
    notes = rows["b4-overlapped", 1]["notes"]
    assert "input pipeline overlapped on the CPU: next batch tokenized on a host thread" in notes
    assert "input pipeline" not in rows["b4-fp32", 1]["notes"]


def test_bucket_padding_runs_bucket_widths_and_says_what_load_warmed(campaign: Path) -> None:
    rows = _rows(campaign)
    bucket, dynamic = rows["b4-bucket32", 1], rows["b4-fp32", 1]
    assert bucket["status"] == "completed" and bucket["ids_match"] == "yes"
    assert bucket["padded_tokens"] % 32 == 0
    assert bucket["padded_tokens"] > dynamic["padded_tokens"]
    assert (
        "load warmed 8 shape(s) on synthetic token ids, no corpus text "
        "(every bucket-32 width by the window's batch rows)"
    ) in bucket["notes"]
    assert "load warmed batch shape(s) 4x" in dynamic["notes"]
    assert "taken from the corpus's own texts" in dynamic["notes"]


def test_repetition_1_records_the_cold_pass_apart(campaign: Path) -> None:
    rows = _rows(campaign)
    for vid in ("b4-fp32", "b4-overlapped", "b4-bucket32"):
        first, second = rows[vid, 1], rows[vid, 2]
        assert isinstance(first["cold_pass_s"], float) and first["cold_pass_s"] > 0
        assert first["cold_pass_s_reason"] is None
        assert second["cold_pass_s"] is None
        assert second["cold_pass_s_reason"] == (
            "measured on repetition 1 only: one cold pass per variant"
        )
        assert unexplained(first) == [] and unexplained(second) == []
    data = store.read(campaign)
    assert validate(data, campaign) == []
    stats = {st.variant_id: st for st in summary.variant_stats(data)}
    assert stats["b4-bucket32"].cold == rows["b4-bucket32", 1]["cold_pass_s"]


def test_the_summary_and_report_show_the_cold_pass_beside_the_median(campaign: Path) -> None:
    result = CliRunner().invoke(cli, ["report", str(campaign)])
    assert result.exit_code == 0, result.output
    data = store.read(campaign)
    cold = {r["variant_id"]: r["cold_pass_s"] for r in attempts(campaign) if r["repetition"] == 1}
    shown = {r["variant_id"]: r for r in data.tables["Summary"]}
    for vid, seconds in cold.items():
        assert shown[vid]["cold_pass_s"] == pytest.approx(seconds)
    report = (campaign.parent / "campaign_report" / "report.md").read_text(encoding="utf-8")
    assert "| median (s) | cold pass (s) | min (s) |" in report


def test_an_overlapped_window_failing_midway_keeps_the_predictions_of_its_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The predictions wait on the device until the window's end; a failure brings the ones
    made so far to the host, so the failed row counts them as the sequential one would."""
    book = make_campaign(
        tmp_path,
        24,
        [variant("b4-overlapped", 4, input_pipeline="overlapped")],
        reference_variant="b4-overlapped",
    )
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "crash@8")
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    (row,) = attempts(book)
    assert (row["status"], row["items_completed"]) == ("failed", 8)
    assert "failed after 8 of 24 items: RuntimeError: simulated crash" in row["notes"]
    assert len(corpus.read_predictions(book.parent / row["predictions_path"])) == 8
    assert unexplained(row) == []
