"""The ``iteralab`` console script (and ``python -m toolkit``): a command that checks the
schemas beside its read has their helper started first, then the command line runs.

``iteralab validate`` and ``iteralab report`` check the pandera schemas in a helper process
(:class:`toolkit.evidence.schemas_beside.SchemasBeside`) whose imports, pandas and pandera,
take longer than the whole read: they finish last on a 1,000-attempt workbook. Started here,
before the command line's own imports (click and every command's module), the helper gains
the twentieth of a second those take (benchmarks/README.md). The command is known from the
arguments alone: the first that is not an option (the group's options take no value).
"""

from __future__ import annotations

import sys

#: The commands that check the schemas beside their read.
SCHEMA_COMMANDS = ("validate", "report")


def main() -> None:
    """Entry point of the ``iteralab`` console script."""
    if named_command(sys.argv[1:]) in SCHEMA_COMMANDS:
        from toolkit.evidence.schemas_beside import start_early

        start_early()
    from toolkit.cli import main as command_line

    command_line()


def named_command(args: list[str]) -> str | None:
    """The command ``args`` name, or None (none named, or help asked for: nothing runs)."""
    if "--help" in args or "-h" in args:
        return None
    return next((arg for arg in args if not arg.startswith("-")), None)
