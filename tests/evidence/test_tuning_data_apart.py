"""R2 tuning data apart: Protocol tuning_data is a path (or none) that validate reads; every
id and every normalised text it shares with the comparison corpus is a finding, and a lock
refuses the overlap unless acknowledged with a reason that Audit keeps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import filled
from tests.support.paths import FIXTURES, SAMPLES
from toolkit import layout
from toolkit.cli import cli
from toolkit.evidence import tuning
from toolkit.evidence.protocol import current_lock
from toolkit.evidence.validate import validate
from toolkit.findings import Finding
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

ROW = layout.PROTOCOL.names.index("tuning_data") + 2
TODO = (
    "remove it from the tuning data or from the corpus: the final comparison must not be "
    "data the configuration was tuned on"
)
CORPUS = [
    {"id": "a", "text": "The first text.", "label": "x"},
    {"id": "b", "text": "Hello   World", "label": "y"},
    {"id": "c", "text": "Unrelated.", "label": "x"},
]
TUNING = [
    {"id": "t1", "text": "Tuning only.", "label": "x"},
    {"id": "a", "text": "A different text under a shared id.", "label": "x"},
    {"id": "t3", "text": "hello world", "label": "y"},
]


def _book(
    folder: Path, tuning_data: str = "tune.jsonl", tuning_rows: list[dict[str, str]] | None = None
) -> Path:
    for name, rows in (("corpus.jsonl", CORPUS), ("tune.jsonl", tuning_rows or TUNING)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = filled()
    data.forms["Protocol"]["tuning_data"] = tuning_data
    path = folder / "campaign.xlsx"
    store.save(data, path)
    return path


def _tuning_findings(book: Path) -> list[Finding]:
    return [f for f in validate(store.read(book), book) if f.column == "tuning_data"]


def test_validate_names_every_shared_id_and_every_shared_normalised_text(tmp_path: Path) -> None:
    book = _book(tmp_path)
    assert _tuning_findings(book) == [
        Finding(
            "Protocol",
            ROW,
            "tuning_data",
            "tuning-overlap",
            f"the tuning data tune.jsonl (line 2) and the corpus corpus.jsonl (line 1) "
            f"share the id 'a': {TODO}",
        ),
        Finding(
            "Protocol",
            ROW,
            "tuning_data",
            "tuning-overlap",
            "the tuning data tune.jsonl (line 3, id 't3') and the corpus corpus.jsonl "
            "(line 2, id 'b') hold the same text once case and whitespace are ignored "
            f"('hello world'): {TODO}",
        ),
    ]


def test_lock_refuses_tuning_data_that_overlaps_the_corpus(tmp_path: Path) -> None:
    book = _book(tmp_path)
    before = book.read_bytes()
    result = CliRunner().invoke(cli, ["lock", str(book)])
    assert result.exit_code == 1
    assert (
        "cannot lock: the tuning data tune.jsonl overlaps the comparison corpus "
        "corpus.jsonl (1 shared id(s) and 1 shared text(s)):"
    ) in result.output
    assert "--acknowledge-overlap" in result.output
    assert book.read_bytes() == before


def test_an_acknowledged_overlap_is_locked_logged_and_still_named(tmp_path: Path) -> None:
    book = _book(tmp_path)
    result = CliRunner().invoke(
        cli, ["lock", str(book), "--acknowledge-overlap", "the shared rows are public boilerplate"]
    )
    assert result.exit_code == 0, result.output
    note = (
        "tuning data tune.jsonl overlaps the corpus (1 shared id(s) and 1 shared text(s)), "
        "acknowledged: the shared rows are public boilerplate"
    )
    assert result.stdout.splitlines()[-1] == f"logged in Audit: {note}"
    data = store.read(book)
    (audit,) = data.tables["Audit"]
    assert (audit["action"], audit["reason"]) == ("lock", note)
    lock = current_lock(data)
    assert lock is not None
    findings = _tuning_findings(book)
    assert len(findings) == 2
    assert all(
        f.message.endswith(
            f"; acknowledged at the lock of {lock.details['tuning_overlap']['at']} with the reason "
            "'the shared rows are public boilerplate' (Audit), still shown"
        )
        for f in findings
    )


def test_acknowledging_an_overlap_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    book = _book(tmp_path, tuning_rows=TUNING[:1])
    assert _tuning_findings(book) == []
    result = CliRunner().invoke(cli, ["lock", str(book), "--acknowledge-overlap", "why"])
    assert result.exit_code == 2
    assert "shares no id and no text with the corpus" in result.output


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("missing.jsonl", "missing.jsonl"),
        ("the calibration split of chapter 3", "the calibration split of chapter 3"),
        ("gone.jsonl: the chapters kept apart", "gone.jsonl"),
    ],
)
def test_tuning_data_that_names_no_file_is_a_clear_error(
    tmp_path: Path, value: str, path: str
) -> None:
    book = _book(tmp_path, value)
    message = (
        f"tuning_data names {path!r}, which resolves to {tmp_path / path}, which does "
        "not exist: write the path of the data the configuration was tuned or fitted on "
        "(JSONL or CSV with id and text, relative to the workbook's folder; a note may "
        "follow ': '), or 'none' if nothing was tuned"
    )
    assert _tuning_findings(book) == [
        Finding("Protocol", ROW, "tuning_data", "tuning-data", message)
    ]
    result = CliRunner().invoke(cli, ["lock", str(book)])
    assert result.exit_code == 1 and message in result.output.replace("\n  ", " ")


def test_unreadable_tuning_data_is_a_clear_error(tmp_path: Path) -> None:
    book = _book(tmp_path)
    (tmp_path / "tune.jsonl").write_text('{"id": "t1"}\n', encoding="utf-8")
    assert _tuning_findings(book) == [
        Finding(
            "Protocol",
            ROW,
            "tuning_data",
            "tuning-data",
            f"tuning_data names 'tune.jsonl', which does not read as tuning data: "
            f"{tmp_path / 'tune.jsonl'}: "
            "line 1 (id 't1'): text is missing or not a string; every input has a non-empty text, "
            "so that its overlap with the corpus can be checked",
        )
    ]


@pytest.mark.parametrize("value", ["None", "none: the checkpoint is used as released"])
def test_none_means_nothing_was_tuned(tmp_path: Path, value: str) -> None:
    assert _tuning_findings(_book(tmp_path, value)) == []


def test_a_note_may_follow_the_path(tmp_path: Path) -> None:
    assert len(_tuning_findings(_book(tmp_path, "tune.jsonl: fitted on it only"))) == 2


def test_the_example_points_to_its_calibration_split_which_shares_nothing_with_the_corpus() -> None:
    book = SAMPLES / "example_campaign.xlsx"
    data = store.read(book)
    assert tuning.path_of(data.forms["Protocol"]["tuning_data"]) == "calibration.jsonl"
    found, problems = tuning.overlap(data, book)
    assert problems == [] and found is not None and not found
    assert (found.tuning_path, found.corpus_path) == ("calibration.jsonl", "corpus.jsonl")


def test_a_campaign_locked_before_the_rule_keeps_its_free_text(tmp_path: Path) -> None:
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURES / "layout1_campaign", folder)
    book = folder / "example_campaign.xlsx"
    data = store.read(book)
    assert data.forms["Protocol"]["tuning_data"].startswith("calibration.jsonl: 3,202")
    assert _tuning_findings(book) == []
    data.forms["Protocol"]["tuning_data"] = "an edited free text"
    assert tuning.overlap(data, book)[1][0].check == "tuning-data"


def test_an_amendment_that_brings_in_overlapping_tuning_data_needs_the_acknowledgement(
    tmp_path: Path,
) -> None:
    book = _book(tmp_path, "none")
    runner = CliRunner()
    assert runner.invoke(cli, ["lock", str(book)]).exit_code == 0
    data = store.read(book)
    data.forms["Protocol"]["tuning_data"] = "tune.jsonl"
    store.save(data, book)
    refused = runner.invoke(cli, ["amend", str(book), "--reason", "the head was refitted"])
    assert refused.exit_code == 1
    assert "cannot amend: the tuning data tune.jsonl overlaps" in refused.output
    amended = runner.invoke(
        cli,
        [
            "amend",
            str(book),
            "--reason",
            "the head was refitted",
            "--acknowledge-overlap",
            "boilerplate rows",
        ],
    )
    assert amended.exit_code == 0, amended.output
    assert amended.output.splitlines()[1] == (
        "logged in Audit: the head was refitted; tuning data tune.jsonl overlaps the corpus "
        "(1 shared id(s) and 1 shared text(s)), acknowledged: boilerplate rows"
    )
    assert all("acknowledged at the amendment of" in f.message for f in _tuning_findings(book))
