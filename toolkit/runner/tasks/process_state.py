"""The process state every attempt starts from: torch's threads, the seed it runs with, and
where its progress events go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from toolkit.runner import plan
from toolkit.runner.instruments import precision, probes, reproducibility
from toolkit.runner.spec import AttemptSpec

#: torch's threads in this process before any attempt pinned its own. An attempt that
#: declares none runs with these, not with whatever the previous attempt in a shared
#: campaign process declared (torch.set_num_threads outlives the attempt).
STARTING_THREADS = torch.get_num_threads()


def attempt_threads(spec: AttemptSpec) -> int:
    """The torch threads ``spec`` runs with: its own, else the process's starting count."""
    return int(spec.threads or STARTING_THREADS)


#: Where an attempt sends its progress events (phase changes, items done).
Emit = Callable[[dict[str, Any]], None]


def attempt_seed(spec: AttemptSpec) -> int | None:
    """The seed the attempt runs with: its slot's, else the protocol's first (R17)."""
    if spec.seed is not None:
        return int(spec.seed)
    declared = plan.seeds(spec.protocol.get("seeds"))
    return declared[0] if declared else None


def start_process(
    spec: AttemptSpec, device: torch.device
) -> tuple[int, int | None, tuple[int, int] | None]:
    """Put this process in the state the attempt is measured in: torch threads, fp32 at full
    precision (R16), the Protocol's determinism choices and the attempt's seed (R17), CUDA
    peaks reset after memory is released. Returns (threads, seed, the peaks' baseline)."""
    threads = attempt_threads(spec)
    torch.set_num_threads(threads)
    precision.pin_fp32()
    reproducibility.apply(spec.protocol, device)
    seed = attempt_seed(spec)
    reproducibility.seed(seed)
    return threads, seed, probes.start_cuda_peaks(device)
