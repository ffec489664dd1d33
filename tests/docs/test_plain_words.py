"""What a user reads says its rule in words: no requirement code (R15, B3) in a message the
CLI prints, in its help, or anywhere in README and docs but the traceability appendix (quoted
output included). The workbook's column help keeps them (toolkit/layout.py): the appendix's
generated table is read from it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click

from tests.support.paths import DOCS, ROOT
from toolkit.cli import cli

#: A code, but not a cell reference such as Variants!B2.
CODE = re.compile(r"(?<![!$])\b(?:R\d{1,2}|B[1-5])\b")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings or bare string statements."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            out.add(id(node.value))
    return out


def _message_literals(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.value[:80]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and CODE.search(node.value)
    ]


def test_no_message_of_the_toolkit_cites_a_requirement_code() -> None:
    found = [
        hit
        for path in sorted((ROOT / "toolkit").rglob("*.py"))
        if path != ROOT / "toolkit" / "layout.py"
        for hit in _message_literals(path)
    ]
    assert not found, "say the rule in words:\n" + "\n".join(found)


def test_the_scan_finds_a_code_in_a_message_and_not_in_a_docstring(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    source = 'def f():\n    """A rule (R14)."""\n    raise ValueError("bad (R2)")\n'
    module.write_text(source, encoding="utf-8")
    hits = _message_literals(module, tmp_path)
    assert len(hits) == 1 and "bad (R2)" in hits[0]


def _help_lines(command: click.Command, path: list[str]) -> list[str]:
    text = command.get_help(click.Context(command, info_name=" ".join(path)))
    lines = [f"{' '.join(path)}: {line.strip()}" for line in text.splitlines() if CODE.search(line)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            lines += _help_lines(sub, [*path, name])
    return lines


def test_no_command_help_cites_a_requirement_code() -> None:
    found = _help_lines(cli, ["iteralab"])
    assert not found, "say the rule in words:\n" + "\n".join(found)


def test_no_page_but_the_appendix_cites_a_code_even_in_quoted_output() -> None:
    pages = [ROOT / "README.md", *sorted((DOCS).rglob("*.md"))]
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line[:100]}"
        for page in pages
        if page.name != "traceability.md"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if CODE.search(line)
    ]
    assert not found, "say the rule in words:\n" + "\n".join(found)


#: A tracker's reference: "(issue 34)", "issues 20 and 32", "(#38)".
ISSUE_REFERENCE = re.compile(r"\bissues? \d+|\(#\d+\)")


def test_no_source_file_of_the_toolkit_names_the_issue_that_asked_for_it() -> None:
    """Code and docstrings say what the code does; which issue asked for it is history, kept
    in the commit log."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}"
        for path in sorted((ROOT / "toolkit").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE_REFERENCE.search(line)
    ]
    assert found == []
    assert ISSUE_REFERENCE.search("made every demo wait (issue 34).")
    assert ISSUE_REFERENCE.search("the pre-flight (#38) loads")
    assert not ISSUE_REFERENCE.search("an issue the user files")
