"""The peak probe beside every attempt: the clock it is timed on, the campaign's maximum it
is merged into, and the load that leaves utilisation empty with its reason.

The busy-machine test really keeps the machine busy: one CPU-burning process per logical
CPU for the probe's duration, so other processes take far more than a quarter of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from tests.support.builders import attempt, filled, variant
from toolkit.report import summary, utilisation
from toolkit.runner.instruments import achieved, flops, machine_load, peak

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

COST = flops.Cost(per_token=1000, per_square=10, per_sequence=100, formula="test")
#: 0.5 GFLOP/s over a 2 s window: far under any probe of a CPU, so utilisation is a ratio.
TALLY = achieved.Tally(sequences=1, real_tokens=10**6, padded_tokens=10**6)
REAL_RATE = (1000 * 10**6 + 100) / 2
LINUX = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux: /proc/stat")


@contextmanager
def burning(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes spinning on the CPU for the block (each has printed a line before
    the block starts); killed and reaped after it."""
    code = "print(flush=True)\nwhile True: pass"
    spinners = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) for _ in range(count)
    ]
    try:
        for spinner in spinners:
            assert spinner.stdout is not None and spinner.stdout.readline()
        yield spinners
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()
            if spinner.stdout is not None:
                spinner.stdout.close()


def scripted(rates: list[float], share: float | None = 0.0):  # type: ignore[no-untyped-def]
    """A stand-in for :func:`peak.probe` returning one fp32 rate of ``rates`` per call."""
    left = list(rates)

    def probe(device: torch.device, precision: str, threads: int, with_fp32: bool = True):  # type: ignore[no-untyped-def]
        rate = left.pop(0)
        layouts = {"fp32": {"a @ b": rate / 2, "a @ b.T": rate}}
        return peak.Peak(
            matmul={"fp32": rate},
            bandwidth=rate / 10,
            text=f"probe at {rate:g}",
            seconds=0.2,
            others_share=share,
            this=None,
            layouts=layouts,
        )

    return probe


def test_every_attempt_probes_and_the_campaign_keeps_the_maximum(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Three attempts of one campaign probe 1e11, 3e11 and 2e11 FLOP/s: each divides by the
    maximum so far (1e11, 3e11, 3e11) and records its own probe; the file keeps the best per
    precision and layout; another campaign starts from its own probe."""
    monkeypatch.setattr(peak.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(peak, "probe", scripted([1e11, 3e11, 2e11, 5e10]))
    found = [peak.measure("cpu", "fp32", 2, "/w/a.xlsx#1a2b") for _ in range(3)]
    assert [f.matmul["fp32"] for f in found] == [1e11, 3e11, 3e11]
    assert [f.probe.matmul["fp32"] for f in found] == [1e11, 3e11, 2e11]
    assert found[2].text.startswith("maximum of 3 probe(s) of this campaign on this machine: ")
    assert "fp32 and copy from: probe at 3e+11" in found[2].text
    (kept,) = (tmp_path / "iteralab-peaks").iterdir()
    stored = json.loads(kept.read_text())
    assert stored["layouts"] == {"fp32": {"a @ b": 1.5e11, "a @ b.T": 3e11}}
    assert stored["probes"] == 3 and stored["bandwidth"] == 3e10
    other = peak.measure("cpu", "fp32", 2, "/w/b.xlsx#1a2b")
    assert other.matmul["fp32"] == 5e10  # not a's maximum
    # The third attempt: utilisation against the maximum, its own probe on its row.
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), found[2], None)
    assert cells["utilisation"] == (round(REAL_RATE / 3e11, 6), None)
    assert cells["probe_peak_flops"] == (2e11, None)
    assert cells["probe_fp32_peak_flops"] == (2e11, None)
    assert cells["probe_s"] == (0.2, None) and cells["probe_others_share"] == (0.0, None)
    monkeypatch.setattr(peak, "probe", scripted([1e11]))
    _, manifest = achieved.probe_cells("cpu", "fp32", 2, None, "/w/a.xlsx#1a2b")
    assert manifest["matmul_peak_flops"] == (3e11, None)
    assert str(manifest["peak_probe"][0]).startswith("maximum of 4 probe(s)")


def test_without_the_campaign_file_each_attempt_divides_by_its_own_probe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(peak.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setenv(peak.CACHE_VARIABLE, "0")
    monkeypatch.setattr(peak, "probe", scripted([3e11, 1e11]))
    found = [peak.measure("cpu", "fp32", 2, "/w/a.xlsx#1a2b") for _ in range(2)]
    assert [f.matmul["fp32"] for f in found] == [3e11, 1e11]
    assert found[1].this is None and not (tmp_path / "iteralab-peaks").exists()


def test_the_real_probe_merges_into_the_campaign_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two real probes: the maximum is at least each, the text names the clock and load."""
    monkeypatch.setattr(peak.tempfile, "gettempdir", lambda: str(tmp_path))
    first = peak.measure("cpu", "bf16", 1, "/w/a.xlsx#1a2b")
    second = peak.measure("cpu", "bf16", 1, "/w/a.xlsx#1a2b")
    for name in ("fp32", "bf16"):
        assert second.matmul[name] >= max(first.probe.matmul[name], second.probe.matmul[name])
    assert "one thread's CPU clock x 1 core(s) for 1 CPU thread(s)" in second.probe.text
    assert "of the machine (" in second.probe.text or "load not known" in second.probe.text
    assert 0 < second.probe.seconds < 10
    assert torch.get_num_threads() >= 1  # the attempt's setting is restored, not left at one


def test_the_probe_multiplies_one_thread_by_the_cores_its_threads_can_occupy() -> None:
    cores = peak.physical_cores()
    assert 1 <= cores <= (os.cpu_count() or 1)
    assert peak.cores_for(1) == 1 and peak.cores_for(10**6) == cores
    before = torch.get_num_threads()
    peak.probe(torch.device("cpu"), "fp32", 2)
    assert torch.get_num_threads() == before


@LINUX
def test_a_probe_on_a_busy_machine_leaves_utilisation_empty_with_its_reason() -> None:
    """Spinners on every logical CPU during the probe: the probe's row records the load it
    saw (well above a quarter of the machine) and utilisation is empty with its reason; the
    FLOP rates and the probe's own figures stay."""
    with burning(machine_load.MACHINE_CORES):
        measured = peak.measure("cpu", "fp32", 1)
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), measured, None, None, 0.0)
    share, why = cells["probe_others_share"]
    assert why is None and share is not None and share > summary.LOADED_SHARE, share
    value, reason = cells["utilisation"]
    assert value is None
    assert str(reason).startswith(
        f"not recorded: other processes took {share:.0%} of the machine during the peak probe "
        "(above 25%; Attempts probe_others_share, others_cpu_share)"
    )
    assert cells["real_flop_rate"] == (pytest.approx(REAL_RATE, rel=1e-5), None)
    assert cells["probe_peak_flops"][0] > 0 and cells["probe_s"][0] > 0


