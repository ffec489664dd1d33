"""Campaigns on a Ray cluster (`iteralab worker`, `iteralab run --cluster`), on this machine.

Two kinds of cluster: ``ray.cluster_utils.Cluster`` (nodes started by this process) and
a real pair started through `iteralab worker start` (`ray start --head` + `ray start
--address`), each node with its own short temporary folder so that teardown ends exactly
the processes it started (by pid, the node's processes and their children). Nodes take one
CPU each; the campaigns are two variants on an eight-item slice.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.builders import ROOT, attempts, make_campaign, unexplained, variant
from toolkit.cli import cli
from toolkit.evidence import journal
from toolkit.evidence.validate import validate
from toolkit.plumbing.digests import file_sha256
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

ray = pytest.importorskip(
    "ray", reason="the cluster extra is not installed (pip install 'iteragpu-lab[cluster]')"
)
from ray.cluster_utils import Cluster  # noqa: E402

from toolkit.cluster.labels import resource  # noqa: E402
from toolkit.cluster.task import STAGING_PREFIX  # noqa: E402

#: A small object store per node: the campaign's corpus and head are a few kB.
STORE_BYTES = 80 * 2**20
#: Process titles of a node's own Ray processes (not an attempt's task).
IDLE = ("ray::IDLE", "ray::DashboardAgent", "ray::RuntimeEnvAgent")


def _elsewhere(label: str) -> dict[str, object]:
    """b4-fp32 on another label: another machine, so a later series naming what it changes
    (R6: in series 1 only the batch varies)."""
    return variant(
        "b4-fp32", 4, label=label, series=2, base_variant="b1-fp32", changes="batch_size, label"
    )


TWO_LABELS = [variant("b1-fp32", 1, label="cpu-a"), _elsewhere("cpu-b")]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def _book(
    folder: Path, variants: list[dict[str, object]] = TWO_LABELS, repetitions: int = 1
) -> Path:
    return make_campaign(
        folder, 8, variants, warmup_rule="none", process_policy="fresh", repetitions=repetitions
    )


def _plan(book: Path) -> list[tuple[str, int, str]]:
    return sorted((r["variant_id"], r["repetition"], r["status"]) for r in attempts(book))


def _node_of(row: dict[str, Any]) -> str:
    """The Ray node id prefix the driver noted on a row."""
    note = row["notes"].split("ran on Ray node ")[1]
    return note.split()[0]


def _staging_left() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob(STAGING_PREFIX + "*")}


def _only_driver_files(book: Path, driver: int | None = None) -> None:
    """The workbook's folder holds what the driver writes and nothing else; each predictions
    file is the one its row names, byte for byte; every start line is the driver's (this
    process, or the pid ``driver``)."""
    folder = book.parent
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "campaign.xlsx",
            "campaign.bak.xlsx",
            "campaign.xlsx.lock",
            "campaign.journal.jsonl",
            "campaign.runs.jsonl",
            "campaign.chain.json",
            "campaign.campaign.lock",
            "campaign.campaign.json",
            "campaign_predictions",
            "corpus.jsonl",
            "head",
        ]
    )
    rows = [r for r in attempts(book) if r["predictions_path"]]
    assert sorted(p.name for p in (folder / "campaign_predictions").iterdir()) == sorted(
        Path(r["predictions_path"]).name for r in rows
    )
    for row in rows:
        assert file_sha256(folder / row["predictions_path"]) == row["predictions_sha256"]
    lines = [json.loads(line) for line in journal.journal_path(book).read_text().splitlines()]
    assert {e["pid"] for e in lines if e["format"] == journal.START_FORMAT} == {
        driver or os.getpid()
    }


def _overlap(book: Path, first: str, second: str) -> bool:
    """Whether an attempt of variant ``first`` ran while one of ``second`` ran (journal
    times: start, and the attempt's own elapsed seconds)."""
    spans: dict[str, list[tuple[float, float]]] = {first: [], second: []}
    for entry in journal.read(book):
        start = dt.datetime.fromisoformat(entry["attempt"]["started_at"]).timestamp()
        spans[entry["attempt"]["variant_id"]].append((start, start + entry["elapsed_s"]))
    return any(a0 < b1 and b0 < a1 for a0, a1 in spans[first] for b0, b1 in spans[second])


# ---- ray.cluster_utils.Cluster ---------------------------------------------------------


@pytest.fixture(scope="class")
def two_nodes() -> Iterator[tuple[str, dict[str, str]]]:
    """A head without labels and two nodes, cpu-a and cpu-b: (address, node id by label)."""
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "object_store_memory": STORE_BYTES,
            "include_dashboard": False,
        },
    )
    try:
        nodes = {
            label: cluster.add_node(
                num_cpus=1, resources={resource(label): 1}, object_store_memory=STORE_BYTES
            ).node_id
            for label in ("cpu-a", "cpu-b")
        }
        cluster.wait_for_nodes()
        yield cluster.address, nodes
    finally:
        ray.shutdown()
        cluster.shutdown()


