"""fp32 means fp32 (R16): TF32 off for float32 products, and what could still turn it on.

On NVIDIA cards since Ampere, float32 matrix products and convolutions may run as TF32
(10-bit mantissa): torch's matmul precision, the cuBLAS and cuDNN flags, and two
environment variables decide. The runner pins the flags at each attempt's start, the
Manifest records them as read back, and a variable that forces TF32 is named.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

#: torch reads it once, at its first cuBLAS call: a truthy value forces TF32 in cuBLAS.
FORCE_TF32 = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"
#: NVIDIA libraries: 0 disables TF32 whatever the program asks; other values change nothing.
NVIDIA_OVERRIDE = "NVIDIA_TF32_OVERRIDE"
_TRUE = ("1", "ON", "YES", "TRUE", "Y")


def pin_fp32() -> None:
    """Float32 products and convolutions in full precision (no TF32), for every variant."""
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def tf32_forced(environ: Mapping[str, str]) -> str | None:
    """Why float32 products would still run in TF32 on CUDA, or None."""
    value = environ.get(FORCE_TF32, "")
    if value.strip().upper() in _TRUE:
        return f"{FORCE_TF32}={value} makes cuBLAS run float32 products in TF32"
    return None


def fp32_text(environ: Mapping[str, str]) -> str:
    """The flags as torch reads them back, and the variables that override them."""
    off = {True: "on", False: "off"}
    parts = [
        f"float32 matmul precision {torch.get_float32_matmul_precision()}",
        f"cuBLAS TF32 {off[bool(torch.backends.cuda.matmul.allow_tf32)]}",
        f"cuDNN TF32 {off[bool(torch.backends.cudnn.allow_tf32)]}",
    ]
    if tf32_forced(environ):
        parts.append(f"cuBLAS TF32 forced on by {FORCE_TF32}={environ[FORCE_TF32]}")
    if environ.get(NVIDIA_OVERRIDE, "").strip() == "0":
        parts.append(f"TF32 disabled by {NVIDIA_OVERRIDE}=0")
    return "; ".join(parts)
