"""A local OpenAI-compatible server: ``transformers serve`` on 127.0.0.1, for tests and demos.

Started as a child process with a local model folder preloaded, waited for until
``/health`` answers, stopped by SIGTERM (SIGKILL after a grace period). Its output goes to a
log file that stays after it stops. No torch here: the server is another process.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from types import TracebackType

import httpx

from toolkit.errors import EndpointError

#: What ``transformers serve`` needs besides transformers (the ``serving`` extra):
#: transformers.utils.import_utils.is_serve_available, and accelerate for its device_map.
NEEDS = ("transformers", "fastapi", "uvicorn", "pydantic", "openai", "accelerate")
LOG_TAIL_CHARS = 2000


def missing_packages() -> list[str]:
    """The packages ``transformers serve`` needs that are not installed (or, for
    transformers, older than 5: the command line used here is transformers 5's)."""
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if "transformers" not in missing and int(metadata.version("transformers").split(".")[0]) < 5:
        missing.append("transformers>=5")
    return missing


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """``transformers serve MODEL_DIR`` on 127.0.0.1:``port``, logging to ``log``.

    Use as a context manager: entering starts it and waits until it answers; leaving stops
    it. ``base_url`` and ``model`` (the name it serves the folder under) are what a client
    needs."""

    def __init__(
        self,
        model_dir: str | Path,
        log: str | Path,
        port: int | None = None,
        startup_timeout_s: float = 120.0,
    ) -> None:
        self.model_dir = Path(model_dir).resolve()
        self.log = Path(log)
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.model = str(self.model_dir)
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until ``/health`` answers 200; EndpointError (with the
        log's tail) when it exits or stays silent past the start-up timeout."""
        missing = missing_packages()
        if missing:
            raise EndpointError(
                f"transformers serve cannot start: {', '.join(missing)} not installed",
                hint="pip install 'iteragpu-lab[serving]'",
            )
        if not (self.model_dir / "config.json").is_file():
            raise EndpointError(
                f"{self.model_dir}: not a model folder (no config.json)",
                hint="give the folder of a transformers model, e.g. samples/causal_lm",
            )
        command = [sys.executable, "-m", "transformers.cli.transformers", "serve"]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu"]
        command += [str(self.model_dir)]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
                start_new_session=True,
            )
        self._wait()

    def _wait(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise self._failed(f"exited with code {self._process.returncode}")
            try:
                if httpx.get(f"{self.base_url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise self._failed(f"did not answer within {self.startup_timeout_s:g} s")

    def _failed(self, what: str) -> EndpointError:
        tail = self.log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        return EndpointError(
            f"transformers serve on {self.base_url} {what}; the end of its log "
            f"({self.log}):\n{tail}",
            hint="read the log; a port in use or a missing package are the usual causes",
        )

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``grace_s``); a no-op if stopped."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
