"""CUDA campaigns fork their workers too: the decision, the server's no-CUDA guard through
its real protocol, and a run whose server refuses (its workers spawned, the breakdown says
why). On the CPU: the guard takes whether CUDA is initialised as its input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, variant
from toolkit.cli import cli
from toolkit.report import run_time
from toolkit.runner.driver import campaign, forkserver

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

CUDA_SERIES = [
    variant("g1", 1, device="cuda", gpu_slug="h200"),
    variant("g8", 8, device="cuda", gpu_slug="h200"),
]

#: The real server loop, whose "is CUDA initialised?" answers whether a file exists: the
#: test turns CUDA "on" between two forks of one server.
SERVER_WITH_FLAG = """
import os, sys
from toolkit.runner.driver import forkserver
flag = sys.argv[1]
sys.exit(forkserver.serve(int(sys.argv[2]), lambda: os.path.exists(flag)))
"""


def _prepared(folder: Path, rows: list[dict[str, object]], policy: str) -> campaign.Campaign:
    book = make_campaign(
        folder, 4, rows, process_policy=policy, reference_variant=str(rows[0]["variant_id"])
    )
    # The devices are checked on the card; the launcher is decided from the campaign alone.
    return campaign.prepare(book, campaign.Options(devices_here=False))


def test_a_campaign_of_cuda_variants_forks_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(forkserver.DISABLE_ENV, raising=False)
    cuda = _prepared(tmp_path / "cuda", CUDA_SERIES, "fresh")
    assert {v["device"] for v in cuda.variants.values()} == {"cuda"}
    assert campaign.fork_refusal(cuda) is None and campaign.forks(cuda)
    on_cpu = variant("c8", 8, series=2, device="cpu", gpu_slug=None)
    mixed = _prepared(tmp_path / "mixed", [*CUDA_SERIES, on_cpu], "fresh")
    assert {v["device"] for v in mixed.variants.values()} == {"cpu", "cuda"}
    assert campaign.forks(mixed)
    shared = _prepared(tmp_path / "shared", CUDA_SERIES, "shared")
    assert campaign.fork_refusal(shared) == (
        "process policy shared: the attempts run in the campaign's own process"
    )
    monkeypatch.setenv(forkserver.DISABLE_ENV, "0")
    assert campaign.fork_refusal(cuda) == "the fork server is turned off (ITERALAB_FORK_SERVER=0)"


def test_the_server_refuses_to_fork_once_cuda_is_initialised(tmp_path: Path) -> None:
    """One server: forks while CUDA is not initialised, refuses (saying why) once it is; the
    worker asked for then starts as a new interpreter, and the refused server is closed."""
    flag = tmp_path / "cuda-initialised"
    env = forkserver.worker_env()
    server = forkserver.ForkServer(env, (sys.executable, "-c", SERVER_WITH_FLAG, str(flag)))
    launches = forkserver.Launches()
    with open(tmp_path / "err", "w+", encoding="utf-8") as stderr:
        forked = forkserver.launch(server, env, stderr, launches)
        assert isinstance(forked, forkserver.ForkedWorker)
        forked.stdin.close()  # no spec: the worker stops at once
        forked.stdout.close()
        assert forked.wait() == 1
        flag.touch()
        with pytest.raises(forkserver.ForkServerError, match="CUDA is initialised in it"):
            server.start(stderr)
        spawned = forkserver.launch(server, env, stderr, launches)
        assert isinstance(spawned, subprocess.Popen)
        spawned.stdin.close()
        spawned.stdout.close()
        assert spawned.wait(timeout=120) != 0
    assert launches.summary() == {
        "forked": 1,
        "spawned": 1,
        "why_spawned": forkserver.cuda_refusal(True),
    }
    assert server.failure == forkserver.cuda_refusal(True)
    assert server._process.poll() is not None  # closed by the launch that fell back
    assert forkserver.cuda_refusal(False) is None


def test_a_run_whose_server_refuses_spawns_its_workers_and_says_why(tmp_path: Path) -> None:
    """The pre-flight's fork is refused: the pre-flight and every attempt start as new
    interpreters, the attempts complete, and the breakdown (JSON and text) says why."""
    flag = tmp_path / "cuda-initialised"
    flag.touch()
    book = make_campaign(tmp_path, 4, [variant("b1-fp32", 1)], process_policy="fresh")
    program = (sys.executable, "-c", SERVER_WITH_FLAG, str(flag))
    forkserver._prestarted = forkserver.ForkServer(forkserver.worker_env(), program)
    try:
        result = CliRunner().invoke(cli, ["run", str(book), "--json"])
    finally:
        forkserver.discard()
    assert result.exit_code == 0, result.output
    assert [a["status"] for a in attempts(book)] == ["completed"]
    time_ = json.loads(result.output.splitlines()[-1])["time"]
    assert time_["launcher"] == {
        "forked": 0,
        "spawned": 1,
        "why_spawned": forkserver.cuda_refusal(True),
    }
    said = run_time.launcher(time_)
    assert said is not None and "1 started as new interpreters" in said
    assert str(forkserver.cuda_refusal(True)) in said
    assert said in run_time.short(time_)


#: Import what the server imports and preload the sample model, with every torch.cuda entry
#: point that could initialise CUDA (or the driver) recording its callers; print the calls.
CUDA_CALLS = """
import json, sys
import torch
import torch.cuda as tc

calls = []

def recorder(name, real):
    def wrapped(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)
    return wrapped

for name in ("is_available", "device_count", "get_device_properties", "current_device",
             "get_device_name", "get_device_capability", "init", "_lazy_init",
             "is_bf16_supported", "mem_get_info", "set_device", "synchronize"):
    setattr(tc, name, recorder(name, getattr(tc, name)))

from pathlib import Path
from toolkit.runner.driver import forkserver

forkserver._import_runner()
forkserver._preload(Path(sys.argv[1]), [sys.argv[2]])
print(json.dumps({"calls": calls, "initialized": tc.is_initialized()}))
"""


def test_the_servers_imports_and_preloads_never_ask_torch_about_cuda(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 4, CUDA_SERIES[:1], reference_variant="g1")
    model = campaign.model_paths(campaign.prepare(book, campaign.Options(devices_here=False)))
    done = subprocess.run(
        [sys.executable, "-c", CUDA_CALLS, str(book.parent), model[0]],
        env=forkserver.worker_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"calls": [], "initialized": False}