class TestClusterUtils:
    def test_each_attempt_runs_on_a_node_of_its_label_and_only_the_driver_writes(
        self, tmp_path: Path, two_nodes: tuple[str, dict[str, str]]
    ) -> None:
        """Two labels, two nodes: each attempt on its label's node; cpu-b waits for the
        reference's first attempt, then both labels run at once; the node stages its own copy
        and the workbook's folder holds only the driver's files."""
        address, nodes = two_nodes
        book = _book(tmp_path, repetitions=2)
        staged_before = _staging_left()
        code, output = _invoke("run", str(book), "--cluster", address)
        assert code == 0, output
        assert output.splitlines()[:2] == [
            f"{book}: 4 attempt(s) to run, 8 items each, process policy fresh; order "
            f"b1-fp32-b4-fp32 / b4-fp32-b1-fp32; on the Ray cluster at {address}",
            "label(s) cpu-b wait for the first attempt of the reference variant b1-fp32 "
            "(label cpu-a): their tolerance is checked against its predictions",
        ]
        assert _plan(book) == [
            ("b1-fp32", 1, "completed"),
            ("b1-fp32", 2, "completed"),
            ("b4-fp32", 1, "completed"),
            ("b4-fp32", 2, "completed"),
        ]
        rows = attempts(book)
        for row in rows:
            label = "cpu-a" if row["variant_id"] == "b1-fp32" else "cpu-b"
            assert _node_of(row) == nodes[label][:12]
            assert f"(label {label}) through `iteralab run --cluster`" in row["notes"]
            assert (row["items_completed"], row["ids_match"], row["quality_verdict"]) == (
                8,
                "yes",
                "pass",
            )
        assert _overlap(book, "b1-fp32", "b4-fp32")
        _only_driver_files(book)
        assert _staging_left() == staged_before  # each node removed its staging folder
        assert validate(store.read(book), book) == []

    def test_a_label_no_node_offers_is_refused_before_anything_starts(
        self, tmp_path: Path, two_nodes: tuple[str, dict[str, str]]
    ) -> None:
        """The refusal names the label and the variant, and lists what the cluster offers;
        nothing is journaled."""
        address, _ = two_nodes
        book = _book(tmp_path, [variant("b1-fp32", 1, label="cpu-a"), _elsewhere("b200")])
        code, output = _invoke("run", str(book), "--cluster", address, "--wait", "1")
        assert code == 2
        assert output.splitlines()[0] == (
            "error: no node of the cluster offers label b200 after waiting 1 s (needed by "
            "b4-fp32); the cluster offers: cpu-a (1 node), cpu-b (1 node)"
        )
        assert not journal.journal_path(book).exists()
        assert attempts(book) == []


# ---- a real `ray start` pair through `iteralab worker start` ----------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry.name)] = (parent, cmdline)
    return found


def _node_pids(temp_dir: str) -> set[int]:
    """The processes of the node started with ``temp_dir``, and all their children."""
    table = _processes()
    pids = {pid for pid, (_, cmd) in table.items() if temp_dir in cmd}
    while True:
        more = {pid for pid, (parent, _) in table.items() if parent in pids} - pids
        if not more:
            return pids
        pids |= more


