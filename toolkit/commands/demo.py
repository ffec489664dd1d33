"""The sample campaign: a copy of samples/example_campaign.xlsx with its inputs.

Every file is written whole (:mod:`toolkit.plumbing.atomic`), the workbook last.

The copy sits in its own folder with the corpus and the head beside it (the
workbook names them by relative path), so the folder is the whole evidence:
workbook, journal, predictions. ``quick`` swaps in a declared subset (the
first 100 items, 2 repetitions) through a protocol amendment, so the change is
in the Audit sheet rather than hidden. No torch here.
"""

from __future__ import annotations

import filecmp
from pathlib import Path

from toolkit import editing, layout
from toolkit.errors import ToolkitError, UsageError
from toolkit.evidence import locking, tuning
from toolkit.evidence.audit_chain import seal_older_rows
from toolkit.evidence.money_rules import accepted_corpora
from toolkit.plumbing.atomic import BYTECODE, copy_file, copy_tree, write_text
from toolkit.plumbing.clock import now_text
from toolkit.plumbing.shipped import SAMPLES, shipped
from toolkit.report.protocol_warnings import QUICK_DEMO
from toolkit.workbook import store

EXAMPLE_NAME = "example_campaign.xlsx"
#: The example workbook of each Protocol task (`iteralab demo --task`).
EXAMPLES = {"classification": EXAMPLE_NAME, "generation": "example_generation.xlsx"}
QUICK_ITEMS = 100
#: Generation is slower per item on a CPU: its quick subset is smaller.
QUICK_ITEMS_BY_TASK = {"classification": QUICK_ITEMS, "generation": 40}
QUICK_REPETITIONS = 2
QUICK_CORPUS = "corpus_quick.jsonl"
#: Who "verified" the demo's outputs: the demo itself, said plainly (seed 000: in a real
#: campaign only the user's own check counts).
STAND_IN = "iteralab demo: an EXAMPLE standing in for your own check"
STAND_IN_CHECKED = (
    "EXAMPLE for the demo: the runner's checks only (exact ids, accuracy vs "
    "the threshold); in a real campaign, read the predictions yourself before "
    "you confirm"
)


#: The series a plain `iteralab demo` runs, per task (``--all``: every series): in the
#: classification example, the batch sizes and the engines (samples/make_example_workbook.py).
PLAIN_SERIES = {"classification": (1, 4), "generation": (1,)}


def plain_variants(workbook: Path, task: str) -> tuple[str, ...]:
    """The ids of the variants a plain demo of ``task`` runs (:data:`PLAIN_SERIES`)."""
    return tuple(
        str(v["variant_id"])
        for v in store.read(workbook).tables["Variants"]
        if v.get("series") in PLAIN_SERIES[task]
    )


def prepare(directory: Path, quick: bool = False, task: str = "classification") -> Path:
    """Copy the example campaign of ``task`` and its inputs into ``directory``; return the
    workbook.

    Refuses a folder that already holds a demo workbook (resume it instead).
    """
    samples = shipped(SAMPLES)
    name = EXAMPLES[task]
    quick_items = QUICK_ITEMS_BY_TASK[task]
    example = samples / name
    if not example.exists():
        raise ToolkitError(
            f"{example} is missing", hint="build it with `python samples/make_example_workbook.py`"
        )
    target = directory / name
    exists = UsageError(
        f"{target} already exists: the demo does not overwrite a campaign",
        hint=f"continue it with `iteralab run {target} --resume`, or give "
        "another folder: `iteralab demo OTHER_DIR`",
    )
    if target.exists():
        raise exists
    data = store.read(example)
    form = data.forms["Protocol"]
    corpus_name = str(form["corpus_path"])
    tuning_name = tuning.path_of(form.get("tuning_data"))
    copies = [(samples / corpus_name, directory / corpus_name)]
    if tuning_name and (samples / tuning_name).is_file():  # validate compares it (R2)
        copies.append((samples / tuning_name, directory / tuning_name))
    for head in sorted(
        {str(v["head_path"]) for v in data.tables["Variants"] if v.get("head_path")}
    ):
        copies.append((samples / head, directory / head))
    for folder in sorted(
        {
            str(v["model_path"])
            for v in data.tables["Variants"]
            if (samples / str(v.get("model_path"))).is_dir()
        }
    ):
        copies.append((samples / folder, directory / folder))  # a model the samples ship
    quick_lines = (
        "".join(
            (samples / corpus_name)
            .read_text(encoding="utf-8")
            .splitlines(keepends=True)[:quick_items]
        )
        if quick
        else ""
    )
    _refuse_own_files(directory, copies, quick_lines)
    directory.mkdir(parents=True, exist_ok=True)
    # The inputs first, each file whole; the workbook last, in one step: a demo stopped at
    # any moment leaves no workbook, or a whole one.
    for source, copy in copies:
        if source.is_dir():
            copy_tree(source, copy)
        else:
            copy_file(source, copy)
    if quick:
        write_text(directory / QUICK_CORPUS, quick_lines)
        form["corpus_path"] = QUICK_CORPUS
        form["repetitions"] = QUICK_REPETITIONS
        form["scenario"] = (
            f"{form['scenario']} QUICK DEMO: the first {quick_items} items of "
            f"{corpus_name}, {QUICK_REPETITIONS} repetitions; a smoke run, not "
            "the comparison."
        )
        locking.amend(
            data,
            f"{QUICK_DEMO} (first {quick_items} items of "
            f"{corpus_name}, {QUICK_REPETITIONS} repetitions) for a smoke run",
        )
    seal_older_rows(data)  # the example's Audit rows, as it ships them
    try:
        store.create(data, target)
    except FileExistsError:
        raise exists from None
    return target


