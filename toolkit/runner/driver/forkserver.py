"""Fresh workers without paying the imports each time: one fork server per campaign run.

Process policy ``fresh`` gives every attempt its own process, so its memory peaks and
caches are its own (R18). Started as ``python -m toolkit.runner.driver.worker``, each attempt
also paid seconds of importing torch, transformers and the model's class before it could
load anything. So a campaign run starts one server
(``python -m toolkit.runner.driver.forkserver``) that imports those once, never runs an operator
and never touches CUDA, and forks one worker per attempt, and one for the pre-flight. A fork
is still a new process: nothing of an earlier attempt is in it, and its peak memory starts at
the server's, the imports every worker makes anyway. The worker is the same ``worker.main``,
on the same stdin/stdout/stderr protocol, in its own session (Ctrl-C reaches it through the
campaign).

CUDA campaigns fork too. A CUDA context does not survive a fork, so the server must never
create one, nor even initialise the driver (``cuInit``, which ``torch.cuda.is_available()``
calls unless ``PYTORCH_NVML_BASED_CUDA_CHECK=1``): it imports and reads metadata only, sets
that variable for its own incidental checks (each worker gets the campaign's value back), and
checks ``torch.cuda.is_initialized()`` before every fork. Should it be true, the server refuses
that fork and says why; the campaign then starts that worker and the rest with
``python -m toolkit.runner.driver.worker``, and the run's breakdown says so. Each forked worker
initialises its own CUDA context, as a spawned one does. The campaign's own process may ask
torch about its devices (the declared card is checked before any attempt): that does not reach
the server, a separate program the campaign starts with ``exec``, which inherits no CUDA
state.

The server answers a fork at once and says each worker's exit when it comes (``pid N``, then
``exit N CODE``, for any number of workers alive), so the campaign can have the next
attempt's worker forked and waiting for its spec while the previous worker exits and its
attempt is recorded (:meth:`toolkit.runner.driver.campaign.Workers.ahead`). What a worker
reads of the machine's software (:func:`environment.installed`) is read once, here, before
any fork.

Started per run, the server sees the campaign's environment (``HF_HUB_OFFLINE``, the
fault-injection hook). Linux 5.3 or later only: the worker's pipes travel to the server
over a Unix socket, and the server watches each worker's exit through a pidfd. The campaign
falls back to ``python -m toolkit.runner.driver.worker`` when the server cannot start or
refuses a fork (or ``ITERALAB_FORK_SERVER=0``); a server that dies mid-run fails that one
attempt's row, not the campaign.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from toolkit.planner.models import resolve_model_path
from toolkit.runner.driver import worker
from toolkit.runner.instruments import environment  # no torch: it imports torch when asked

DISABLE_ENV = "ITERALAB_FORK_SERVER"
#: torch's switch for a CUDA availability check through NVML, which does not initialise the
#: CUDA driver in the asking process (the default check does, and no fork may follow it).
NVML_CHECK_ENV = "PYTORCH_NVML_BASED_CUDA_CHECK"
PROJECT_ROOT = Path(__file__).resolve().parents[3]
#: How long the server may take to import everything before the campaign gives up on it.
READY_TIMEOUT_S = 300.0


class ForkServerError(Exception):
    """The server could not start, or stopped answering."""


def worker_env() -> dict[str, str]:
    """The environment of a run's worker processes (forked or not): this one's, the toolkit
    importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH")) if p)
    return env


