"""The ``iteralab`` command line: parse, call the library, render.

Commands live in ``toolkit.commands.*`` modules, each exporting ``COMMANDS``;
they import the library (and torch) only inside their bodies so that
``iteralab --help`` stays fast. This is the one place that maps errors to exit
codes: 0 ok, 1 evidence invalid or tool error, 2 usage.
"""

from __future__ import annotations

import errno
import gc
import importlib
import os
import sys
import traceback

import click

from toolkit import __version__
from toolkit.errors import ToolkitError
from toolkit.plumbing import clock

#: Modules contributing commands, in the order their commands are listed.
COMMAND_MODULES = (
    "toolkit.commands.workbook",
    "toolkit.commands.integrity",
    "toolkit.commands.memory",
    "toolkit.commands.head",
    "toolkit.commands.money",
    "toolkit.commands.imports",
    "toolkit.commands.tariffs",
    "toolkit.commands.check",
    "toolkit.commands.runner",
    "toolkit.commands.cluster",
    "toolkit.commands.serving",
    "toolkit.commands.report",
)


class _Group(click.Group):
    """A group that turns toolkit errors into a message and their exit code."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ToolkitError as exc:
            if ctx.params.get("debug"):
                traceback.print_exc()
            click.echo(f"error: {exc}", err=True)
            raise click.exceptions.Exit(exc.exit_code) from exc
        except OSError as exc:  # a disk full or a permission the command's checks did not meet
            if exc.errno == errno.EPIPE:  # `iteralab ... | head -1`: the reader has enough
                # Nothing more reaches it, not even the flush at exit.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                raise click.exceptions.Exit(ToolkitError.exit_code) from exc
            if ctx.params.get("debug"):
                traceback.print_exc()
            click.echo(f"error: {_os_error(exc)}", err=True)
            raise click.exceptions.Exit(ToolkitError.exit_code) from exc


def _os_error(exc: OSError) -> ToolkitError:
    """What the system refused, where, and what to do; every file is written whole (a
    temporary file, then one rename), so nothing was left half-written."""
    where = f"{exc.filename}: " if exc.filename else ""
    return ToolkitError(
        f"{where}{exc.strerror or exc} (files already written stay whole; none is half-written)",
        hint="free disk space or fix the permission, then run the command "
        "again (--debug shows where it failed)",
    )


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="iteralab")
@click.option("--debug", is_flag=True, help="Show the full traceback on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """IteraGPU Lab: which rented GPU gives the same ML result for the least money.

    The campaign workbook is the single source of truth: fill Protocol and Variants,
    `lock`, `run`, `report`, then hand it to finance.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


for _module in COMMAND_MODULES:
    for _command in importlib.import_module(_module).COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Run the command line (the console script's :func:`toolkit.entry.main` calls it)."""
    clock.mark_process_start()  # a campaign's wall time counts this process's start-up
    try:
        cli.main(prog_name="iteralab")
    finally:
        # The process ends here, and what the command built ends with it: frozen, it is
        # skipped by the collector's passes at shutdown (a fifteenth of a second after a
        # 1,000-attempt validate, benchmarks/README.md). Atexit handlers still run; the
        # commands have closed their files and released their locks already.
        gc.freeze()