def _refuse_own_files(directory: Path, copies: list[tuple[Path, Path]], quick_lines: str) -> None:
    """Refuse a folder holding a file the demo would write with other content: the user's own
    corpus, calibration data or head is never overwritten (the demo's own, unchanged, may
    stay)."""
    differing: list[Path] = []
    for source, copy in copies:
        pairs = (
            [(p, copy / p.relative_to(source)) for p in _inputs(source)]
            if source.is_dir()
            else [(source, copy)]
        )
        differing += [
            target
            for origin, target in pairs
            if target.exists()
            and (not target.is_file() or not filecmp.cmp(origin, target, shallow=False))
        ]
        if source.is_dir() and copy.is_dir():  # files of the user's own in that folder
            differing += [p for p in _inputs(copy) if not (source / p.relative_to(copy)).is_file()]
    quick = directory / QUICK_CORPUS
    if (
        quick_lines
        and quick.exists()
        and (not quick.is_file() or quick.read_text(encoding="utf-8") != quick_lines)
    ):
        differing.append(quick)
    if differing:
        names = ", ".join(str(p.relative_to(directory)) for p in differing[:5])
        more = f" and {len(differing) - 5} more" if len(differing) > 5 else ""
        raise UsageError(
            f"{directory} holds {names}{more}, which the demo would overwrite with its example "
            "files; nothing was written",
            hint="give the demo a folder of its own: `iteralab demo --quick NEW_DIR`",
        )


def _inputs(folder: Path) -> list[Path]:
    """The files of ``folder`` as the demo copies them (bytecode caches left out: the
    sample plugin's import writes one beside it)."""
    return [
        p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and BYTECODE not in p.relative_to(folder).parts
    ]


def stand_in_verification(workbook: Path) -> int:
    """Fill the Verification sheet of a demo workbook with the runner's accepted corpora,
    marked as an example standing in for the user's check; return the rows written.

    Only the demo does this, so that its report can show a cost per accepted corpus; a
    real campaign's Verification is typed by the person who checked.
    """
    with editing.change(workbook, refresh_derived=False) as edit:
        data = edit.data
        done = {str(r.get("variant_id")) for r in data.tables[layout.VERIFICATION.name]}
        added = 0
        for v in data.tables["Variants"]:
            vid = str(v.get("variant_id"))
            accepted = accepted_corpora(vid, data.tables["Attempts"], data.tables["Manifest"])
            if vid in done or accepted is None:
                continue
            data.append(
                layout.VERIFICATION.name,
                {
                    "variant_id": vid,
                    "verified": layout.YES,
                    "confirmed_corpora": len(accepted),
                    "verified_by": STAND_IN,
                    "verified_at": now_text(),
                    "checked": STAND_IN_CHECKED,
                },
            )
            added += 1
        edit.save = added > 0
    return added