def spawn(env: dict[str, str], stderr: IO[Any]) -> subprocess.Popen[str]:
    """A worker started as ``python -m toolkit.runner.driver.worker`` (no fork server), in
    its own session: Ctrl-C reaches it through the campaign, once."""
    return subprocess.Popen(
        [sys.executable, "-m", "toolkit.runner.driver.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        encoding="utf-8",
        env=env,
        start_new_session=True,
    )


@dataclass
class Launches:
    """How a run's workers were started: forked by the server or spawned as
    ``python -m toolkit.runner.driver.worker``, and why spawned (the first reason)."""

    forked: int = 0
    spawned: int = 0
    why_spawned: str | None = None

    def spawning(self, why: str) -> None:
        """Workers are spawned from now on, for ``why`` (kept if the first)."""
        self.why_spawned = self.why_spawned or why

    def summary(self) -> dict[str, Any]:
        """JSON-ready: the counts, and the reason when any worker was spawned."""
        return {
            "forked": self.forked,
            "spawned": self.spawned,
            "why_spawned": self.why_spawned if self.spawned else None,
        }


def launch(
    server: ForkServer | None,
    env: dict[str, str],
    stderr: IO[Any],
    launches: Launches | None = None,
) -> Worker:
    """A worker forked by ``server``, or started by :func:`spawn` when there is none or it
    could not fork (then closed): a :class:`ForkedWorker` or a ``subprocess.Popen``.
    ``launches`` counts which, and keeps why a server did not fork."""
    launches = launches if launches is not None else Launches()
    if server is not None:
        try:
            worker = server.start(stderr)
            launches.forked += 1
            return worker
        except ForkServerError as exc:
            launches.spawning(str(exc))
            server.failure = str(exc)
            server.close()
    launches.spawned += 1
    return spawn(env, stderr)


def unavailable() -> str | None:
    """Why this platform cannot run the server, or the user turned it off; None when it can."""
    if os.environ.get(DISABLE_ENV, "1") == "0":
        return f"the fork server is turned off ({DISABLE_ENV}=0)"
    if sys.platform != "linux" or not hasattr(socket, "send_fds") or not hasattr(os, "pidfd_open"):
        return (
            "the fork server needs Linux 5.3 or later and Python's socket.send_fds and "
            "os.pidfd_open"
        )
    return None


def available() -> bool:
    """Whether this platform can run the server, and the user has not turned it off."""
    return unavailable() is None


class ForkServer:
    """The campaign's side: start the server, ask it for one worker per attempt.

    Starting does not wait: the server imports on its own core while this process goes on
    (a demo copies its files and checks its workbook meanwhile); :meth:`start` waits for
    it the first time.
    """

    #: The server's program; the socket's descriptor number is appended.
    PROGRAM = (sys.executable, "-m", "toolkit.runner.driver.forkserver")

    def __init__(self, env: dict[str, str], program: Sequence[str] = PROGRAM) -> None:
        mine, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [*program, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            mine.close()
            raise ForkServerError(f"cannot start the fork server: {exc}") from exc
        finally:
            theirs.close()
        self.env = env
        #: Why it stopped serving (it refused or failed a fork, and was closed); None if not.
        self.failure: str | None = None
        self._socket = mine
        self._buffer = b""
        self._answers = ["ready"]  # what the server owes before it can fork
        #: Exit codes the server said, by worker pid, until each worker's owner asks.
        self._exits: dict[int, int] = {}
        #: The (folder, model_path) pairs whose classes the server was asked to import.
        self._preloaded: set[tuple[str, str]] = set()

    def preload(self, base: Path, model_paths: list[str]) -> None:
        """Have the server import each model's class too (no weights), before any fork; a
        model asked for before is not asked for again."""
        model_paths = [m for m in model_paths if (str(base), m) not in self._preloaded]
        if not model_paths:
            return
        self._preloaded.update((str(base), m) for m in model_paths)
        message = json.dumps({"base": str(base), "models": model_paths})
        try:
            self._socket.sendall(b"preload " + message.encode("utf-8") + b"\n")
        except OSError as exc:
            raise ForkServerError(f"the fork server stopped answering: {exc}") from exc
        self._answers.append("preloaded")

    def ready(self) -> None:
        """Wait until the server has imported everything; raises ForkServerError."""
        while self._answers:
            try:
                line = self._line(READY_TIMEOUT_S)
            except ForkServerError:
                line = None
            if line != self._answers[0]:
                self.close()
                raise ForkServerError("the fork server did not get ready")
            self._answers.pop(0)

    def _line(self, timeout: float | None) -> str | None:
        """The server's next line; None when ``timeout`` passes first."""
        while b"\n" not in self._buffer:
            if self._socket.fileno() < 0:  # closed here: a fork failed once the server died
                raise ForkServerError(f"the fork server stopped serving ({self.failure})")
            if timeout is not None:
                readable, _, _ = select.select([self._socket], [], [], timeout)
                if not readable:
                    return None
            try:
                chunk = self._socket.recv(4096)
            except OSError as exc:
                raise ForkServerError(f"the fork server stopped answering: {exc}") from exc
            if not chunk:
                raise ForkServerError("the fork server stopped")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("ascii")

    def start(self, stderr: IO[Any]) -> ForkedWorker:
        """A new worker, its stderr into ``stderr``; raises ForkServerError."""
        self.ready()
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        try:
            socket.send_fds(self._socket, [b"fork\n"], [stdin_read, stdout_write, stderr.fileno()])
            answer = self._answer(READY_TIMEOUT_S)
        except (OSError, ForkServerError) as exc:
            answer = f"no answer ({exc})"
        finally:
            os.close(stdin_read)  # the worker holds these ends now
            os.close(stdout_write)
        if answer is None or not answer.startswith("pid "):
            os.close(stdin_write)
            os.close(stdout_read)
            if answer is not None and answer.startswith("refused "):
                raise ForkServerError(answer.removeprefix("refused "))
            raise ForkServerError(f"the fork server did not start a worker: {answer}")
        return ForkedWorker(
            self,
            int(answer.split()[1]),
            os.fdopen(stdin_write, "w", encoding="utf-8"),
            os.fdopen(stdout_read, "r", encoding="utf-8"),
        )

    def _answer(self, timeout: float | None) -> str | None:
        """The server's next line that is not a worker's exit (kept for :meth:`exit_code`)."""
        while True:
            line = self._line(timeout)
            if line is None or not self._kept_exit(line):
                return line

    def _kept_exit(self, line: str) -> bool:
        """Keep the exit a line ``exit PID CODE`` says (for :meth:`exit_code`); whether it
        was one."""
        if not line.startswith("exit "):
            return False
        _, pid, code = line.split()
        self._exits[int(pid)] = int(code)
        return True

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """Worker ``pid``'s exit code (as Popen gives it); None while it runs."""
        while pid not in self._exits:
            try:
                line = self._line(timeout)
            except ForkServerError:
                return 1  # the server died with the worker's status: a failure, said by its row
            if line is None:
                return None
            self._kept_exit(line)
        return self._exits.pop(pid)

    def close(self) -> None:
        self._socket.close()  # the server reads end-of-file and exits
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


#: A server started ahead of its campaign (:func:`prestart`), until the campaign takes it.
_prestarted: ForkServer | None = None


def prestart(env: dict[str, str] | None = None) -> None:
    """Start the server now for the campaign this command runs next (fresh processes),
    so that its imports overlap the command's own imports and
    preparation; ``env`` defaults to :func:`worker_env`. Light to import on purpose: the
    demo calls it before anything heavy."""
    global _prestarted
    if _prestarted is None and available():
        try:
            _prestarted = ForkServer(worker_env() if env is None else env)
        except ForkServerError:
            pass  # the campaign starts its own, or falls back


def preload_prestarted(base: Path, model_paths: list[str]) -> None:
    """Have the prestarted server, if any, import the campaign's model classes now: the
    pre-flight's fork and every worker then find them imported."""
    global _prestarted
    if _prestarted is not None:
        try:
            _prestarted.preload(base, model_paths)
        except ForkServerError:
            _prestarted.close()
            _prestarted = None


def prestarted() -> ForkServer | None:
    """The prestarted server, once it is ready, left for its campaign to :func:`take`; None
    without one, or when it could not get ready (then closed)."""
    global _prestarted
    if _prestarted is not None:
        try:
            _prestarted.ready()
        except ForkServerError:
            _prestarted = None  # ready() closed it
    return _prestarted


def take(env: dict[str, str]) -> ForkServer | None:
    """The prestarted server, if it was started with ``env``; one started otherwise is
    closed (a server sees the environment it started with). A variable set since, that the
    server lacks, does not count: a library this process imported set it for itself
    (pandera's imports set SPARK_LOCAL_IP and PYARROW_IGNORE_TIMEZONE), and closing the
    server for it made every demo wait for a second one's imports."""
    global _prestarted
    server, _prestarted = _prestarted, None
    if server is not None and any(env.get(k) != v for k, v in server.env.items()):
        server.close()
        return None
    return server


def discard() -> None:
    """Close the prestarted server, if no campaign took it."""
    global _prestarted
    server, _prestarted = _prestarted, None
    if server is not None:
        server.close()


class ForkedWorker:
    """A forked worker with what the campaign uses of ``subprocess.Popen``."""

    def __init__(self, server: ForkServer, pid: int, stdin: IO[str], stdout: IO[str]) -> None:
        self._server = server
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, 0)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, None)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


