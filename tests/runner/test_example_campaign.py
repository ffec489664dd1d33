"""The example campaign (samples/example_campaign.xlsx) and the demo folder it seeds."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import SAMPLES
from toolkit.commands import demo
from toolkit.errors import UsageError
from toolkit.evidence import journal, protocol
from toolkit.evidence.validate import validate
from toolkit.workbook import store

EXAMPLE = SAMPLES / demo.EXAMPLE_NAME
#: Prices the catalog holds as exact decimals; the workbook stores them as numbers.
DECIMAL_COLUMNS = ("price_per_lot_usd", "price_per_hour")


def _builder() -> ModuleType:
    """samples/make_example_workbook.py, imported from its path (it is a script)."""
    spec = importlib.util.spec_from_file_location(
        "make_example_workbook", SAMPLES / "make_example_workbook.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_example_is_what_the_script_builds() -> None:
    """Protocol, Variants and Tariffs cell for cell; the lock hash therefore too."""
    committed = store.read(EXAMPLE)
    fresh = _builder().build()
    assert committed.forms["Protocol"] == fresh.forms["Protocol"]
    for sheet in ("Variants", "Tariffs"):
        assert committed.tables[sheet] == [
            {k: (float(v) if k in DECIMAL_COLUMNS and v is not None else v) for k, v in row.items()}
            for row in fresh.tables[sheet]
        ], sheet
    assert protocol.current_lock(committed).sha256 == protocol.current_lock(fresh).sha256


def test_the_example_is_locked_valid_and_declares_the_series() -> None:
    data = store.read(EXAMPLE)
    assert validate(data, EXAMPLE) == []
    assert protocol.require_lock(data, EXAMPLE)
    series = [
        (v["variant_id"], v["series"], v["batch_size"], v["precision"], v["length_grouping"])
        for v in data.tables["Variants"]
    ]
    assert series == [
        ("b1-fp32", 1, 1, "fp32", "none"),
        ("b4-fp32", 1, 4, "fp32", "none"),
        ("b8-fp32", 1, 8, "fp32", "none"),
        ("b8-bf16", 2, 8, "bf16", "none"),
        ("b8-fp32-sorted", 3, 8, "fp32", "sorted"),
        ("b8-ort-fp32", 4, 8, "fp32", "none"),
        ("b8-ort-int8", 4, 8, "fp32", "none"),
        ("b8-tfidf", 4, 8, "fp32", "none"),
    ]
    form = data.forms["Protocol"]
    assert (
        form["metric"],
        form["threshold"],
        form["tolerance"],
        form["reference_variant"],
        form["repetitions"],
        form["process_policy"],
    ) == ("accuracy", 0.6, 0.01, "b1-fp32", 5, "fresh")


def test_demo_folder_holds_workbook_corpus_and_head(tmp_path: Path) -> None:
    book = demo.prepare(tmp_path / "d")
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "austen_tfidf",
        "calibration.jsonl",
        "corpus.jsonl",
        "example_campaign.xlsx",
        "head",
    ]
    assert sorted(p.name for p in (tmp_path / "d" / "head").iterdir()) == [
        "head.json",
        "head.safetensors",
    ]
    assert store.read(book).tables["Attempts"] == []
    assert journal.read(book) == []
    assert validate(store.read(book), book) == []  # the tuning data is there to compare (R2)


def test_quick_demo_declares_its_subset_as_an_amendment(tmp_path: Path) -> None:
    """The subset is written into the copy's protocol and logged, not hidden."""
    book = demo.prepare(tmp_path / "q", quick=True)
    data = store.read(book)
    form = data.forms["Protocol"]
    assert (form["corpus_path"], form["repetitions"]) == ("corpus_quick.jsonl", 2)
    assert form["scenario"].endswith(
        "QUICK DEMO: the first 100 items of corpus.jsonl, 2 "
        "repetitions; a smoke run, not the comparison."
    )
    audit = data.tables["Audit"][-1]
    assert (audit["action"], audit["reason"]) == (
        "amend",
        "quick demo: declared subset (first 100 items of corpus.jsonl, 2 "
        "repetitions) for a smoke run",
    )
    assert len((tmp_path / "q" / "corpus_quick.jsonl").read_text().splitlines()) == 100
    assert protocol.require_lock(data, book) == audit["protocol_sha256"]


def test_demo_never_overwrites_a_campaign(tmp_path: Path) -> None:
    demo.prepare(tmp_path)
    with pytest.raises(UsageError, match="already exists: the demo does not overwrite"):
        demo.prepare(tmp_path)
