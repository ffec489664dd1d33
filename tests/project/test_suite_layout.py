"""tests/ mirrors the package (tests/README.md): test files live in the folder of what they
check, support code in tests/support, and no test file imports another."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT, TESTS

#: Folders of tests/ that are not a package of toolkit/, and what they hold.
OTHER_FOLDERS = {
    "support": "support code, no tests",
    "project": "the project as a whole",
    "cli": "toolkit.cli and toolkit.commands",
    "benchmarks": "benchmarks/",
    "docs": "docs/ and README",
    "fixtures": "recorded files the tests read",
}


def _folders() -> list[Path]:
    return sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__")


def test_no_test_file_sits_at_the_top_of_tests() -> None:
    top = sorted(p.name for p in TESTS.glob("*.py"))
    assert top == ["__init__.py", "conftest.py"], (
        "move each test file into the folder of the package it checks "
        "(tests/README.md says which): " + ", ".join(n for n in top if n.startswith("test_"))
    )


def test_each_folder_is_a_package_of_toolkit_or_says_what_it_holds() -> None:
    packages = {p.name for p in (ROOT / "toolkit").iterdir() if (p / "__init__.py").exists()}
    strays = [p.name for p in _folders() if p.name not in packages | set(OTHER_FOLDERS)]
    assert strays == [], "name a test folder after the toolkit package it checks"


def test_every_test_folder_is_a_package() -> None:
    """Two test files with one name in two folders import as two modules, not one."""
    folders = [p for p in _folders() if p.name != "fixtures"]
    assert folders, "tests/ holds no folder"
    assert [p.name for p in folders if not (p / "__init__.py").exists()] == []


def test_support_holds_no_tests_and_no_test_file_imports_another() -> None:
    assert list((TESTS / "support").glob("test_*.py")) == []
    imports = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            imports += [
                f"{path.relative_to(TESTS)}: {name}"
                for name in names
                if name.rpartition(".")[2].startswith("test_") or name.startswith("test_")
            ]
    assert imports == [], "move what two test files share into tests/support"
