"""The process tree's resident memory as the benchmarks sample it (benchmarks/common.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from types import ModuleType

import pytest

from tests.support.benchmarks import import_benchmark

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

MIB = 2**20
#: A process holding 200 MiB resident, then a child of its own: forked and left running the
#: same program (not exec'd: its pages are the parent's), or a program of its own that holds
#: 100 MiB more. Prints "ready" once both hold their memory.
PROGRAM = """
import os, subprocess, sys, time
held = bytearray(200 * 2**20)
for i in range(0, len(held), 4096):
    held[i] = 1
if sys.argv[1] == "fork":
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
else:
    code = "b = bytearray(100 * 2**20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\n"
    code += "print('held', flush=True)\\nimport time; time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child.stdout.readline()
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture(scope="module")
def common() -> ModuleType:
    return import_benchmark("common")


def _tree_with(mode: str, common: ModuleType) -> int:
    with subprocess.Popen(
        [sys.executable, "-c", PROGRAM, mode], stdout=subprocess.PIPE, text=True
    ) as parent:
        try:
            assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
            time.sleep(0.2)
            return int(common.tree_rss_bytes(parent.pid))
        finally:
            subprocess.run(["pkill", "-KILL", "-P", str(parent.pid)], check=False)
            parent.kill()


def test_a_child_running_its_own_program_adds_its_memory(common: ModuleType) -> None:
    assert _tree_with("exec", common) > 300 * MIB


def test_a_forked_child_that_shares_its_parents_pages_is_not_counted_twice(
    common: ModuleType,
) -> None:
    assert 200 * MIB < _tree_with("fork", common) < 300 * MIB
