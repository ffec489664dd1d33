"""Every command has help text and appears in the README."""

from __future__ import annotations

import re
from pathlib import Path

import click

from toolkit.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        found[prefix + name] = command
        if isinstance(command, click.Group):
            found.update(_commands(command, prefix + name + " "))
    return found


def test_every_command_has_help() -> None:
    for name, command in _commands(cli).items():
        assert command.help and command.help.strip(), f"`iteralab {name}` has no help text"
        assert command.get_short_help_str(), name


def test_every_command_is_documented_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    for name in _commands(cli):
        assert re.search(rf"iteralab {re.escape(name)}\b", text), (
            f"`iteralab {name}` is missing from README.md"
        )
