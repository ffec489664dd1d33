"""A corpus holding a lone surrogate (JSON "\\ud800"): refused when read, not a
UnicodeEncodeError when the predictions file is written (toolkit.evidence.corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import CorpusError
from toolkit.evidence import corpus

HINT = (
    "fix the text or its encoding: a \\ud800-\\udfff escape is only valid as half of a "
    "pair (e.g. \\ud83d\\ude00), or write the character itself in UTF-8"
)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"id": "b", "text": "caf\\ud800e"}',
            "line 2 (id 'b'): the text holds a lone surrogate \\ud800 at character 4",
        ),
        (
            '{"id": "b\\udfff", "text": "x"}',
            "line 2 (id 'b\\udfff'): the id holds a lone surrogate \\udfff at character 2",
        ),
        (
            '{"id": "b", "text": "x", "label": "\\ud83d"}',
            "line 2 (id 'b'): the label holds a lone surrogate \\ud83d at character 1",
        ),
    ],
    ids=["text", "id", "label"],
)
def test_a_lone_surrogate_is_refused_with_file_line_and_id(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "c.jsonl"
    first = (
        '{"id": "a", "text": "ok", "label": "p"}'
        if "label" in line
        else '{"id": "a", "text": "ok"}'
    )
    path.write_text(f"{first}\n{line}\n", encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        corpus.read_corpus(path)
    assert caught.value.message == (
        f"{path}: {message}, which is not a character and cannot be written as UTF-8"
    )
    assert caught.value.hint == HINT
    str(caught.value).encode("utf-8")  # the message itself prints anywhere


def test_a_surrogate_pair_is_one_character_and_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "smile \\ud83d\\ude00"}\n', encoding="utf-8")
    (item,) = corpus.read_corpus(path)
    assert item.text == "smile \N{GRINNING FACE}"
    corpus.write_predictions(tmp_path / "p.jsonl", [{"id": item.id, "prediction": item.text}])
