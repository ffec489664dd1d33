"""Every command has help text and a page that explains it; every example names a real command.

The README and the pages under docs/ show command lines (`$ iteralab ...` in code blocks,
`iteralab ...` in the text). Each one must name a command of the real click group and only
options that command takes, so that an option renamed in the code fails here instead of
leaving a stale example behind.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from tests.support.paths import DOCS, ROOT
from toolkit.cli import cli

README = ROOT / "README.md"
#: Generated from the click commands: it names every command by construction.
GENERATED = {DOCS / "reference" / "cli.md"}
#: A word in capitals stands for what the reader types (`iteralab COMMAND --help`).
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$")


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        found[prefix + name] = command
        if isinstance(command, click.Group):
            found.update(_commands(command, prefix + name + " "))
    return found


def _pages() -> list[Path]:
    """The README and every hand-written page of the documentation."""
    return [README, *(p for p in sorted(DOCS.rglob("*.md")) if p not in GENERATED)]


def _examples(text: str) -> list[str]:
    """Every `iteralab ...` command line of ``text``: code-block lines and inline code."""
    found: list[str] = []
    prose: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            match = re.match(r"^\s*(?:\$ )?(?:\.venv/bin/)?iteralab (.*)$", line)
            if match:
                found.append(match[1].split(" #", 1)[0].strip())
        else:
            prose.append(line)
    found += re.findall(r"`(?:\.venv/bin/)?iteralab ([^`]+)`", " ".join(prose))
    return found


def _words(example: str) -> list[str]:
    try:
        return shlex.split(example)
    except ValueError:  # an unbalanced quote in an excerpt ("--reason "...")
        return example.split()


def _check(example: str) -> str | None:
    """Why ``example`` (after `iteralab `) is not a command line of the CLI; None when it is."""
    command: click.Command = cli
    words = _words(example)
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        if PLACEHOLDER.match(words[0]):
            return None
        sub = command.commands.get(words[0])
        if sub is None:
            return f"no command {words[0]!r}"
        command, words = sub, words[1:]
    known = {"--help", "-h"}
    for param in command.params:
        if isinstance(param, click.Option):
            known.update(param.opts, param.secondary_opts)
    for word in words:
        if word.startswith("-") and len(word) > 1 and not re.match(r"^-\d", word):
            option = word.split("=", 1)[0]
            if option not in known:
                return f"`iteralab {command.name}` takes no option {option}"
    return None


def test_every_command_has_help() -> None:
    for name, command in _commands(cli).items():
        assert command.help and command.help.strip(), f"`iteralab {name}` has no help text"
        assert command.get_short_help_str(), name


def test_every_command_is_explained_on_a_hand_written_page() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in _pages())
    for name in _commands(cli):
        assert re.search(rf"iteralab {re.escape(name)}\b", text), (
            f"`iteralab {name}` is explained on no page of README.md or docs/"
        )


def test_every_command_line_shown_is_one_the_cli_takes() -> None:
    problems = []
    count = 0
    for page in _pages():
        for example in _examples(page.read_text(encoding="utf-8")):
            count += 1
            why = _check(example)
            if why:
                problems.append(f"{page.relative_to(ROOT)}: `iteralab {example}`: {why}")
    assert not problems, "\n".join(problems)
    assert count > 100  # the pages do show examples: the reader above found them


@pytest.mark.parametrize(
    ("example", "why"),
    [
        ("cost --gpu rtx-4090 --days 7", None),
        ("ledger import w.xlsx b.csv --column reference=Order", None),
        ("COMMAND --help", None),
        ("cost --gpus rtx-4090", "`iteralab cost` takes no option --gpus"),
        ("costs --gpu rtx-4090", "no command 'costs'"),
        ("worker begin --head", "no command 'begin'"),
    ],
)
def test_the_example_check_tells_a_real_command_line_from_a_stale_one(
    example: str, why: str | None
) -> None:
    assert _check(example) == why


def test_examples_are_read_from_code_blocks_and_inline_code() -> None:
    text = (
        "Run `iteralab run\ncampaign.xlsx --resume` again.\n\n```\n$ iteralab cost --list\n"
        "created x\niteralab worker stop      # on each box\n```\n"
    )
    assert _examples(text) == ["cost --list", "worker stop", "run campaign.xlsx --resume"]
