"""``iteralab worker start|stop``: the ``ray start`` and ``ray stop`` command lines, and their run.

A head node starts the cluster (``ray start --head``); each rented box joins it
(``ray start --address HOST:PORT``) advertising one unit of its label's resource
(:mod:`toolkit.cluster.labels`), so it runs one attempt at a time. Every address is
the one the user names (default 127.0.0.1), never 0.0.0.0. The nodes start with
Ray's memory monitor off and its out-of-memory retries at 0: an attempt meets the
memory limits a local run meets, and a failure stays a failed row (R13).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.cluster.labels import check_label, resource
from toolkit.errors import ToolkitError, UsageError

DEFAULT_BIND = "127.0.0.1"
DEFAULT_PORT = 6379
#: What every node of an iteralab cluster runs with (read by the raylet and the driver).
NODE_ENVIRONMENT = {
    "RAY_memory_monitor_refresh_ms": "0",  # no killing at 95 % host memory: a local run has none
    "RAY_task_oom_retries": "0",  # an out-of-memory kill is a failed row, never a rerun
    "RAY_USAGE_STATS_ENABLED": "0",
}


@dataclass(frozen=True)
class Started:
    """What ``ray start`` was asked and answered."""

    role: str  # head or worker
    address: str  # the address the other nodes join (head) or joined (worker)
    label: str | None
    command: list[str]
    output: str
    bind: str  # the address this node is reached at

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the role, addresses, label and its Ray resource, the command run."""
        return {
            "role": self.role,
            "address": self.address,
            "label": self.label,
            "resource": None if self.label is None else resource(self.label),
            "bind": self.bind,
            "command": self.command,
        }


def ray_executable() -> str:
    """The ``ray`` command installed beside this Python (the cluster extra), else on PATH."""
    beside = Path(sys.executable).with_name("ray")
    if beside.is_file():
        return str(beside)
    found = shutil.which("ray")
    if found is None:
        raise UsageError(
            "the ray command is not installed",
            hint="pip install 'iteragpu-lab[cluster]' (on every node, the same "
            "version as the head)",
        )
    return found


def start_command(
    *,
    head: bool,
    address: str | None,
    port: int | None,
    bind: str,
    label: str | None,
    num_cpus: int | None = None,
    temp_dir: str | None = None,
) -> list[str]:
    """The ``ray start`` command line of a head (``head``) or of a node joining ``address``."""
    if port is not None and not head:
        raise UsageError(
            "--port is the head's port: give it with --head",
            hint="a joining node names the head with --address HOST:PORT",
        )
    if head == (address is not None):
        raise UsageError(
            "say either --head (start the cluster) or --address HOST:PORT (join it)",
            hint="iteralab worker start --head --port 6379, then on "
            "each box: iteralab worker start --address HEAD:6379 --label rtx-4090",
        )
    command = [ray_executable(), "start", "--node-ip-address", bind, "--disable-usage-stats"]
    if head:
        command += [
            "--head",
            "--port",
            str(port or DEFAULT_PORT),
            "--include-dashboard",
            "false",
            "--dashboard-host",
            bind,
        ]
    else:
        assert address is not None
        command += ["--address", address]
    if label is not None:
        check_label(label, "--label")
        command += ["--resources", json.dumps({resource(label): 1})]
    if num_cpus is not None:
        command += ["--num-cpus", str(num_cpus)]
    if temp_dir is not None:
        command += ["--temp-dir", temp_dir]
    return command


def node_environment() -> dict[str, str]:
    """This process's environment with :data:`NODE_ENVIRONMENT` set."""
    return {**os.environ, **NODE_ENVIRONMENT}


def _run(command: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=node_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolkitError(
            f"`{' '.join(command)}` did not finish in {timeout_s:g} s",
            hint="check the address and the network between the nodes",
        ) from exc


#: Where Ray keeps an authentication token it generated (see :func:`start`'s hint).
AUTH_TOKEN = "~/.ray/auth_token"


def start(
    *,
    head: bool,
    address: str | None,
    port: int | None,
    bind: str,
    label: str | None,
    num_cpus: int | None = None,
    temp_dir: str | None = None,
    timeout_s: float = 120.0,
) -> Started:
    """Run ``ray start``; ToolkitError with Ray's last lines when it fails."""
    command = start_command(
        head=head,
        address=address,
        port=port,
        bind=bind,
        label=label,
        num_cpus=num_cpus,
        temp_dir=temp_dir,
    )
    done = _run(command, timeout_s)
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        tail = " | ".join(output.splitlines()[-4:])
        hint = (
            "is a Ray node already running here (`iteralab worker stop`)? is the head's "
            "address right and reachable?"
        )
        if "authtoken" in output.replace("_", "").replace(" ", "").lower():
            # Seen here: a local ray.init() had left a token that a later head refused.
            hint = (
                f"Ray refused an authentication token: an earlier `ray.init()` on this "
                f"machine may have left {AUTH_TOKEN}; remove it if no cluster of yours "
                "uses it, then start again"
            )
        raise ToolkitError(f"ray start failed (exit {done.returncode}): {tail}", hint=hint)
    joined = f"{bind}:{port or DEFAULT_PORT}" if head else str(address)
    role = "head" if head else "worker"
    return Started(role, joined, label, command, output, bind)


def stop(timeout_s: float = 120.0) -> str:
    """Run ``ray stop``: every Ray process of this user on this machine ends. Its output."""
    done = _run([ray_executable(), "stop"], timeout_s)
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise ToolkitError(
            f"ray stop failed (exit {done.returncode}): " + " | ".join(output.splitlines()[-4:]),
            hint="run `ray stop --force` yourself",
        )
    return output
