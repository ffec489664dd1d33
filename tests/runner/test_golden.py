"""A refactor of the runner leaves its records as they were: two small campaigns (a
classification of four variants, a generation of three, one failing midway in each, one
model missing) run under a fixed clock give the journal records and workbook cells of
``fixtures/golden_run.json``, captured before the runner was split into task kinds
(tests/support/golden_run.py says what is masked as varying from run to run, and how to
regenerate it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import golden_run

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _differences(expected: object, found: object, where: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(found, dict):
        out = [f"{where}.{k}: missing" for k in expected if k not in found]
        out += [f"{where}.{k}: unexpected" for k in found if k not in expected]
        for k in expected.keys() & found.keys():
            out += _differences(expected[k], found[k], f"{where}.{k}")
        return out
    if isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        return [
            d
            for i, (e, f) in enumerate(zip(expected, found, strict=True))
            for d in _differences(e, f, f"{where}[{i}]")
        ]
    return [] if expected == found else [f"{where}: {expected!r} -> {found!r}"]


def test_the_runner_records_what_it_recorded_before_the_refactor(tmp_path: Path) -> None:
    expected = json.loads(golden_run.FIXTURE.read_text(encoding="utf-8"))
    found = golden_run.capture(tmp_path)
    assert _differences(expected, found) == []