#: A worker process as the campaign holds it: forked by the server, or spawned.
Worker = ForkedWorker | subprocess.Popen[str]


# ---------------------------------------------------------------- the server's side


def _import_runner() -> None:
    """Import what every worker imports: torch, transformers, the runner; read the installed
    software the workers' manifests record, and what ``nvidia-smi`` says of the cards (a
    child process: no CUDA state here)."""
    # Lazy so that the campaign's side of this module, which starts the server, never
    # imports them.
    from toolkit.runner import attempt  # noqa: F401 - what worker.main imports

    environment.installed()
    environment.nvidia_smi_reading()


def _preload(base: Path, model_paths: list[str]) -> None:
    """Import each variant's model class (no weights)."""
    from transformers import MODEL_MAPPING, AutoConfig

    for spec in dict.fromkeys(model_paths):
        try:
            folder, _ = resolve_model_path(spec, base)
            if folder is not None:
                MODEL_MAPPING[type(AutoConfig.from_pretrained(str(folder), local_files_only=True))]
        except Exception:  # noqa: BLE001 - only a head start: the attempt reports real errors
            continue


def cuda_initialized() -> bool:
    """Whether torch has initialised CUDA in this process (False on a build without CUDA)."""
    import torch

    return bool(torch.cuda.is_initialized())


