"""What is really installed, read from the machine (R3-R4, R17).

OS, Python, CPU, RAM, the torch build (CUDA or ROCm version, or CPU only),
each GPU's name, memory and compute capability, the device an attempt uses
(index, UUID, MIG mode), the driver (``nvidia-smi``, then NVML; ``amd-smi``/
``rocm-smi`` and /opt/rocm on AMD) and the CUDA version it supports, probed
once per process, transformers and other package versions (triton and the
``nvidia-*`` wheels apart), the variables that change what CUDA runs, the
project's git commit. Nothing is inferred from a card's name: what cannot be
read is said as such ("no GPU", "not found").
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
import socket
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from toolkit import __version__
from toolkit.runner.instruments import rocm_stack

#: Packages whose versions the manifest lists besides torch and transformers.
PACKAGES = (
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "numpy",
    "accelerate",
    "openpyxl",
    "xlsxwriter",
    "pandera",
    "pandas",
)
PROJECT_ROOT = Path(__file__).resolve().parents[3]
TOOL_TIMEOUT_S = 10
#: Variables that change what CUDA runs or how memory is held; the Manifest records each.
VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MODULE_LOADING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TOKENIZERS_PARALLELISM",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
)
NO_LIBCUDA = "none: no CUDA driver library (libcuda)"
#: The distributions that install Triton (the compiler Inductor generates GPU kernels for).
TRITONS = ("triton", "pytorch-triton", "pytorch-triton-rocm", "triton-windows")


def _run(command: list[str]) -> str | None:
    """stdout of a probe command, or None when it is absent or fails."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _distribution() -> str | None:
    """The distribution's name from /etc/os-release (``Ubuntu 22.04.4 LTS``), or None."""
    release = Path("/etc/os-release")
    if release.exists():
        for line in release.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return None


def os_text() -> str:
    """Distribution name (from /etc/os-release) and platform string."""
    pretty, plat = _distribution(), platform.platform()
    return f"{pretty}; {plat}" if pretty else plat


def system_text() -> str:
    """The system as a compatibility matrix names it: distribution, kernel, machine."""
    kernel = f"{platform.system()} {platform.release()}, {platform.machine()}"
    pretty = _distribution()
    return f"{pretty} ({kernel})" if pretty else kernel


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
        dirty = _run(
            ["git", "-C", str(PROJECT_ROOT), "status", "--porcelain", "--untracked-files=no"]
        )
        git = f"git {head[:12]}" + (" with uncommitted changes" if dirty else "")
    return f"iteralab {__version__}, {git}"


def _nvml_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
            return f"NVIDIA {version.decode() if isinstance(version, bytes) else version} (NVML)"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML absent or unusable
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


def _uuid_key(uuid: str) -> str:
    """A GPU UUID as nvidia-smi and torch both give it: lower case, no ``GPU-`` prefix."""
    text = uuid.strip().lower()
    return text[4:] if text.startswith("gpu-") else text


