"""The command line starts without torch: only toolkit/runner/ may import it.

``iteralab --help`` and ``iteralab validate`` run in a fresh interpreter under
``python -X importtime``, which lists every module imported; torch and
transformers must not be among them (they take seconds to import, and a
finance reviewer validating a workbook may not have them at all).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from tests.support import demo_rows
from tests.support.paths import SAMPLES

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

FORBIDDEN = ("torch", "transformers")
#: pandera (with pandas) loads only where a schema runs, matplotlib only where a picture is
#: drawn: together about a second of a small campaign's command. validate and report check
#: the schemas in a helper process that imports pandera while they read the workbook
#: (toolkit.evidence.schemas_beside): never in the command's own process.
SCHEMAS, PICTURES = "pandera", "matplotlib"


def _imports(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m toolkit ARGS``; the process and its top-level imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolkit", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    names = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    return done, names


def test_the_listing_sees_torch_when_a_command_imports_it() -> None:
    """`iteralab env` reports the torch build, so it imports torch: the check can fail."""
    done, names = _imports("env")
    assert done.returncode == 0
    assert "torch" in names


def test_help_imports_neither_torch_nor_transformers() -> None:
    done, names = _imports("--help")
    assert done.returncode == 0
    assert "click" in names and "toolkit" in names  # the listing works
    assert names.isdisjoint(FORBIDDEN)


def test_validate_of_a_workbook_with_attempts_imports_neither_torch_nor_transformers(
    tmp_path: Path,
) -> None:
    workbook = demo_rows.workbook(tmp_path)
    # The real corpus: validate fingerprints it again (stdlib), as the Manifest recorded it;
    # and the tuning data it compares with the corpus (R2), as the demo folder holds them.
    for name in ("corpus.jsonl", "calibration.jsonl"):
        shutil.copy(SAMPLES / name, tmp_path)
    # And the head and the plugin the Variants name: validate checks that they are folders.
    for name in ("head", "austen_tfidf"):
        shutil.copytree(SAMPLES / name, tmp_path / name)
    done, names = _imports("validate", str(workbook))
    # The recorded predictions files are not here: validation ran to its findings, one each.
    attempts = len(demo_rows.rows()["Attempts"])
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == (
        f"{attempts} finding(s) in 1 sheet(s): {workbook} is not valid"
    )
    assert "openpyxl" in names  # validation really ran
    assert SCHEMAS not in names  # the schemas ran in their helper
    assert names.isdisjoint(FORBIDDEN)
    assert PICTURES not in names  # no picture is drawn
    assert "filelock" not in names  # nothing is locked: validate only reads


def test_validate_finds_a_schema_failure_with_pandera_in_its_helper_only(tmp_path: Path) -> None:
    """The command's own process never imports pandera, yet pandera's checks ran: a value
    outside a dropdown, which only a schema finds, is named."""
    book = _sample_copy(tmp_path)
    shutil.copy(SAMPLES / "corpus.jsonl", tmp_path)
    edited = openpyxl.load_workbook(book)
    sheet = edited["Variants"]
    column = [cell.value for cell in sheet[1]].index("precision") + 1
    sheet.cell(row=2, column=column, value="fp64")
    edited.save(book)
    done, names = _imports("validate", str(book))
    assert done.returncode == 1, done.stdout + done.stderr
    rows = [line.split()[:4] for line in done.stdout.splitlines()]
    assert ["Variants", "2", "precision", "choice"] in rows
    assert "openpyxl" in names and SCHEMAS not in names


def _sample_copy(tmp_path: Path) -> Path:
    book = tmp_path / "campaign.xlsx"
    shutil.copy(SAMPLES / "example_campaign.xlsx", book)
    return book


def test_ingest_runs_no_schema_and_draws_no_picture(tmp_path: Path) -> None:
    book = _sample_copy(tmp_path)
    (tmp_path / "campaign.journal.jsonl").write_text("", encoding="utf-8")
    done, names = _imports("ingest", str(book))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ingested 0 attempt(s)")
    assert "openpyxl" in names  # the workbook was really read
    assert names.isdisjoint((SCHEMAS, PICTURES, *FORBIDDEN))


def test_report_loads_matplotlib_only_when_it_draws_the_pictures(tmp_path: Path) -> None:
    book = _sample_copy(tmp_path)
    done, names = _imports("report", str(book), "--no-png")
    assert done.returncode == 0, done.stdout + done.stderr
    assert PICTURES not in names
    done, names = _imports("report", str(book))
    assert done.returncode == 0, done.stdout + done.stderr
    assert PICTURES in names and names.isdisjoint((SCHEMAS, *FORBIDDEN))
