"""Seeds and determinism, applied at an attempt's start and read back for the Manifest (R17).

The Protocol's ``deterministic_algorithms`` and ``cudnn_benchmark`` set torch's flags (a
blank field leaves them as torch has them); deterministic algorithms on CUDA also need
cuBLAS's fixed workspace, ``CUBLAS_WORKSPACE_CONFIG``, which cuBLAS reads when its handle
is created: a fresh worker sets it before any CUDA work, and a value the user set is kept
(the Manifest records what was in force). TF32 is off for every variant already
(:mod:`toolkit.runner.instruments.precision`). The seed is the attempt's own, one of the Protocol's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

import torch

from toolkit.evidence import determinism

CUBLAS_VARIABLE = "CUBLAS_WORKSPACE_CONFIG"


def apply(
    protocol: Mapping[str, Any],
    device: torch.device,
    environ: MutableMapping[str, str] | None = None,
) -> None:
    """Set torch's determinism flags as the Protocol chooses; a blank choice changes nothing."""
    environ = os.environ if environ is None else environ
    chosen = determinism.wanted(protocol)
    if "deterministic_algorithms" in chosen:
        strict = chosen["deterministic_algorithms"]
        if strict and device.type == "cuda":
            environ.setdefault(CUBLAS_VARIABLE, determinism.CUBLAS_DETERMINISTIC)
        torch.use_deterministic_algorithms(strict)
        torch.backends.cudnn.deterministic = strict
    if "cudnn_benchmark" in chosen:
        torch.backends.cudnn.benchmark = chosen["cudnn_benchmark"]


def seed(value: int | None) -> None:
    """Seed torch's generators (every device) with the attempt's seed; None sets none."""
    if value is not None:
        torch.manual_seed(value)


def state(
    protocol: Mapping[str, Any], threads: int, environ: Mapping[str, str] | None = None
) -> str:
    """The Manifest's ``determinism`` cell: the flags as torch reports them now, the cuBLAS
    workspace variable, and the Protocol's choices."""
    environ = os.environ if environ is None else environ
    return determinism.state_text(
        deterministic=torch.are_deterministic_algorithms_enabled(),
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
        cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
        cublas_workspace=environ.get(CUBLAS_VARIABLE),
        threads=threads,
        choices=determinism.choices_text(protocol),
    )