@LINUX
def test_a_quiet_probe_and_window_fill_utilisation() -> None:
    """The same probe with no spinners: utilisation is filled. On a shared host other jobs
    may be running; then the test says the load it measured and skips."""
    measured = peak.measure("cpu", "fp32", 1)
    share = measured.probe.others_share
    assert share is not None
    if share > summary.LOADED_SHARE:
        pytest.skip(f"the machine is busy: other processes took {share:.0%} during the probe")
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), measured, None, None, 0.1)
    assert cells["utilisation"] == (round(REAL_RATE / measured.matmul["fp32"], 6), None)


def test_a_loaded_window_leaves_utilisation_empty_with_its_reason() -> None:
    quiet = peak.Peak(
        matmul={"fp32": 1e11}, bandwidth=1e10, text="probe", seconds=0.2, others_share=0.05
    )
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), quiet, None, None, 0.4)
    assert cells["utilisation"] == (
        None,
        "not recorded: other processes took 40% of the machine during the measured window "
        "(above 25%; Attempts probe_others_share, others_cpu_share): the window's rate or the "
        "probe's peak would measure the other jobs as much as this variant",
    )
    at_limit = achieved.work(
        COST, None, TALLY, 2.0, None, variant("v", 4), quiet, None, None, summary.LOADED_SHARE
    )
    assert at_limit["utilisation"][0] is not None  # more than a quarter, not a quarter
    unknown = peak.Peak(
        matmul={"fp32": 1e11}, bandwidth=1e10, text="probe", seconds=0.2, others_share=None
    )
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), unknown, None)
    assert cells["probe_others_share"] == (None, machine_load.NOT_MEASURABLE)
    assert cells["utilisation"][0] is not None


def test_the_limited_by_sentence_uses_the_campaign_maximum() -> None:
    """One bf16 probe under load read 17 GFLOP/s against fp32's 197 and the Summary said
    "limited by precision"; a later probe of the campaign on the same machine read 422.
    The sentence compares the highest of each precision on that machine."""
    machine = {"host": "box", "cpu": "Xeon", "gpu_name": None, "torch": "2.13"}
    manifests = {
        "m1": {**machine, "precision": "bf16", "matmul_peak_flops": 1.69e10,
               "fp32_matmul_peak_flops": 1.97e11, "memory_bandwidth_bytes_s": 1e10},
        "m2": {**machine, "precision": "bf16", "matmul_peak_flops": 4.22e11,
               "fp32_matmul_peak_flops": 4.2e9, "memory_bandwidth_bytes_s": 2e10},
        "m3": {**machine, "host": "other", "precision": "bf16", "matmul_peak_flops": 9e12},
    }  # fmt: skip
    assert utilisation.campaign_peaks(manifests, [manifests["m1"]], "bf16") == (
        4.22e11,
        1.97e11,
        2e10,
    )
    found = utilisation.of_variant(
        [attempt("a1", utilisation=0.3, padding_waste=0.0, padded_tokens=8000, manifest_id="m1")],
        manifests,
        variant("b8-bf16", 8, precision="bf16"),
    )
    assert "limited by precision" not in found.limited_by
    assert found.limited_by.startswith("0.30 of the measured bf16 peak")
    snapshot = utilisation.of_variant(
        [attempt("a1", utilisation=0.3, padding_waste=0.0, padded_tokens=8000, manifest_id="m1")],
        {"m1": manifests["m1"]},
        variant("b8-bf16", 8, precision="bf16"),
    )
    assert "limited by precision (bf16 matrix products ran at 16.9 GFLOP/s" in (snapshot.limited_by)


def test_a_summary_of_loaded_attempts_says_why_limited_by_is_empty() -> None:
    reason = (
        "not recorded: other processes took 80% of the machine during the peak probe "
        "(above 25%; Attempts probe_others_share, others_cpu_share): the window's rate or the "
        "probe's peak would measure the other jobs as much as this variant"
    )
    data = filled()
    data.append("Manifest", {"manifest_id": "m1", "variant_id": "b1-fp32", "precision": "fp32"})
    data.append("Attempts", attempt("a1", utilisation_reason=reason))
    (st, *_) = summary.variant_stats(data)
    assert st.usage is not None and st.usage.value is None
    assert st.usage.limited_by == f"utilisation unknown: {reason}"
