"""What is really installed, read from the machine (R3-R4, R17).

OS, Python, CPU, RAM, the torch build (CUDA or ROCm version, or CPU only),
each GPU's name, memory and compute capability, the driver (NVML, then
``nvidia-smi``; ``amd-smi``/``rocm-smi`` and /opt/rocm on AMD), transformers
and other package versions, the project's git commit. Nothing is inferred from
a card's name: what cannot be read is said as such ("no GPU", "not found").
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from toolkit import __version__

#: Packages whose versions the manifest lists besides torch and transformers.
PACKAGES = ("tokenizers", "safetensors", "huggingface_hub", "numpy", "accelerate",
            "openpyxl", "xlsxwriter", "pandera", "pandas")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOOL_TIMEOUT_S = 10


def _run(command: list[str]) -> str | None:
    """stdout of a probe command, or None when it is absent or fails."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def os_text() -> str:
    """Distribution name (from /etc/os-release) and platform string."""
    pretty = None
    release = Path("/etc/os-release")
    if release.exists():
        for line in release.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip().strip('"')
    plat = platform.platform()
    return f"{pretty}; {plat}" if pretty else plat


def cpu_text() -> str:
    """CPU model name and logical core count."""
    name = None
    info = Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    name = name or platform.processor() or platform.machine() or "unknown CPU"
    return f"{name} ({os.cpu_count()} logical cores)"


def ram_bytes() -> int | None:
    """Physical memory in bytes, or None when the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of the named packages (absent ones are left out)."""
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def code_version() -> str:
    """Toolkit version and the git commit of the project (saying when the tree is dirty)."""
    head = _run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"])
    if head is None:
        inside = _run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "--is-inside-work-tree"])
        git = "git: repository without commits" if inside == "true" else "not a git checkout"
    else:
        dirty = _run(["git", "-C", str(PROJECT_ROOT), "status", "--porcelain",
                      "--untracked-files=no"])
        git = f"git {head[:12]}" + (" with uncommitted changes" if dirty else "")
    return f"iteralab {__version__}, {git}"


def _nvidia_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
            return f"NVIDIA {version.decode() if isinstance(version, bytes) else version} (NVML)"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML absent or unusable: fall back to nvidia-smi
        pass
    out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if out:
        return f"NVIDIA {out.splitlines()[0].strip()} (nvidia-smi)"
    return None


def _amd_driver() -> str | None:
    parts = []
    info = Path("/opt/rocm/.info/version")
    if info.exists():
        parts.append(f"ROCm {info.read_text(encoding='utf-8').strip()} installed (/opt/rocm)")
    out = _run(["amd-smi", "version"]) or _run(["rocm-smi", "--showdriverversion"])
    if out:
        parts.append(" ".join(out.split())[:200])
    return "; ".join(parts) or None


def collect() -> dict[str, Any]:
    """Everything the Manifest records about the machine, plus per-GPU details.

    Keys: os, python, cpu, ram_bytes, torch, backend, driver, gpu_name,
    gpu_memory_bytes, compute_capability, transformers, code_version, packages
    (Manifest columns) and gpus (a list of dicts) for ``iteralab env --json``.
    """
    import torch

    try:
        import transformers

        transformers_version = transformers.__version__
    except ImportError:
        transformers_version = "not installed"
    cuda_build, hip_build = torch.version.cuda, getattr(torch.version, "hip", None)
    if hip_build:
        backend = f"ROCm/HIP {hip_build} (torch build)"
    elif cuda_build:
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        backend = f"CUDA {cuda_build} (torch build)" + (f", cuDNN {cudnn}" if cudnn else "")
    else:
        backend = "cpu only: this torch build has no CUDA or ROCm"
    gpus: list[dict[str, Any]] = []
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            gpus.append({
                "index": index,
                "name": props.name,
                "memory_bytes": int(props.total_memory),
                "compute_capability": (getattr(props, "gcnArchName", None) if hip_build
                                       else f"{props.major}.{props.minor}"),
            })
    driver = _amd_driver() if hip_build else _nvidia_driver()
    if driver is None:
        driver = _nvidia_driver() or _amd_driver()
    no_gpu = "no GPU: torch sees no CUDA or ROCm device"
    versions = package_versions()
    return {
        "host": socket.gethostname(),
        "os": os_text(),
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "cpu": cpu_text(),
        "ram_bytes": ram_bytes(),
        "torch": torch.__version__,
        "backend": backend,
        "driver": driver or "none found (no NVML, nvidia-smi, amd-smi or rocm-smi answer)",
        "gpu_name": "; ".join(g["name"] for g in gpus) if gpus else no_gpu,
        "gpu_memory_bytes": gpus[0]["memory_bytes"] if gpus else None,
        "compute_capability": ("; ".join(str(g["compute_capability"]) for g in gpus)
                               if gpus else "n/a: no GPU"),
        "transformers": transformers_version,
        "code_version": code_version(),
        "packages": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "gpus": gpus,
    }


#: Manifest columns filled from :func:`collect`.
MANIFEST_FIELDS = ("os", "python", "cpu", "ram_bytes", "torch", "backend", "driver", "gpu_name",
                   "gpu_memory_bytes", "compute_capability", "transformers", "code_version",
                   "packages", "host")


def describe(env: dict[str, Any]) -> list[tuple[str, str]]:
    """Label/value lines for ``iteralab env``, one GPU per line."""
    ram = env.get("ram_bytes")
    lines = [
        ("os", env["os"]),
        ("python", env["python"]),
        ("cpu", env["cpu"]),
        ("ram", f"{ram / 2**30:.1f} GiB ({ram:,} bytes)" if ram else "unknown"),
        ("torch", env["torch"]),
        ("backend", env["backend"]),
    ]
    if env["gpus"]:
        for gpu in env["gpus"]:
            lines.append((f"gpu {gpu['index']}", f"{gpu['name']}, "
                          f"{gpu['memory_bytes'] / 2**30:.1f} GiB, compute capability "
                          f"{gpu['compute_capability']}"))
    else:
        lines.append(("gpu", env["gpu_name"]))
    lines += [
        ("driver", env["driver"]),
        ("transformers", env["transformers"]),
        ("packages", env["packages"]),
        ("code", env["code_version"]),
    ]
    return lines
