"""The AMD stack on one line (R4): each source parsed from its recorded output, a missing
tool read as a reason, and the line in `iteralab env` and the Manifest.

The recorded outputs are in tests/fixtures/rocm/ (see its README); no AMD GPU is needed.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tests.support.paths import FIXTURES
from toolkit import layout
from toolkit.cli import cli
from toolkit.runner.instruments import environment, rocm_stack
from toolkit.runner.instruments.rocm_stack import AmdGpu

ROCM = FIXTURES / "rocm"
MI300X = AmdGpu("AMD Instinct MI300X", "gfx942")


def _text(name: str) -> str:
    return (ROCM / name).read_text(encoding="utf-8")


def _recorded(outputs: dict[str, str | None]) -> rocm_stack.Runner:
    """A probe runner that answers each command with its recorded output (None: absent)."""
    return lambda command: outputs.get(" ".join(command))


def test_amd_smi_static_gives_each_gpu_with_its_gfx_architecture() -> None:
    assert rocm_stack.parse_amd_smi_static(_text("amd-smi_static_asic.json")) == [MI300X, MI300X]


def test_amd_smi_static_of_rocm_6_1_a_bare_list_reads_the_same() -> None:
    assert rocm_stack.parse_amd_smi_static(_text("amd-smi_static_asic_rocm6.1.json")) == [
        AmdGpu("Radeon RX 7900 XTX", "gfx1100")
    ]


def test_rocm_smi_product_names_each_card_in_number_order() -> None:
    assert (
        rocm_stack.parse_rocm_smi_product(_text("rocm-smi_showproductname.json"))
        == [AmdGpu("AMD Instinct MI210", "gfx90a")] * 2
    )


def test_rocm_smi_warning_lines_before_the_json_are_skipped() -> None:
    text = (
        "WARNING: AMD GPU device(s) is/are in a low-power state. Check power "
        "control/runtime_status\n" + _text("rocm-smi_showproductname.json")
    )
    assert len(rocm_stack.parse_rocm_smi_product(text)) == 2


def test_the_rocm_release_comes_from_the_version_file_or_amd_smi_version() -> None:
    assert rocm_stack.parse_rocm_version(_text("opt_rocm_info_version")) == "6.2.0-66"
    assert rocm_stack.parse_amd_smi_version(_text("amd-smi_version.txt")) == "6.2.0"
    assert rocm_stack.parse_rocm_version("") is None
    assert rocm_stack.parse_amd_smi_version("AMDSMI Tool: 24.6.2") is None


def test_output_that_is_not_the_tools_json_lists_no_gpu() -> None:
    for text in (None, "", "not json", "{}", '{"system": {"Driver version": "6.8.5"}}', "[1]"):
        assert rocm_stack.parse_amd_smi_static(text) == []
        assert rocm_stack.parse_rocm_smi_product(text) == []


def test_amd_smi_is_asked_first_and_the_version_file_names_the_release(tmp_path: Path) -> None:
    version = tmp_path / "version"
    version.write_text(_text("opt_rocm_info_version"), encoding="utf-8")
    reading = rocm_stack.read_amd(
        _recorded(
            {
                "amd-smi static --asic --json": _text("amd-smi_static_asic.json"),
                "rocm-smi --showproductname --json": _text("rocm-smi_showproductname.json"),
            }
        ),
        version,
    )
    assert reading == rocm_stack.AmdReading(
        (MI300X, MI300X), "amd-smi static --asic --json", "6.2.0-66", str(version)
    )
    gpu, rocm = rocm_stack.amd_parts(reading, None)
    assert rocm_stack.stack_line(
        "Ubuntu 22.04.4 LTS (Linux 5.15.0-105-generic, x86_64)",
        gpu,
        rocm,
        "torch 2.5.1+rocm6.2 (HIP 6.2.41133-dd7f95766 build)",
    ) == (
        "Ubuntu 22.04.4 LTS (Linux 5.15.0-105-generic, x86_64) / AMD Instinct MI300X (gfx942) x2 "
        "[amd-smi static --asic --json] / ROCm 6.2.0-66 [" + str(version) + "] / torch "
        "2.5.1+rocm6.2 (HIP 6.2.41133-dd7f95766 build)"
    )


def test_without_amd_smi_rocm_smi_and_amd_smi_version_answer(tmp_path: Path) -> None:
    reading = rocm_stack.read_amd(
        _recorded(
            {
                "rocm-smi --showproductname --json": _text("rocm-smi_showproductname.json"),
                "amd-smi version": _text("amd-smi_version.txt"),
            }
        ),
        tmp_path / "absent",
    )
    assert reading.gpus == (AmdGpu("AMD Instinct MI210", "gfx90a"),) * 2
    assert reading.gpus_source == "rocm-smi --showproductname --json"
    assert (reading.rocm, reading.rocm_source) == ("6.2.0", "amd-smi version")


def test_missing_tools_give_reasons_not_a_crash(tmp_path: Path) -> None:
    reading = rocm_stack.read_amd(_recorded({}), tmp_path / "absent")
    assert reading.gpus == () and reading.rocm is None
    gpu, rocm = rocm_stack.amd_parts(reading, "AMD Instinct MI300X (gfx942:sramecc+:xnack-)")
    assert gpu == (
        "AMD Instinct MI300X (gfx942:sramecc+:xnack-) [torch device properties; "
        "`amd-smi static --asic --json` absent or failed; `rocm-smi "
        "--showproductname --json` absent or failed]"
    )
    assert rocm == (
        f"ROCm release not read (no {tmp_path / 'absent'}; `amd-smi version` gave no ROCm version)"
    )
    assert rocm_stack.amd_parts(reading, None)[0].startswith("GPU not read (`amd-smi static")


def test_a_version_file_without_a_version_is_said(tmp_path: Path) -> None:
    empty = tmp_path / "version"
    empty.write_text("\n", encoding="utf-8")
    reading = rocm_stack.read_amd(_recorded({}), empty)
    assert reading.rocm_source == (
        f"{empty} holds no version; `amd-smi version` gave no ROCm version"
    )


def test_this_machine_shows_its_stack_in_env_and_the_manifest() -> None:
    """No GPU here: the line says so in each part instead of leaving a gap."""
    result = CliRunner().invoke(cli, ["env"])
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("stack ")]
    fields = environment.manifest_fields()
    assert line.split(None, 1)[1] == fields["software_stack"]
    system, gpu, runtime, framework = fields["software_stack"].split(" / ")
    assert system == environment.system_text()
    assert "software_stack" in layout.MANIFEST.names
    import torch

    if not torch.cuda.is_available():
        assert gpu == "no GPU: torch sees no CUDA or ROCm device"
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        assert runtime == "no GPU runtime: cpu-only torch build"
        assert framework == f"torch {torch.__version__} (cpu only)"


def test_a_rocm_build_of_torch_gets_its_line_from_the_amd_tools(tmp_path: Path) -> None:
    """What `iteralab env` and the Manifest show on an MI300X box with ROCm 6.2."""
    version = tmp_path / "version"
    version.write_text(_text("opt_rocm_info_version"), encoding="utf-8")
    reading = rocm_stack.read_amd(
        _recorded({"amd-smi static --asic --json": _text("amd-smi_static_asic.json")}), version
    )
    torch_gpus = [{"name": "AMD Instinct MI300X", "compute_capability": "gfx942:sramecc+:xnack-"}]
    line = environment.software_stack(
        torch_gpus * 2, "2.5.1+rocm6.2", "6.2.41133-dd7f95766", None, None, lambda: reading
    )
    assert line.split(" / ")[1:] == [
        "AMD Instinct MI300X (gfx942) x2 [amd-smi static --asic --json]",
        f"ROCm 6.2.0-66 [{version}]",
        "torch 2.5.1+rocm6.2 (HIP 6.2.41133-dd7f95766 build)",
    ]


def test_a_cuda_build_names_the_card_its_capability_and_both_cuda_versions() -> None:
    gpus = [{"name": "NVIDIA H200", "compute_capability": "9.0"}]
    line = environment.software_stack(
        gpus, "2.5.1+cu124", None, "12.4", "12.8", lambda: rocm_stack.read_amd(_recorded({}))
    )
    if not rocm_stack.ROCM_VERSION_FILE.exists():  # an AMD box reads its tools instead
        assert line.split(" / ")[1:] == [
            "NVIDIA H200 (compute capability 9.0)",
            "CUDA 12.4 (torch build), driver supports CUDA 12.8",
            "torch 2.5.1+cu124 (CUDA 12.4 build)",
        ]
