"""The sample campaign: a copy of samples/example_campaign.xlsx with its inputs.

The copy sits in its own folder with the corpus and the head beside it (the
workbook names them by relative path), so the folder is the whole evidence:
workbook, journal, predictions. ``quick`` swaps in a declared subset (the
first 100 items, 2 repetitions) through a protocol amendment, so the change is
in the Audit sheet rather than hidden. No torch here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from toolkit.editing import change
from toolkit.errors import ToolkitError, UsageError
from toolkit.evidence import locking
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
    if target.exists():
        raise UsageError(f"{target} already exists: the demo does not overwrite a campaign",
                         hint=f"continue it with `iteralab run {target} --resume`, or give "
                         "another folder: `iteralab demo OTHER_DIR`")
    data = store.read(example)
    form = data.forms["Protocol"]
    directory.mkdir(parents=True, exist_ok=True)
    corpus_name = str(form["corpus_path"])
    shutil.copy2(samples / corpus_name, directory / corpus_name)
    for head in sorted({str(v["head_path"]) for v in data.tables["Variants"]
                        if v.get("head_path")}):
        shutil.copytree(samples / head, directory / head, dirs_exist_ok=True)
    shutil.copy2(example, target)
    if quick:
        lines = (samples / corpus_name).read_text(encoding="utf-8").splitlines(keepends=True)
        (directory / QUICK_CORPUS).write_text("".join(lines[:QUICK_ITEMS]), encoding="utf-8")
        with change(target, refresh_derived=False) as edit:
            copy = edit.data
            quick_form = copy.forms["Protocol"]
            quick_form["corpus_path"] = QUICK_CORPUS
            quick_form["repetitions"] = QUICK_REPETITIONS
            quick_form["scenario"] = (f"{quick_form['scenario']} QUICK DEMO: the first "
                                      f"{QUICK_ITEMS} items of {corpus_name}, "
                                      f"{QUICK_REPETITIONS} repetitions; a smoke run, not "
                                      "the comparison.")
            locking.amend(copy, f"quick demo: declared subset (first {QUICK_ITEMS} items of "
                           f"{corpus_name}, {QUICK_REPETITIONS} repetitions) for a smoke run")
    return target
