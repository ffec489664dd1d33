"""Journal and corpus lines a hostile campaign writes by hand (#39, Medium): each is an error
naming its file and line, never a traceback (toolkit.evidence.journal, corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolkit.cli import cli
from toolkit.errors import CorpusError, WorkbookError
from toolkit.evidence import corpus, journal
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData

GOOD = journal.record({"attempt_id": "a1", "variant_id": "b1"}, {"manifest_id": "m1"})


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"format":"iteralab-attempt/1"}', " (its 'attempt' is not an object)"),
        (
            '{"format":"iteralab-attempt/1","attempt":{"attempt_id":"a2"},"manifest":"m"}',
            " (its 'manifest' is not an object)",
        ),
        ('{"format":"iteralab-attempt/1","attempt":{}}', " (its attempt has no attempt_id)"),
        (
            '{"format":"iteralab-attempt-start/1"}',
            " (a start line without its attempt_id and spec)",
        ),
        ("[1, 2]", " (not a JSON object)"),
    ],
)
def test_a_record_of_the_wrong_shape_is_named_by_its_line(
    tmp_path: Path, runner: CliRunner, line: str, why: str
) -> None:
    book = tmp_path / "camp.xlsx"
    store.save(WorkbookData.empty(), book)
    journal.journal_path(book).write_text(json.dumps(GOOD) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(WorkbookError) as err:
        journal.read(book)
    assert err.value.message == (
        f"{journal.journal_path(book)}: line 2 is not an iteralab-attempt/1 record{why}"
    )
    result = runner.invoke(cli, ["ingest", str(book)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {journal.journal_path(book)}: line 2 is not")


def test_brackets_nested_deeper_than_python_reads_are_a_named_line(tmp_path: Path) -> None:
    book = tmp_path / "camp.xlsx"
    journal.journal_path(book).write_text(
        json.dumps(GOOD) + "\n" + "[" * 100_000 + "\n", encoding="utf-8"
    )
    with pytest.raises(
        WorkbookError,
        match=r"line 2 is not a journal record \(nested too "
        r"deep to read\)",
    ):
        journal.read(book)


def test_a_corpus_line_nested_5000_deep_is_a_corpus_error(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        '{"id": "a", "text": "x"}\n{"id": "b", "text": ' + "[" * 5000 + "]" * 5000 + "}\n",
        encoding="utf-8",
    )
    with pytest.raises(CorpusError) as err:
        corpus.read_corpus(path)
    assert err.value.message == (
        f"{path}: line 2: nested too deep to read (brackets inside brackets, thousands deep)"
    )


def test_a_record_giving_one_key_twice_is_named_by_its_line(tmp_path: Path) -> None:
    """Python's reader kept the second measured_s silently."""
    book = tmp_path / "camp.xlsx"
    line = json.dumps(GOOD).replace('"variant_id": "b1"', '"measured_s": 20.1, "measured_s": 0.1')
    journal.journal_path(book).write_text(json.dumps(GOOD) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(WorkbookError) as err:
        journal.read(book)
    assert err.value.message == (
        f"{journal.journal_path(book)}: line 2 is not a journal record (it gives the key "
        "'measured_s' twice: the runner writes each key once, and a reader would keep one of "
        "the two values silently)"
    )


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_record_holding_nan_or_infinity_is_named_by_its_line(
    tmp_path: Path, constant: str
) -> None:
    """It reached the workbook writer, which raised a TypeError."""
    book = tmp_path / "camp.xlsx"
    line = json.dumps(GOOD).replace('"variant_id": "b1"', f'"measured_s": {constant}')
    journal.journal_path(book).write_text(json.dumps(GOOD) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(WorkbookError) as err:
        journal.read(book)
    assert err.value.message == (
        f"{journal.journal_path(book)}: line 2 is not a journal "
        f"record (it holds {constant}, which no measurement is)"
    )