def _kill_node(temp_dir: str) -> set[int]:
    pids = _node_pids(temp_dir)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


class Pair:
    """A head (label cpu-a) and joining nodes started by `iteralab worker start`."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp_dirs: list[str] = []

    def _temp(self) -> str:
        path = tempfile.mkdtemp(prefix="ilr", dir="/tmp")  # Ray's socket paths must be short
        self.temp_dirs.append(path)
        return path

    def start_head(self) -> str:
        temp = self._temp()
        code, output = _invoke(
            "worker",
            "start",
            "--head",
            "--port",
            str(self.port),
            "--label",
            "cpu-a",
            "--num-cpus",
            "1",
            "--temp-dir",
            temp,
        )
        assert code == 0, output
        return output

    def join(self, label: str) -> str:
        """A node joining the head; returns its temporary folder (its identity here)."""
        temp = self._temp()
        code, output = _invoke(
            "worker",
            "start",
            "--address",
            self.address,
            "--label",
            label,
            "--num-cpus",
            "1",
            "--temp-dir",
            temp,
            "--json",
        )
        assert code == 0, output
        document = json.loads(output)
        assert (document["role"], document["label"], document["bind"]) == (
            "worker",
            label,
            "127.0.0.1",
        )
        return temp

    def close(self) -> None:
        ray.shutdown()
        for temp in reversed(self.temp_dirs):
            _kill_node(temp)
        for temp in self.temp_dirs:
            shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="class")
def pair() -> Iterator[Pair]:
    """A real head (cpu-a) and one node (cpu-b) on localhost, ended by pid afterwards."""
    nodes = Pair()
    try:
        head = nodes.start_head()
        assert head.splitlines()[:3] == [
            f"head node started at {nodes.address} (label cpu-a)",
            f"join it from each box: iteralab worker start --address {nodes.address} --label LABEL",
            f"run a campaign from here: iteralab run WORKBOOK --cluster {nodes.address}",
        ]
        nodes.join("cpu-b")
        yield nodes
    finally:
        nodes.close()


def _wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _tasks_on(temp_dirs: list[str]) -> list[str]:
    """The command lines of Ray workers running a task (not idle) on the given nodes."""
    table = _processes()
    pids = set().union(*(_node_pids(temp) for temp in temp_dirs))
    return [
        cmd
        for pid, (_, cmd) in table.items()
        if pid in pids and cmd.startswith("ray::") and not cmd.startswith(IDLE)
    ]


def _cpu_ticks(pid: int) -> int:
    fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _stalled(book: Path, temp_dir: str) -> bool:
    """Whether the reference's attempt is recorded and the node's task sits in the injected
    hang: its worker uses (almost) no CPU for a second (loading and the first items do)."""
    if [e["attempt"]["variant_id"] for e in journal.read(book)] != ["b1-fp32"]:
        return False
    table = _processes()
    busy = [
        pid
        for pid in _node_pids(temp_dir)
        if table.get(pid, (0, ""))[1].startswith("ray::iteralab a")
    ]  # the task's name
    if len(busy) != 1:
        return False
    try:
        before = _cpu_ticks(busy[0])
        time.sleep(1.0)
        return _cpu_ticks(busy[0]) - before < 10  # under 0.1 s of CPU in a second
    except OSError:
        return False


def _resume_finishes(book: Path, pair: Pair, label: str) -> None:
    """With a node of ``label`` joined, `--resume` runs b4-fp32's interrupted slot again and
    nothing else; both rows stay and the workbook reads back valid."""
    pair.join(label)
    code, output = _invoke("run", str(book), "--cluster", pair.address, "--resume")
    assert code == 0, output
    assert _plan(book) == [
        ("b1-fp32", 1, "completed"),
        ("b4-fp32", 1, "completed"),
        ("b4-fp32", 1, "interrupted"),
    ]
    assert validate(store.read(book), book) == []


def _hanging_campaign(
    tmp_path: Path, pair: Pair, monkeypatch: pytest.MonkeyPatch, label: str
) -> tuple[Path, str, subprocess.Popen[str]]:
    """b1 on cpu-a and b4 on a new ``label`` node whose attempts hang after 4 items, run by
    a real `iteralab run --cluster` driver: (workbook, the node's folder, the driver)."""
    book = _book(tmp_path, [variant("b1-fp32", 1, label="cpu-a"), _elsewhere(label)])
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "hang@4:b4-fp32")  # the node's attempts
    node = pair.join(label)
    monkeypatch.delenv("ITERALAB_INJECT_FAULT")
    driver = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "run", str(book), "--cluster", pair.address],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        # As from a terminal: pytest started in the background by a script (`sh -c '...' &`)
        # ignores SIGINT, the driver would inherit that and never see the test's Ctrl-C.
        preexec_fn=_sigint_as_from_a_terminal,
    )
    return book, node, driver


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class TestRayStart:
    def test_a_head_and_a_node_started_by_worker_start_run_the_campaign(
        self, tmp_path: Path, pair: Pair
    ) -> None:
        """The same two-label campaign on a real `ray start` pair: both attempts completed,
        on two different nodes."""
        book = _book(tmp_path)
        code, output = _invoke("run", str(book), "--cluster", pair.address)
        assert code == 0, output
        assert _plan(book) == [("b1-fp32", 1, "completed"), ("b4-fp32", 1, "completed")]
        rows = {r["variant_id"]: r for r in attempts(book)}
        assert _node_of(rows["b1-fp32"]) != _node_of(rows["b4-fp32"])
        _only_driver_files(book)
        assert validate(store.read(book), book) == []

    def test_a_node_killed_mid_attempt_leaves_an_interrupted_row_and_resume_finishes(
        self, tmp_path: Path, pair: Pair, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The cpu-c node's processes are killed while its attempt runs: that row is
        interrupted with the reason, the cpu-a attempt completes; --resume on a new cpu-c
        node runs the interrupted slot only."""
        book, doomed, driver = _hanging_campaign(tmp_path, pair, monkeypatch, "cpu-c")
        try:

            def b1_recorded_and_b4_running() -> bool:
                done = [e["attempt"]["variant_id"] for e in journal.read(book)]
                running = [
                    cmd
                    for pid, (_, cmd) in _processes().items()
                    if pid in _node_pids(doomed)
                    and cmd.startswith("ray::")
                    and not cmd.startswith(IDLE)
                ]
                return done == ["b1-fp32"] and bool(running)

            _wait_for(b1_recorded_and_b4_running, 150, "the cpu-a attempt's record")
            assert _kill_node(doomed)
            output, _ = driver.communicate(timeout=120)
        finally:
            if driver.poll() is None:
                driver.kill()
        assert driver.returncode == 0, output
        assert (
            "recorded 2 attempt(s)" in output and "1 completed, 0 failed, 1 interrupted" in output
        )
        assert _plan(book) == [("b1-fp32", 1, "completed"), ("b4-fp32", 1, "interrupted")]
        lost = next(r for r in attempts(book) if r["status"] == "interrupted")
        assert lost["notes"].startswith(
            "interrupted: the Ray node running it was lost "
            "(Task failed because the node it was running on is "
            "dead or unavailable"
        )
        assert lost["notes"].endswith(
            "its slot runs again on --resume; label cpu-c; its "
            "Manifest row describes the driver's machine: the node "
            "sent none"
        )

        _resume_finishes(book, pair, "cpu-c")
        assert unexplained(lost) == []  # the row the driver wrote: each empty cell says why

    def test_ctrl_c_interrupts_the_running_attempt_and_resume_finishes(
        self, tmp_path: Path, pair: Pair, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A real SIGINT to `iteralab run --cluster` while the cpu-d attempt is stalled in
        its measured window: the driver cancels the task, the node records it interrupted
        (Ctrl-C, after 4 of 8 items), the run exits 130 well before the driver's own
        fallback deadline, the workbook reads back valid, no task is left on a node;
        --resume on a node without the fault finishes the campaign."""
        from toolkit.cluster.executor import INTERRUPT_WAIT_S

        book, stalling, driver = _hanging_campaign(tmp_path, pair, monkeypatch, "cpu-d")
        try:
            _wait_for(
                lambda: _stalled(book, stalling),
                150,
                "the cpu-d attempt to stall in its measured window",
            )
            driver.send_signal(signal.SIGINT)
            sent = time.monotonic()
            output, _ = driver.communicate(timeout=INTERRUPT_WAIT_S + 60)
            took = time.monotonic() - sent
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()  # reaped, its pipe closed: nothing left for a later test
        assert driver.returncode == 130, output
        assert took < INTERRUPT_WAIT_S / 2, output  # the node answered the cancel itself
        assert "1 completed, 0 failed, 1 interrupted" in output
        assert output.splitlines()[-1] == (  # the same command, so the same cluster
            f"interrupted: continue with `iteralab run {book} --cluster {pair.address} --resume`"
        )
        assert _plan(book) == [("b1-fp32", 1, "completed"), ("b4-fp32", 1, "interrupted")]
        stopped = next(r for r in attempts(book) if r["status"] == "interrupted")
        assert stopped["items_completed"] == 4
        assert stopped["notes"].startswith(
            "interrupted after 4 of 8 items (KeyboardInterrupt: Ctrl-C)"
        )
        assert "(label cpu-d) through `iteralab run --cluster`" in stopped["notes"]
        assert validate(store.read(book), book) == []
        _only_driver_files(book, driver.pid)
        _wait_for(lambda: not _tasks_on(pair.temp_dirs), 30, "no Ray task left on the nodes")

        _kill_node(stalling)  # its workers would stall again: a node without the fault
        _resume_finishes(book, pair, "cpu-d")


# ---- what is refused before Ray is asked anything ----------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("worker", "start"),
            "error: say either --head (start the cluster) or --address HOST:PORT (join it)",
        ),
        (
            ("worker", "start", "--head", "--address", "10.0.0.1:6379"),
            "error: say either --head (start the cluster) or --address HOST:PORT (join it)",
        ),
        (
            ("worker", "start", "--address", "10.0.0.1:6379", "--port", "6380"),
            "error: --port is the head's port: give it with --head",
        ),
        (
            ("worker", "start", "--head", "--label", "RTX 4090"),
            "error: --label: label 'RTX 4090' is not a label",
        ),
    ],
)
def test_worker_start_refuses_what_it_cannot_start(args: tuple[str, ...], message: str) -> None:
    """Usage errors exit 2 before `ray start` runs (no node is started)."""
    code, output = _invoke(*args)
    assert (code, output.splitlines()[0]) == (2, message)


