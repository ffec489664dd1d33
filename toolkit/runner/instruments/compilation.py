"""torch.compile, one attempt at a time (R8): the call, fresh caches, counted compilations.

A compiled attempt gets its own Inductor and Triton cache folders (removed after it) and a
dynamo reset on entry and exit, so its ``load_s`` does not depend on what an earlier attempt
or run left on disk or in this process; hitting dynamo's recompile limit fails the attempt
instead of silently running eager. Compilations are counted (dynamo's unique-graph counter),
so the attempt says how many happened in each phase: one inside the measured window puts
compile time into ``measured_s``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

#: The torch.compile backend (tests trace with "eager": same graphs and counts, no codegen).
BACKEND = "inductor"
#: The Manifest's compile_setup of a compiled variant.
SETUP = (
    "torch.compile(dynamic=True), backend inductor; per attempt: dynamo reset, fresh "
    "Inductor and Triton cache folders; hitting the recompile limit fails the attempt"
)
NOT_COMPILED = "not compiled"
CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
#: Inductor's advice on GPUs with TF32 when float32 products stay in full precision, as the
#: runner pins them (toolkit.runner.instruments.precision): expected, so not a warning here.
TF32_ADVICE = r"TensorFloat32 tensor cores for float32 matrix multiplication available"
#: torch's own modules, imported by Inductor, still use torch.jit decorators it deprecates.
JIT_DEPRECATION = r"`torch\.jit\.\w+` is deprecated"


def compile_module(module: nn.Module) -> nn.Module:
    """``module`` wrapped by torch.compile (compiled at its first call for each new shape)."""
    return torch.compile(module, backend=BACKEND, dynamic=True)  # type: ignore[return-value]


@contextmanager
def expected_warnings() -> Iterator[None]:
    """Ignore the two warnings compiling is known to give here, and only those."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=TF32_ADVICE, category=UserWarning)
        warnings.filterwarnings("ignore", message=JIT_DEPRECATION, category=DeprecationWarning)
        yield


def graphs_compiled() -> int:
    """Graphs dynamo has compiled in this process so far (0 before any compile)."""
    if "torch._dynamo" not in sys.modules:
        return 0
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


class GraphCount:
    """Graphs compiled between calls of :meth:`take`."""

    def __init__(self) -> None:
        self._last = graphs_compiled()

    def take(self) -> int:
        """Graphs compiled since the previous call (or since creation)."""
        now = graphs_compiled()
        count, self._last = now - self._last, now
        return count


def _limit_flag() -> str:
    import torch._dynamo.config as config

    return (
        "fail_on_recompile_limit_hit"
        if hasattr(config, "fail_on_recompile_limit_hit")
        else "fail_on_cache_limit_hit"
    )  # its name before torch 2.6


def fails_on_recompile_limit() -> bool:
    """Whether hitting dynamo's recompile limit raises (instead of running eager)."""
    import torch._dynamo.config as config

    return bool(getattr(config, _limit_flag()))


def reset() -> None:
    """Forget what this process compiled: dynamo's code caches, Inductor's in-memory
    caches, its compile workers (they keep the environment they started with)."""
    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
    utils = sys.modules.get("torch._inductor.utils")
    clear = getattr(utils, "clear_caches", None) or getattr(utils, "clear_inductor_caches", None)
    if clear is not None:
        clear()
    workers = sys.modules.get("torch._inductor.async_compile")
    shutdown = getattr(workers, "shutdown_compile_workers", None)
    if shutdown is not None:
        shutdown()


@dataclass
class Caches:
    """The attempt's compile cache folder (None when it does not compile)."""

    folder: Path | None
    files: int = 0

    def note(self) -> str | None:
        """What the attempt's notes say about its caches."""
        if self.folder is None:
            return None
        return (
            f"compile caches: fresh Inductor and Triton folders for this attempt ({self.files}"
            " files written, removed after it)"
        )


def _count_files(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


@contextmanager
def _variables(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def session(compiled: bool) -> Iterator[Caches]:
    """The attempt's compile state: for a compiled variant, fresh cache folders, a dynamo
    reset on entry and exit, a failing recompile limit, the expected warnings ignored."""
    if not compiled:
        yield Caches(None)
        return
    import torch._dynamo.config

    caches = Caches(Path(tempfile.mkdtemp(prefix="iteralab-compile-")))
    assert caches.folder is not None
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, caches.folder, ignore_errors=True)
        stack.enter_context(
            _variables(
                {
                    "TORCHINDUCTOR_CACHE_DIR": str(caches.folder / "inductor"),
                    "TRITON_CACHE_DIR": str(caches.folder / "triton"),
                }
            )
        )
        stack.enter_context(torch._dynamo.config.patch(_limit_flag(), True))
        stack.enter_context(expected_warnings())
        reset()
        try:
            yield caches
        finally:
            reset()
            caches.files = _count_files(caches.folder)
