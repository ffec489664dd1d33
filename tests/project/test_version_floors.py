"""The runner's version floors in pyproject are the versions its code needs, and the
installed stack meets them."""

from __future__ import annotations

import re
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.support.paths import ROOT

#: What the runner's code calls, and the first release that has it.
NEEDED = {
    "torch": Version("2.5"),  # torch.OutOfMemoryError
    "transformers": Version("4.56"),
}  # from_pretrained(..., dtype=...)


def _runner_requirements() -> dict[str, Requirement]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    return {Requirement(r).name: Requirement(r) for r in extras["runner"]}


def test_the_floors_are_the_versions_the_code_needs() -> None:
    requirements = _runner_requirements()
    for name, needed in NEEDED.items():
        floors = [Version(s.version) for s in requirements[name].specifier if s.operator == ">="]
        assert floors == [needed], f"{name}: pyproject says {requirements[name]}"


def test_the_installed_runner_stack_meets_the_floors() -> None:
    for name, requirement in _runner_requirements().items():
        installed = re.sub(r"\+.*$", "", metadata.version(name))  # 2.13.0+cpu -> 2.13.0
        assert requirement.specifier.contains(installed, prereleases=True), (
            f"{name} {installed} does not meet {requirement}"
        )
