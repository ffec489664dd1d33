"""The sample campaign: a copy of samples/example_campaign.xlsx with its inputs.

Every file is written whole (:mod:`toolkit.plumbing.atomic`), the workbook last.

The copy sits in its own folder with the corpus and the head beside it (the
workbook names them by relative path), so the folder is the whole evidence:
workbook, journal, predictions. ``quick`` swaps in a declared subset (the
first 100 items, 2 repetitions) through a protocol amendment, so the change is
in the Audit sheet rather than hidden. No torch here.
"""

from __future__ import annotations

from pathlib import Path

from toolkit.errors import ToolkitError, UsageError
from toolkit.evidence import locking
from toolkit.plumbing.atomic import copy_file, copy_tree, write_text
from toolkit.plumbing.shipped import SAMPLES, shipped
from toolkit.workbook import store

EXAMPLE_NAME = "example_campaign.xlsx"
QUICK_ITEMS = 100
QUICK_REPETITIONS = 2
QUICK_CORPUS = "corpus_quick.jsonl"


def prepare(directory: Path, quick: bool = False) -> Path:
    """Copy the example campaign and its inputs into ``directory``; return the workbook.

    Refuses a folder that already holds a demo workbook (resume it instead).
    """
    samples = shipped(SAMPLES)
    example = samples / EXAMPLE_NAME
    if not example.exists():
        raise ToolkitError(f"{example} is missing",
                           hint="build it with `python samples/make_example_workbook.py`")
    target = directory / EXAMPLE_NAME
    exists = UsageError(f"{target} already exists: the demo does not overwrite a campaign",
                        hint=f"continue it with `iteralab run {target} --resume`, or give "
                        "another folder: `iteralab demo OTHER_DIR`")
    if target.exists():
        raise exists
    data = store.read(example)
    form = data.forms["Protocol"]
    directory.mkdir(parents=True, exist_ok=True)
    # The inputs first, each file whole; the workbook last, in one step: a demo stopped at
    # any moment leaves no workbook, or a whole one.
    corpus_name = str(form["corpus_path"])
    copy_file(samples / corpus_name, directory / corpus_name)
    for head in sorted({str(v["head_path"]) for v in data.tables["Variants"]
                        if v.get("head_path")}):
        copy_tree(samples / head, directory / head)
    if quick:
        lines = (samples / corpus_name).read_text(encoding="utf-8").splitlines(keepends=True)
        write_text(directory / QUICK_CORPUS, "".join(lines[:QUICK_ITEMS]))
        form["corpus_path"] = QUICK_CORPUS
        form["repetitions"] = QUICK_REPETITIONS
        form["scenario"] = (f"{form['scenario']} QUICK DEMO: the first {QUICK_ITEMS} items of "
                            f"{corpus_name}, {QUICK_REPETITIONS} repetitions; a smoke run, not "
                            "the comparison.")
        locking.amend(data, f"quick demo: declared subset (first {QUICK_ITEMS} items of "
                      f"{corpus_name}, {QUICK_REPETITIONS} repetitions) for a smoke run")
    try:
        store.create(data, target)
    except FileExistsError:
        raise exists from None
    return target
