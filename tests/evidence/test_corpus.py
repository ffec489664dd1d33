"""Corpus rules, fingerprint, strata, and checks of a predictions file (toolkit.evidence.corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.errors import CorpusError, ProtocolError
from toolkit.evidence import corpus
from toolkit.plumbing.digests import file_sha256
from toolkit.runner.tasks import evaluation


def _jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_reads_jsonl_items_in_file_order(tmp_path: Path) -> None:
    """Ids, texts and labels come back as written; whole-number ids become text."""
    path = _jsonl(
        tmp_path / "c.jsonl",
        {"id": "a", "text": "one", "label": "x"},
        {"id": 7, "text": "two", "label": "y"},
    )
    items = corpus.read_corpus(path)
    assert [(i.id, i.text, i.label, i.line) for i in items] == [
        ("a", "one", "x", 1),
        ("7", "two", "y", 2),
    ]


def test_reads_csv_with_quoted_line_breaks(tmp_path: Path) -> None:
    """A CSV corpus with a header; a quoted field may hold a comma and a line break."""
    path = tmp_path / "c.csv"
    path.write_text('id,text,label\na,"one, and\ntwo",x\nb,three,y\n', encoding="utf-8")
    items = corpus.read_corpus(path)
    assert [(i.id, i.text, i.line) for i in items] == [("a", "one, and\ntwo", 2), ("b", "three", 4)]


def test_labels_are_optional_for_the_whole_corpus(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", {"id": "a", "text": "one"}, {"id": "b", "text": "two"})
    assert [i.label for i in corpus.read_corpus(path)] == [None, None]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n',
            "line 2: duplicate id 'a' (first on line 1)",
        ),
        ('{"id": "a", "text": "x"}\n{"text": "y"}\n', "line 2: no id"),
        ('{"id": "a", "text": "x"}\n{"id": " ", "text": "y"}\n', "line 2: empty id"),
        ('{"id": "a", "text": "  "}\n', "line 1 (id 'a'): empty text"),
        ('{"id": "a", "text": "x"}\n{"id": "b"}\n', "line 2 (id 'b'): text is missing"),
        ('{"id": "a", "text": "x"}\nnot json\n', "line 2: not a JSON object"),
        (
            '{"id": "a", "text": "x", "label": "p"}\n{"id": "b", "text": "y"}\n',
            "line 2 (id 'b'): no label, while 1 other lines have one",
        ),
        ('{"id": [1], "text": "x"}\n', "line 1: id [1] is neither text nor a whole number"),
        ("", "the corpus holds no item"),
    ],
)
def test_corpus_errors_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        corpus.read_corpus(path)
    assert caught.value.message.startswith(f"{path}: {message}")
    assert caught.value.hint


def test_undecodable_bytes_name_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "text": "x"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(CorpusError) as caught:
        corpus.read_corpus(path)
    assert caught.value.message == (
        f"{path}: line 2, byte column 25: bytes that are not UTF-8 (b'\\xe9\"}}\\n')"
    )


def test_csv_without_a_text_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("id,body\na,x\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"line 1: the header has no 'text' column"):
        corpus.read_corpus(path)


def test_other_formats_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("hello\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="a corpus is a .jsonl or .csv file"):
        corpus.read_corpus(path)


def test_fingerprint_covers_ids_and_texts_in_order_not_labels() -> None:
    a = [corpus.Item("1", "x", "p"), corpus.Item("2", "y", "q")]
    relabelled = [corpus.Item("1", "x", "z"), corpus.Item("2", "y", "z")]
    swapped = list(reversed(a))
    assert corpus.fingerprint(a) == corpus.fingerprint(relabelled)
    assert corpus.fingerprint(a) != corpus.fingerprint(swapped)
    # The definition, written out: sha256 over compact JSON [id, text] lines.
    import hashlib

    assert corpus.fingerprint(a) == hashlib.sha256(b'["1","x"]\n["2","y"]\n').hexdigest()


def test_same_items_in_csv_and_jsonl_share_a_fingerprint(tmp_path: Path) -> None:
    jsonl = _jsonl(tmp_path / "c.jsonl", {"id": "a", "text": "é, x"}, {"id": "b", "text": "y"})
    csv_path = tmp_path / "c.csv"
    csv_path.write_text('id,text\na,"é, x"\nb,y\n', encoding="utf-8")
    assert corpus.fingerprint(corpus.read_corpus(jsonl)) == corpus.fingerprint(
        corpus.read_corpus(csv_path)
    )


@pytest.mark.parametrize(
    ("tokens", "stratum"),
    [(1, "short"), (32, "short"), (33, "medium"), (128, "medium"), (129, "long"), (900, "long")],
)
def test_strata_bounds(tokens: int, stratum: str) -> None:
    assert corpus.stratum(tokens) == stratum


def test_strata_text_states_the_bounds() -> None:
    assert corpus.strata_text({"short": 600, "medium": 300, "long": 100}) == (
        "short 600 (1-32 tokens), medium 300 (33-128 tokens), long 100 (>=129 tokens)"
    )


def test_predictions_file_round_trip_and_hash(tmp_path: Path) -> None:
    rows = [{"id": "a", "prediction": "x", "label": "x", "stratum": "short"}]
    path = tmp_path / "p" / "a1.jsonl"
    sha = corpus.write_predictions(path, rows)
    assert sha == file_sha256(path)
    assert corpus.read_predictions(path) == rows


def test_duplicate_and_missing_ids_are_found_in_the_predictions_file(tmp_path: Path) -> None:
    """Set equality from the file itself: duplicates, missing and unexpected ids listed."""
    path = tmp_path / "p.jsonl"
    lines = [{"id": i, "prediction": "x"} for i in ("a", "b", "b", "z")]
    corpus.write_predictions(path, lines)
    observed = [r["id"] for r in corpus.read_predictions(path)]
    check = evaluation.check_ids(["a", "b", "c", "d"], observed)
    assert (check.expected, check.observed, check.match) == (4, 3, False)
    assert check.notes() == (
        "1 duplicated id(s): b x2; 2 missing id(s): c, d; 1 unexpected id(s): z"
    )


def test_matching_ids_have_no_notes() -> None:
    check = evaluation.check_ids(["a", "b"], ["b", "a"])
    assert check.match and check.notes() == ""


def test_long_id_lists_are_cut_in_notes() -> None:
    check = evaluation.check_ids([str(i) for i in range(15)], [])
    assert check.notes() == "15 missing id(s): 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 5 more"


def test_accuracy_and_macro_f1() -> None:
    gold, pred = ["a", "a", "b", "c"], ["a", "b", "b", "b"]
    assert evaluation.metric("accuracy", gold, pred) == 0.5
    # Per class F1 = 2tp / (2tp + fp + fn): a 2/3, b 2/4, c 0.
    assert evaluation.metric("macro_f1", gold, pred) == pytest.approx((2 / 3 + 0.5 + 0) / 3)


def test_a_subgroup_is_any_corpus_field_but_an_input_s_own_keys() -> None:
    assert evaluation.parse_subgroups("stratum,genre") == ("stratum", "genre")
    with pytest.raises(ProtocolError, match="'id' cannot be a subgroup"):
        evaluation.parse_subgroups("stratum,id")
    assert evaluation.parse_subgroups("stratum, label") == ("stratum", "label")
    assert evaluation.parse_subgroups("none") == ()


STRATUM = {"s": "short", "m": "medium", "l": "long"}


def _rows(predictions: str, labels: str, strata: str) -> list[dict[str, object]]:
    """Rows from one letter per item: prediction, gold label, stratum (s, m, l)."""
    return [
        {"id": str(i), "prediction": p, "label": g, "stratum": STRATUM[s]}
        for i, (p, g, s) in enumerate(zip(predictions, labels, strata, strict=False))
    ]


def _reference(rows: list[dict[str, object]]) -> evaluation.Reference:
    return evaluation.Reference(
        "ref",
        "a001",
        {str(r["id"]): str(r["prediction"]) for r in rows},
        evaluation.metric(
            "accuracy", [str(r["label"]) for r in rows], [str(r["prediction"]) for r in rows]
        ),
        evaluation.subgroup_metrics("accuracy", rows, ("stratum",)),
    )


def _evaluate(
    rows: list[dict[str, object]],
    reference: evaluation.Reference | None,
    variant: str = "v",
    threshold: float = 0.5,
) -> evaluation.Evaluation:
    return evaluation.evaluate(
        rows,
        [str(i) for i in range(len(rows))],
        complete=True,
        metric_name="accuracy",
        threshold=threshold,
        tolerance=0.1,
        kinds=("stratum",),
        reference=reference,
        reference_variant="ref",
        variant_id=variant,
    )


def test_verdict_passes_within_threshold_and_tolerance() -> None:
    ref_rows = _rows("aaaaabbbbb", "aaaaabbbbb", "ssssslllll")
    rows = _rows("aaaaabbbbb", "aaaaabbbbb", "ssssslllll")
    result = _evaluate(rows, _reference(ref_rows))
    assert (result.verdict, result.metric, result.agreement) == ("pass", 1.0, 1.0)
    assert evaluation.subgroups_text(result.subgroups) == (
        "stratum=short 1.0000 (n=5); stratum=long 1.0000 (n=5)"
    )


def test_a_subgroup_outside_tolerance_fails_even_when_the_metric_passes() -> None:
    """Overall 0.9 is within 0.1 of the reference's 1.0; the short stratum's 0.8 is not."""
    gold = "aaaaaaaaaabbbbbbbbbb"
    strata = "sssssssssslllllllll" + "l"
    rows = _rows("aaaaaaaabb" + "bbbbbbbbbb", gold, strata)
    result = _evaluate(rows, _reference(_rows(gold, gold, strata)), threshold=0.5)
    assert result.verdict == "fail"
    assert result.metric == 0.9
    assert result.notes == [
        "reference a001: 18/20 predictions agree",
        "subgroup stratum=short 0.8000 below reference 1.0000 - tolerance 0.1000",
    ]


def test_below_threshold_fails() -> None:
    rows = _rows("bbbbbbbbbb", "aaaaabbbbb", "ssssslllll")
    result = _evaluate(rows, None, variant="ref", threshold=0.6)
    assert result.verdict == "fail"
    assert "accuracy 0.5000 below threshold 0.6000" in result.notes


def test_without_reference_a_non_reference_variant_is_not_evaluated() -> None:
    rows = _rows("aaaaabbbbb", "aaaaabbbbb", "ssssslllll")
    result = _evaluate(rows, None)
    assert result.verdict == "not evaluated"
    assert result.agreement_reason == "reference ref has no completed attempt yet"
    assert result.notes[-1] == (
        "reference ref not yet measured: tolerance unchecked (`iteralab report` checks again)"
    )


def test_the_reference_variant_passes_on_its_own_threshold() -> None:
    rows = _rows("aaaaabbbbb", "aaaaabbbbb", "ssssslllll")
    result = _evaluate(rows, None, variant="ref")
    assert result.verdict == "pass"
    assert result.agreement_reason == "this is the reference variant's first completed attempt"


def test_wrong_ids_fail_without_a_metric() -> None:
    rows = _rows("aaaa", "aaaa", "ssss")
    rows[3]["id"] = "0"
    result = _evaluate(rows, None, variant="ref")
    assert (result.verdict, result.metric) == ("fail", None)
    assert result.metric_reason == "ids do not match the corpus: no metric on a wrong set"
    assert result.notes == ["1 duplicated id(s): 0 x2; 1 missing id(s): 3"]


def test_an_unfinished_attempt_gets_no_metric() -> None:
    rows = _rows("aa", "aa", "ss")
    result = evaluation.evaluate(
        rows,
        ["0", "1", "2"],
        complete=False,
        metric_name="accuracy",
        threshold=0.5,
        tolerance=0.1,
        kinds=(),
        reference=None,
        reference_variant="ref",
        variant_id="ref",
    )
    assert (result.verdict, result.metric, result.ids.observed) == ("not evaluated", None, 2)
    assert result.metric_reason == "attempt did not finish: a metric needs the whole corpus"


def _lines(path: Path, ids: list[str]) -> None:
    path.write_text(
        "".join(json.dumps({"id": i, "text": f"text {i}"}) + "\n" for i in ids), encoding="utf-8"
    )


def test_read_once_parses_an_unchanged_file_once_and_a_changed_one_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "corpus.jsonl"
    _lines(path, ["a", "b"])
    parsed: list[Path] = []
    real = corpus._read_corpus
    monkeypatch.setattr(corpus, "_read_corpus", lambda p: parsed.append(p) or real(p))
    with corpus.read_once():
        first = corpus.read_corpus(path)
        first.pop()  # a caller's list is its own
        again = corpus.read_corpus(tmp_path / "." / "corpus.jsonl")  # the same file
        assert [i.id for i in again] == ["a", "b"] and len(parsed) == 1
        _lines(path, ["a", "b", "c"])  # changed: read again
        assert [i.id for i in corpus.read_corpus(path)] == ["a", "b", "c"]
        assert len(parsed) == 2
        with corpus.read_once():  # nested: the outer memo serves
            corpus.read_corpus(path)
        assert len(parsed) == 2
    corpus.read_corpus(path)  # outside: read every time
    corpus.read_corpus(path)
    assert len(parsed) == 4


def test_read_once_still_names_a_missing_corpus(tmp_path: Path) -> None:
    with corpus.read_once(), pytest.raises(CorpusError, match="cannot read the corpus"):
        corpus.read_corpus(tmp_path / "gone.jsonl")
