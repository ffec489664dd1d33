"""Cluster commands: ``iteralab worker start|stop`` (Ray's own ``ray start``/``ray stop``).

ray is imported only inside the command bodies (the ``cluster`` extra), as torch is.
"""

from __future__ import annotations

from typing import Any

import click

WORKER = "iteralab-worker/1"
SECURITY = (
    "note: Ray does not authenticate by default: anyone who reaches these ports can "
    "run code here. Keep the nodes on a private network or behind SSH tunnels."
)


@click.group()
def worker() -> None:
    """Start or stop this machine's Ray node for `iteralab run --cluster`."""


@worker.command("start")
@click.option(
    "--head",
    is_flag=True,
    help="Start the cluster here (the driver's machine: the "
    "workbook lives here and `iteralab run --cluster` runs here).",
)
@click.option("--address", metavar="HOST:PORT", help="Join the cluster whose head is there.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="The head's port (default 6379); with --head only.",
)
@click.option(
    "--bind",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDRESS",
    help="The address this node is reached at: its private-network or tunnel "
    "address. Never 0.0.0.0 unless you name it.",
)
@click.option(
    "--label",
    metavar="LABEL",
    help="What this node runs: the Variants label (the gpu_slug of a cuda variant, "
    "e.g. rtx-4090). One attempt at a time runs here.",
)
@click.option(
    "--num-cpus", type=click.IntRange(min=0), help="CPUs Ray may use here (default: all)."
)
@click.option(
    "--temp-dir",
    type=click.Path(file_okay=False),
    help="Ray's session folder (default Ray's /tmp/ray); a short absolute path.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-worker/1 JSON document (docs/json.md).",
)
def start(as_json: bool, **options: Any) -> None:
    """Start a Ray node: the head (--head), or one joining it (--address) with its --label.

    Wraps `ray start`; the node advertises one unit of its label, so it runs one
    attempt at a time; Ray's memory monitor and out-of-memory retries are off there.
    """
    from toolkit.cluster import workers
    from toolkit.commands.documents import emit

    started = workers.start(**options)  # the options are its parameters, by name
    if as_json:
        emit({"format": WORKER, "action": "start", **started.as_dict()})
        return
    label = started.label
    offers = f"label {label}" if label else "no label: it runs no attempt"
    if started.role == "head":
        click.echo(f"head node started at {started.address} ({offers})")
        click.echo(
            f"join it from each box: iteralab worker start --address {started.address} "
            "--label LABEL"
        )
        click.echo(f"run a campaign from here: iteralab run WORKBOOK --cluster {started.address}")
    else:
        click.echo(f"node joined the cluster at {started.address} ({offers})")
    click.echo(SECURITY)


@worker.command("stop")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-worker/1 JSON document (docs/json.md).",
)
def stop(as_json: bool) -> None:
    """Stop this machine's Ray node (wraps `ray stop`: every Ray process of this user here)."""
    from toolkit.cluster import workers
    from toolkit.commands.documents import emit

    output = workers.stop()
    if as_json:
        emit({"format": WORKER, "action": "stop", "ray_output": output})
        return
    said = output.splitlines()[-1].split(" -- ", 1)[-1] if output else "done"
    click.echo(f"ray stop: {said}")


COMMANDS = [worker]