def test_a_cpu_variant_without_a_label_is_refused_before_joining(tmp_path: Path) -> None:
    """A cpu variant must name its label; a cuda variant's gpu_slug is its label."""
    from toolkit.cluster.labels import variant_label

    assert variant_label(variant("b8-4090", 8, device="cuda", gpu_slug="rtx-4090")) == "rtx-4090"
    book = _book(tmp_path, [variant("b1-fp32", 1), _elsewhere("cpu-b")])
    code, output = _invoke("run", str(book), "--cluster", "127.0.0.1:1")
    assert code == 2
    assert output.splitlines()[0] == (
        "error: Variants row b1-fp32, column label: variant b1-fp32 runs on cpu and names no "
        "label, so no node of the cluster is known to run it"
    )
    assert not journal.journal_path(book).exists()


def test_a_refused_ray_token_says_which_file_to_look_at(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's own failure text is kept; the hint names the token an earlier ray.init() left."""
    import subprocess

    from toolkit.cluster import workers
    from toolkit.errors import ToolkitError

    said = "ray.exceptions.AuthenticationError: InvalidAuthToken: the token does not match"
    monkeypatch.setattr(
        workers,
        "_run",
        lambda command, timeout_s: subprocess.CompletedProcess(command, 1, "", said),
    )
    with pytest.raises(ToolkitError) as raised:
        workers.start(head=True, address=None, port=None, bind="127.0.0.1", label=None)
    assert said in raised.value.message
    assert "~/.ray/auth_token" in str(raised.value.hint)
