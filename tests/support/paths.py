"""Where the tests find the checkout's files, said once: a test file never works them out from
its own location, so moving it between the folders of tests/ changes nothing it reads."""

from __future__ import annotations

from pathlib import Path

#: The checkout: pyproject.toml, toolkit/, docs/ ...
ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: Recorded inputs and outputs the tests compare against (tests/fixtures/).
FIXTURES = TESTS / "fixtures"
SAMPLES = ROOT / "samples"
DOCS = ROOT / "docs"
BENCHMARKS = ROOT / "benchmarks"