def _cuda_driver_version() -> str | None:
    """The CUDA version the installed driver supports (``cuDriverGetVersion``), or None."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if library.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value:
            return f"{version.value // 1000}.{version.value % 1000 // 10}"
    return None


@dataclass(frozen=True)
class DriverProbe:
    """What the driver said, once: its version, the CUDA version it supports, MIG modes."""

    driver: str | None
    cuda: str | None
    #: MIG mode by GPU UUID (:func:`_uuid_key` form), as nvidia-smi lists the cards.
    mig: dict[str, str] = field(default_factory=dict)


@functools.cache
def nvidia_smi_reading() -> str | None:
    """The cards' UUIDs, driver version and MIG modes as ``nvidia-smi`` lists them, asked
    once per process. A child process: the fork server asks it before it forks, which
    touches no CUDA state of its own, so its workers inherit the answer instead of each
    paying the call."""
    return _run(
        ["nvidia-smi", "--query-gpu=uuid,driver_version,mig.mode.current", "--format=csv,noheader"]
    )


@functools.cache
def probe_driver() -> DriverProbe:
    """Ask the driver once per process (one ``nvidia-smi`` call; AMD tools on ROCm)."""
    import torch

    out = nvidia_smi_reading()
    mig, version = {}, None
    for line in (out or "").splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 3:
            mig[_uuid_key(parts[0])] = parts[2]
            version = version or parts[1]
    nvidia = f"NVIDIA {version} (nvidia-smi)" if version else None
    if getattr(torch.version, "hip", None):
        driver = _amd_driver() or nvidia or _nvml_driver()
    else:
        driver = nvidia or _nvml_driver() or _amd_driver()
    return DriverProbe(driver, _cuda_driver_version(), mig)


@functools.cache
def amd_reading() -> rocm_stack.AmdReading:
    """What amd-smi/rocm-smi and /opt/rocm say, asked once per process."""
    return rocm_stack.read_amd(_run)


def software_stack(
    gpus: list[dict[str, Any]],
    torch_version: str,
    hip: str | None,
    cuda: str | None,
    driver_cuda: str | None,
    read_amd: Callable[[], rocm_stack.AmdReading] = amd_reading,
) -> str:
    """System / GPU / ROCm or CUDA / framework on one line (R4), from what was read: the
    AMD tools and /opt/rocm (``read_amd``) for a ROCm build of torch or where /opt/rocm
    holds a release, torch and the driver otherwise."""
    framework = f"torch {torch_version} " + (
        f"(HIP {hip} build)" if hip else f"(CUDA {cuda} build)" if cuda else "(cpu only)"
    )
    counts: dict[str, int] = {}
    for card in gpus:
        label = (
            f"{card['name']} ({card['compute_capability']})"
            if hip
            else f"{card['name']} (compute capability {card['compute_capability']})"
        )
        counts[label] = counts.get(label, 0) + 1
    seen = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in counts.items()) or None
    if hip or rocm_stack.ROCM_VERSION_FILE.exists():
        gpu, runtime = rocm_stack.amd_parts(read_amd(), seen)
    else:
        gpu = seen or "no GPU: torch sees no CUDA or ROCm device"
        runtime = (
            f"CUDA {cuda} (torch build), driver supports CUDA "
            f"{driver_cuda or 'unknown: no libcuda'}"
            if cuda
            else "no GPU runtime: cpu-only torch build"
        )
    return rocm_stack.stack_line(system_text(), gpu, runtime, framework)


def device_text(index: int, count: int, uuid: str, mig: Mapping[str, str]) -> str:
    """The device an attempt used: ``cuda:1 of 2 visible; UUID GPU-...; MIG Disabled``."""
    key = _uuid_key(uuid)
    shown = uuid.strip() if uuid.strip().upper().startswith(("GPU-", "MIG-")) else f"GPU-{key}"
    mode = (
        f"MIG {mig[key]}"
        if key in mig
        else "MIG mode not read (nvidia-smi does not list this UUID)"
    )
    return f"cuda:{index} of {count} visible; UUID {shown}; {mode}"


def gpu_packages() -> str:
    """Installed triton and ``nvidia-*`` wheels (the CUDA libraries torch loads), sorted."""
    found = set()
    for dist in metadata.distributions():
        name = str(dist.metadata["Name"] or "")
        if name.lower().startswith("nvidia-") or name.lower() in TRITONS:
            found.add(f"{name} {dist.version}")
    return ", ".join(sorted(found)) or "none installed (no triton or nvidia-* package)"


@dataclass(frozen=True)
class Software:
    """What is installed and which code runs: :func:`package_versions`,
    :func:`gpu_packages`, :func:`code_version`."""

    packages: dict[str, str]
    gpu_packages: str
    code_version: str


@functools.cache
def installed() -> Software:
    """:class:`Software`, read once per process, as the driver is probed. The fork server
    reads it before it forks (:mod:`toolkit.runner.driver.forkserver`), so its workers, which
    run the very modules it imported, inherit it instead of each parsing the metadata of
    every installed package and asking git again (0.13 s of CPU, 0.5 s on a busy machine,
    per attempt)."""
    return Software(package_versions(), gpu_packages(), code_version())


def variables_text(environ: Mapping[str, str]) -> str:
    """Each of :data:`VARIABLES` as ``NAME=value`` or ``NAME unset``."""
    return "; ".join(
        f"{name}={environ[name]}" if name in environ else f"{name} unset" for name in VARIABLES
    )


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
            gpus.append(
                {
                    "index": index,
                    "name": props.name,
                    "memory_bytes": int(props.total_memory),
                    "compute_capability": (
                        getattr(props, "gcnArchName", None)
                        if hip_build
                        else f"{props.major}.{props.minor}"
                    ),
                    "uuid": str(getattr(props, "uuid", "") or ""),
                }
            )
    # The device a variant's "cuda" means: the current one, not necessarily the first.
    used = gpus[torch.cuda.current_device()] if gpus else None
    probe = probe_driver()
    driver = probe.driver
    no_gpu = "no GPU: torch sees no CUDA or ROCm device"
    software = installed()
    versions = software.packages
    return {
        "host": socket.gethostname(),
        "os": os_text(),
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "cpu": cpu_text(),
        "ram_bytes": ram_bytes(),
        "torch": torch.__version__,
        "backend": backend,
        "driver": driver or "none found (no NVML, nvidia-smi, amd-smi or rocm-smi answer)",
        "gpu_name": used["name"] if used else no_gpu,
        "gpu_memory_bytes": used["memory_bytes"] if used else None,
        "compute_capability": str(used["compute_capability"]) if used else "n/a: no GPU",
        "transformers": transformers_version,
        "code_version": software.code_version,
        "packages": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "software_stack": software_stack(
            gpus, torch.__version__, hip_build, cuda_build, probe.cuda
        ),
        "gpus": gpus,
    }


#: Manifest columns filled from :func:`collect`.
MANIFEST_FIELDS = (
    "os",
    "python",
    "cpu",
    "ram_bytes",
    "torch",
    "backend",
    "driver",
    "gpu_name",
    "gpu_memory_bytes",
    "compute_capability",
    "transformers",
    "code_version",
    "packages",
    "host",
    "software_stack",
)


def manifest_fields(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The Manifest's environment columns: :data:`MANIFEST_FIELDS` from :func:`collect`,
    then the device used, the driver's CUDA version, the GPU wheels, the fp32 flags and
    :data:`VARIABLES` (read from ``environ``, default ``os.environ``)."""
    import torch

    from toolkit.runner.instruments import precision

    environ = os.environ if environ is None else environ
    env = collect()
    fields = {name: env.get(name) for name in MANIFEST_FIELDS}
    probe = probe_driver()
    gpus = env["gpus"]
    fields["gpu_device"] = "n/a: no GPU"
    if gpus:
        index = torch.cuda.current_device()
        fields["gpu_device"] = device_text(index, len(gpus), gpus[index]["uuid"], probe.mig)
    fields["driver_cuda"] = probe.cuda or NO_LIBCUDA
    fields["gpu_packages"] = installed().gpu_packages
    fields["fp32_matmul"] = precision.fp32_text(environ)
    fields["environment_variables"] = variables_text(environ)
    return fields


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
            lines.append(
                (
                    f"gpu {gpu['index']}",
                    f"{gpu['name']}, "
                    f"{gpu['memory_bytes'] / 2**30:.1f} GiB, compute capability "
                    f"{gpu['compute_capability']}",
                )
            )
    else:
        lines.append(("gpu", env["gpu_name"]))
    lines += [
        ("driver", env["driver"]),
        ("transformers", env["transformers"]),
        ("packages", env["packages"]),
        ("code", env["code_version"]),
        ("stack", env["software_stack"]),
    ]
    return lines