def cuda_refusal(initialized: bool) -> str | None:
    """Why the server must not fork, given whether CUDA is initialised in it; None when it
    may."""
    if initialized:
        return (
            "the fork server refused to fork: CUDA is initialised in it, and a forked worker "
            "could not use the GPU"
        )
    return None


def _worker(fds: list[int], nvml_check: str | None) -> None:
    """In the fork: become the worker on the campaign's pipes, then exit with its code.
    ``nvml_check``: the campaign's own :data:`NVML_CHECK_ENV`, given back to the worker."""
    code = 1
    try:
        if nvml_check is None:
            os.environ.pop(NVML_CHECK_ENV, None)
        else:
            os.environ[NVML_CHECK_ENV] = nvml_check
        os.setsid()  # its own session, as `start_new_session`: Ctrl-C comes via the campaign
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        code = worker.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on stderr, as a worker process would
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def serve(fd: int, initialized: Callable[[], bool] = cuda_initialized) -> int:
    """Import, then preload models and fork a worker per request until the campaign closes
    the socket; say each worker's pid at once and its exit when it comes, or why it refused
    to fork (``initialized``: whether CUDA is initialised here, asked before every fork)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is the campaign's
    channel = socket.socket(fileno=fd)
    # Any CUDA availability check in the imports asks NVML, not the driver (see above).
    nvml_check = os.environ.get(NVML_CHECK_ENV)
    os.environ[NVML_CHECK_ENV] = "1"
    _import_runner()
    # What the server imports lives as long as it does: frozen, out of the collector's sight,
    # so each worker's gc.collect (two per attempt, to free a model and set memory baselines)
    # walks only what its attempt made, not torch's and transformers' modules (0.1-0.25 s
    # each here), and the collector never writes to the pages the forks share.
    gc.freeze()
    channel.sendall(b"ready\n")
    pending = b""
    #: A descriptor per living worker that becomes readable when it exits (pidfd).
    exits: dict[int, int] = {}
    try:
        while True:
            readable, _, _ = select.select([fd, *exits], [], [])
            for pidfd in [r for r in readable if r in exits]:
                pid = exits.pop(pidfd)
                os.close(pidfd)
                _, status = os.waitpid(pid, 0)
                channel.sendall(f"exit {pid} {os.waitstatus_to_exitcode(status)}\n".encode())
            if fd not in readable:
                continue
            message, fds, _, _ = socket.recv_fds(channel, 65536, 3)
            if not message:
                return 0  # the campaign is done
            if not fds:  # a preload line (it may come in pieces)
                pending += message
                while b"\n" in pending:
                    line, _, pending = pending.partition(b"\n")
                    request = json.loads(line.removeprefix(b"preload "))
                    _preload(Path(request["base"]), list(request["models"]))
                    gc.freeze()  # the model classes too, as above
                    channel.sendall(b"preloaded\n")
                continue
            if len(fds) != 3:
                return 0
            refusal = cuda_refusal(initialized())
            if refusal is not None:
                for received in fds:
                    os.close(received)
                channel.sendall(f"refused {refusal}\n".encode())
                continue
            pid = os.fork()
            if pid == 0:
                channel.close()
                for pidfd in exits:
                    os.close(pidfd)
                _worker(fds, nvml_check)
            for received in fds:
                os.close(received)
            exits[os.pidfd_open(pid)] = pid
            channel.sendall(f"pid {pid}\n".encode("ascii"))
    except OSError:
        return 0  # the campaign went away


if __name__ == "__main__":
    # os._exit: the server holds nothing to flush (its output goes to /dev/null), and the
    # interpreter's teardown of torch and transformers took seconds the campaign waited for.
    os._exit(serve(int(sys.argv[1])))
