"""The software stack on one line (R4): system / GPU / ROCm or CUDA / framework.

AMD lists which combinations of operating system, GPU architecture (``gfx942``...), ROCm
release and framework it supports (the ROCm compatibility matrix); checking a rented box
against it needs all four read from the box, never guessed from the card's name. The AMD
sources, each read by a pure function tested on recorded outputs (tests/fixtures/rocm/):

- ``amd-smi static --json``: per GPU, ``asic.market_name`` and ``asic.target_graphics_version``
  (a JSON list up to ROCm 6.3, ``{"gpu_data": [...]}`` since);
- ``rocm-smi --showproductname --json`` (the older tool): per card ``Card Series`` and
  ``GFX Version``; warning lines may come before the JSON;
- ``/opt/rocm/.info/version``: the installed ROCm release (``6.2.0-66``), else the
  ``ROCm version`` that ``amd-smi version`` prints.

The framework is torch's version and the HIP (or CUDA) it was built for. A tool that is
absent or answers nothing leaves a reason in the line, never an exception.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Where a ROCm installation writes its release.
ROCM_VERSION_FILE = Path("/opt/rocm/.info/version")
#: Runs a probe command; returns its stdout, or None when the tool is absent or fails.
Runner = Callable[[list[str]], str | None]


@dataclass(frozen=True)
class AmdGpu:
    """One AMD GPU as a tool names it: marketing name and gfx architecture (None: not said)."""

    name: str | None
    gfx: str | None

    def text(self) -> str:
        """``AMD Instinct MI300X (gfx942)``."""
        name = self.name or "unnamed AMD GPU"
        return f"{name} ({self.gfx})" if self.gfx else f"{name} (gfx architecture not read)"


@dataclass(frozen=True)
class AmdReading:
    """What the AMD tools said: the GPUs and the ROCm release, each with its source, or
    empty (None) with the reason no source answered."""

    gpus: tuple[AmdGpu, ...]
    gpus_source: str
    rocm: str | None
    rocm_source: str


def _json_in(text: str | None) -> Any:
    """The JSON value in a tool's output, skipping lines printed before it (warnings)."""
    if not text:
        return None
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    try:
        return json.loads(text[min(starts) :])
    except ValueError:
        return None


def _known(value: Any) -> str | None:
    """A tool's field as text, None for blanks and the tools' ``N/A``."""
    text = str(value).strip() if value is not None else ""
    return None if not text or text.upper() == "N/A" else text


def parse_amd_smi_static(text: str | None) -> list[AmdGpu]:
    """The GPUs of ``amd-smi static --json`` (either layout), in its order; [] when the
    output holds none."""
    value = _json_in(text)
    entries = value.get("gpu_data") if isinstance(value, dict) else value
    gpus = []
    for entry in entries if isinstance(entries, list) else []:
        asic = entry.get("asic") if isinstance(entry, dict) else None
        if isinstance(asic, dict):
            gpus.append(
                AmdGpu(_known(asic.get("market_name")), _known(asic.get("target_graphics_version")))
            )
    return gpus


def parse_rocm_smi_product(text: str | None) -> list[AmdGpu]:
    """The cards of ``rocm-smi --showproductname --json`` (``card0``, ``card1``... in
    number order); [] when the output holds none."""
    value = _json_in(text)
    if not isinstance(value, dict):
        return []
    cards = [
        (int(key[4:]), card)
        for key, card in value.items()
        if re.fullmatch(r"card\d+", key) and isinstance(card, dict)
    ]
    return [
        AmdGpu(
            _known(card.get("Card Series")) or _known(card.get("Card Model")),
            _known(card.get("GFX Version")),
        )
        for _, card in sorted(cards)
    ]


def parse_rocm_version(text: str | None) -> str | None:
    """The release in ``/opt/rocm/.info/version`` (``6.2.0-66``), None when it holds none."""
    line = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    return line if re.match(r"\d+\.\d+", line) else None


def parse_amd_smi_version(text: str | None) -> str | None:
    """The ``ROCm version`` that ``amd-smi version`` prints, None when it does not say."""
    match = re.search(r"ROCm version:\s*([0-9][\w.+-]*)", text or "")
    return match[1] if match else None


def gpus_text(gpus: Iterable[AmdGpu]) -> str:
    """Distinct GPUs with their count: ``AMD Instinct MI300X (gfx942) x8``."""
    counts = Counter(g.text() for g in gpus)
    return ", ".join(f"{name} x{n}" if n > 1 else name for name, n in counts.items())


def read_amd(run: Runner, version_file: Path = ROCM_VERSION_FILE) -> AmdReading:
    """Ask the AMD sources in turn (``amd-smi``, then ``rocm-smi``; the version file, then
    ``amd-smi version``); what none answers is None with its reason."""
    missed = []
    gpus: list[AmdGpu] = []
    for command, parse in (
        (["amd-smi", "static", "--asic", "--json"], parse_amd_smi_static),
        (["rocm-smi", "--showproductname", "--json"], parse_rocm_smi_product),
    ):
        out = run(command)
        gpus = parse(out)
        if gpus:
            gpus_source = " ".join(command)
            break
        missed.append(
            f"`{' '.join(command)}` " + ("absent or failed" if out is None else "listed no GPU")
        )
    else:
        gpus_source = "; ".join(missed)
    try:
        rocm = parse_rocm_version(version_file.read_text(encoding="utf-8", errors="replace"))
        rocm_source = str(version_file) if rocm else f"{version_file} holds no version"
    except OSError:
        rocm, rocm_source = None, f"no {version_file}"
    if rocm is None:
        rocm = parse_amd_smi_version(run(["amd-smi", "version"]))
        rocm_source = (
            "amd-smi version" if rocm else f"{rocm_source}; `amd-smi version` gave no ROCm version"
        )
    return AmdReading(tuple(gpus), gpus_source, rocm, rocm_source)


def amd_parts(reading: AmdReading, torch_gpus: str | None) -> tuple[str, str]:
    """The GPU and ROCm parts of the line from a reading; ``torch_gpus`` (torch's own names
    and gfx architectures) stands in when no tool listed a GPU."""
    if reading.gpus:
        gpu = f"{gpus_text(reading.gpus)} [{reading.gpus_source}]"
    elif torch_gpus:
        gpu = f"{torch_gpus} [torch device properties; {reading.gpus_source}]"
    else:
        gpu = f"GPU not read ({reading.gpus_source})"
    rocm = (
        f"ROCm {reading.rocm} [{reading.rocm_source}]"
        if reading.rocm
        else f"ROCm release not read ({reading.rocm_source})"
    )
    return gpu, rocm


def stack_line(system: str, gpu: str, platform: str, framework: str) -> str:
    """The one line to hold against the compatibility matrix:
    ``system / GPU / ROCm or CUDA / framework``."""
    return " / ".join((system, gpu, platform, framework))
