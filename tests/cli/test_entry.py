"""The console script names the command from its arguments, before the command line's
imports, to start what the command checks beside its read (toolkit/entry.py)."""

from __future__ import annotations

import pytest

from toolkit.entry import SCHEMA_COMMANDS, named_command


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["validate", "campaign.xlsx"], "validate"),
        (["--debug", "report", "campaign.xlsx", "--no-png"], "report"),
        (["run", "campaign.xlsx"], "run"),
        (["validate", "--help"], None),  # help runs nothing
        (["-h"], None),
        (["--version"], None),
        ([], None),
    ],
)
def test_the_command_is_the_first_argument_that_is_no_option(
    args: list[str], command: str | None
) -> None:
    assert named_command(args) == command


def test_the_schema_commands_are_commands_of_the_command_line() -> None:
    from toolkit.cli import cli

    assert set(SCHEMA_COMMANDS) <= set(cli.commands)
