"""Utilisation: the peak probe's Manifest fields, the Attempts cells, the Summary's sentence.

A cell that cannot be known (no peak, a quantized variant, a window that did not finish)
is empty with its reason, never 0.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from tests.support.builders import attempt, filled, make_campaign, unexplained, variant
from tests.support.paths import ROOT
from toolkit import layout
from toolkit.cli import cli
from toolkit.report import summary, utilisation
from toolkit.runner.instruments import achieved, flops, peak
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

COST = flops.Cost(per_token=1000, per_square=10, per_sequence=100, formula="test")
TALLY = achieved.Tally(
    sequences=4, real_tokens=20, padded_tokens=32, real_squares=110, padded_squares=256
)
PEAK = peak.Peak(matmul={"fp32": 1e9}, bandwidth=1e9, text="probe", seconds=0.1)


def test_the_cells_follow_the_formula_and_the_peak() -> None:
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), PEAK, None)
    real, padded = 1000 * 20 + 10 * 110 + 100 * 4, 1000 * 32 + 10 * 256 + 100 * 4
    assert cells["real_flops"] == (real, None) and cells["padded_flops"] == (padded, None)
    assert cells["real_flop_rate"] == (real / 2, None)
    assert cells["utilisation"] == (round(real / 2 / 1e9, 6), None)
    assert cells["padding_waste"] == (round(1 - real / padded, 6), None)


def test_without_a_peak_utilisation_is_empty_with_its_reason() -> None:
    cells = achieved.work(
        COST,
        None,
        TALLY,
        2.0,
        None,
        variant("v", 4),
        None,
        "peak probe failed: RuntimeError: no bf16",
    )
    assert cells["utilisation"] == (None, "peak probe failed: RuntimeError: no bf16")
    assert cells["real_flops"][0] is not None  # the FLOPs do not need a peak
    quantized = achieved.work(
        COST, None, TALLY, 2.0, None, variant("q", 4, quantization="dynamic-int8"), PEAK, None
    )
    assert quantized["utilisation"][0] is None and "int8" in str(quantized["utilisation"][1])


def test_a_utilisation_above_the_limit_is_never_recorded() -> None:
    """Issue 35, defect 1: a window faster than the measured peak means the peak is wrong
    (bf16 probed in a slow layout gave 2.1-4.1); the cell is empty with its reason."""
    real = 1000 * 20 + 10 * 110 + 100 * 4
    at_limit = peak.Peak(
        matmul={"fp32": real / 2 / achieved.UTILISATION_LIMIT},
        bandwidth=1e9,
        text="probe",
        seconds=0.1,
    )
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), at_limit, None)
    assert cells["utilisation"] == (achieved.UTILISATION_LIMIT, None)
    above = peak.Peak(matmul={"fp32": real / 2 / 1.2}, bandwidth=1e9, text="probe", seconds=0.1)
    cells = achieved.work(COST, None, TALLY, 2.0, None, variant("v", 4), above, None)
    value, reason = cells["utilisation"]
    assert value is None and str(reason).startswith("not recorded: the real-token rate ")
    assert "is 1.20x the measured fp32 peak" in str(reason)
    assert cells["real_flop_rate"] == (real / 2, None)  # the rate itself stays


def test_a_window_that_outran_its_peak_is_re_probed_once() -> None:
    """Under heavy load the campaign's probe saw a fraction of the machine and a window beat
    it (one demo attempt of ten had an empty utilisation): the precision is probed once
    more, on this CPU now, and the higher peak used for that attempt, its notes saying so."""
    work = achieved.Tally(sequences=1, real_tokens=10**6, padded_tokens=10**6)  # 0.5 GFLOP/s
    real = 1000 * 10**6 + 100
    loaded = peak.Peak(
        matmul={"fp32": real / 2 / 10}, bandwidth=1e9, text="probe under load", seconds=0.1
    )  # 10x outrun
    reprobe = achieved.Reprobe("cpu", "fp32", 1)
    cells = achieved.work(COST, None, work, 2.0, None, variant("v", 4), loaded, None, reprobe)
    value, reason = cells["utilisation"]
    assert reprobe.ran and reason is None and value is not None and 0 < value <= 1.05
    note = str(reprobe.note)
    assert note.startswith("utilisation against a re-probed peak: the window's real-token rate ")
    assert "outran the campaign's fp32 peak" in note and "(10.00x)" in note
    assert "torch.mm fp32 " in note and "the Manifest keeps the campaign's probe" in note
    # Once per attempt: a second call does not probe again.
    assert reprobe() == (None, "already re-probed for this attempt")


def test_a_re_probe_that_finds_no_higher_peak_keeps_the_cell_empty() -> None:
    """A window faster than any probe this machine gives (here 1 PFLOP/s of real work on a
    CPU) stays unrecorded, the re-probe named in its reason and in the notes."""
    reprobe = achieved.Reprobe("cpu", "fp32", 1)
    fast = achieved.Tally(sequences=1, real_tokens=10**12, padded_tokens=10**12)
    cells = achieved.work(COST, None, fast, 1.0, None, variant("v", 4), PEAK, None, reprobe)
    value, reason = cells["utilisation"]
    assert value is None and "even after one re-probe (see notes)" in str(reason)
    assert str(reprobe.note).startswith("utilisation against a re-probed peak: ")  # higher
    # A first peak above anything the re-probe finds: kept, and the notes say so.
    reprobe = achieved.Reprobe("cpu", "fp32", 1)
    above = peak.Peak(matmul={"fp32": 1e15}, bandwidth=1e9, text="probe", seconds=0.1)
    twice = achieved.Tally(sequences=1, real_tokens=2 * 10**12, padded_tokens=2 * 10**12)
    cells = achieved.work(COST, None, twice, 1.0, None, variant("v", 4), above, None, reprobe)
    assert cells["utilisation"][0] is None and "(2.00x)" in str(reprobe.note)
    assert "not higher; the first peak kept" in str(reprobe.note)
    assert "is 2.00x the measured fp32 peak 1e+06 GFLOP/s even after one re-probe" in str(
        cells["utilisation"][1]
    )
    failing = achieved.Reprobe("cpu", "no-such-precision", 1)
    assert failing()[1].startswith("the re-probe failed: KeyError")
    # Without a re-probe (the default) nothing probes again.
    cells = achieved.work(COST, None, fast, 1.0, None, variant("v", 4), PEAK, None)
    assert "re-probe" not in str(cells["utilisation"][1])


def test_the_probe_times_the_layout_a_linear_layer_uses() -> None:
    """``nn.Linear`` computes ``x @ W.T``; the probe times that layout beside ``a @ b`` and
    keeps the faster, so a precision whose plain layout falls to a slow path (bf16 on an
    AVX2 CPU) is not under-rated."""
    rates, calls = peak.matmul_rate(torch.device("cpu"), torch.bfloat16, 256, 0.01)
    assert set(rates) == set(peak.LAYOUTS) and min(rates.values()) > 0
    assert calls >= 2 * len(peak.LAYOUTS)
    assert peak.LAYOUTS == ("a @ b", "a @ b.T")
    # which layout wins is the machine's business (timings are not tests); the text says it
    found = peak.probe(torch.device("cpu"), "bf16", 1)
    assert re.search(
        r"torch\.mm bf16 \S+ [GT]FLOP/s \(\d+x\d+ a @ b(\.T)?, best of \d+\)", found.text
    )
    assert set(found.layouts["bf16"]) == set(peak.LAYOUTS)
    assert found.matmul["bf16"] == max(found.layouts["bf16"].values())


def test_an_unfinished_window_or_an_uncounted_model_leaves_every_cell_explained() -> None:
    for cost, why, unfinished in (
        (COST, None, "failed after 3 items: FLOPs cover a whole corpus only"),
        (None, "FLOPs unknown: no formula", None),
    ):
        cells = achieved.work(cost, why, TALLY, 2.0, unfinished, variant("v", 4), None, None)
        assert set(cells) == set(achieved.ATTEMPT_COLUMNS) | set(achieved.PROBE_COLUMNS)
        assert all(
            value is None and reason == (unfinished or why) for value, reason in cells.values()
        )


def test_the_probe_fills_the_manifest_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(peak.CACHE_VARIABLE, "0")
    measured, cells = achieved.probe_cells("cpu", "fp32", 1, None, "")
    values = achieved.manifest_values(cells, "unused")
    assert measured is not None and set(values) <= set(layout.MANIFEST.names)
    for name in ("matmul_peak_flops", "fp32_matmul_peak_flops", "memory_bandwidth_bytes_s"):
        assert values[name] > 0 and values[f"{name}_reason"] is None
    assert "torch.mm fp32" in values["peak_probe"] and "1 CPU thread" in values["peak_probe"]
    assert values["catalog_peaks"] == "n/a: cpu variant (the catalog lists GPUs)"
    empty = achieved.manifest_values(None, "not probed: failed during load")
    assert empty["matmul_peak_flops"] is None
    assert empty["matmul_peak_flops_reason"] == "not probed: failed during load"


def test_the_catalog_figures_sit_beside_a_gpu() -> None:
    line = peak.catalog_line("cuda", "NVIDIA H200")
    assert line.startswith("h200 (") and "989.5 TFLOP/s bf16 dense" in line
    assert peak.catalog_line("cuda", "Some Card") == "not in the GPU catalog: Some Card"


def _data(*rows: dict[str, object], manifest: dict[str, object] | None = None):
    data = filled()
    data.append(
        "Manifest",
        {"manifest_id": "m1", "variant_id": "b1-fp32", "precision": "fp32", **(manifest or {})},
    )
    for row in rows:
        data.append("Attempts", row)
    return data


def test_summary_utilisation_is_empty_with_its_reason_when_no_peak_is_known() -> None:
    data = _data(
        attempt("a1", utilisation_reason="not probed: no peak here"),
        attempt("a2", repetition=2, utilisation_reason="not probed: no peak here"),
    )
    stats = summary.variant_stats(data)
    row = summary.summary_rows(stats, data)[0]
    assert row["utilisation"].value is None
    assert row["utilisation_reason"].value == "not probed: no peak here"
    assert row["limited_by"] == "utilisation unknown: not probed: no peak here"
    old = _data(attempt("a1"))  # recorded before the columns existed
    (st, *_) = summary.variant_stats(old)
    assert st.usage is not None and st.usage.reason == (
        "not recorded: attempts from before the utilisation columns"
    )


def test_summary_names_what_limits_a_variant() -> None:
    padded = _data(
        attempt("a1", utilisation=0.3, padding_waste=0.4, padded_tokens=40000),
        manifest={
            "matmul_peak_flops": 1e11,
            "fp32_matmul_peak_flops": 1e11,
            "memory_bandwidth_bytes_s": 1e10,
        },
    )
    (st, *_) = summary.variant_stats(padded)
    row = summary.summary_rows([st], padded)[0]
    assert row["utilisation"].value == 0.3 and row["padding_waste"].value == 0.4
    # batch 1, 40 tokens a batch: 2*40/4 = 20 FLOP per weight byte, over a balance of 10
    assert "padding (40% of the model's work" in st.usage.limited_by
    assert "memory bound" not in st.usage.limited_by
    bf16 = utilisation.of_variant(
        [attempt("a1", utilisation=0.5, padding_waste=0.0, padded_tokens=8000, manifest_id="m2")],
        {
            "m2": {
                "matmul_peak_flops": 3e10,
                "fp32_matmul_peak_flops": 1.7e11,
                "memory_bandwidth_bytes_s": 1e10,
            }
        },
        variant("b8-bf16", 8, precision="bf16"),
    )
    assert "precision (bf16 matrix products ran at 30 GFLOP/s" in bf16.limited_by
    bound = utilisation.of_variant(
        [attempt("a1", utilisation=0.1, padding_waste=0.0, padded_tokens=8000, manifest_id="m2")],
        {
            "m2": {
                "matmul_peak_flops": 2e11,
                "fp32_matmul_peak_flops": 2e11,
                "memory_bandwidth_bytes_s": 1e10,
            }
        },
        variant("b1-fp32", 1),
    )
    assert (
        "memory bound (about 8 tokens a batch do 4 FLOP per weight byte, under the "
        "machine's balance of 20" in bound.limited_by
    )
    # Generation: each decode step computes one new token per row, whatever the prompts.
    decoding = utilisation.of_variant(
        [
            attempt(
                "a1",
                utilisation=0.05,
                padding_waste=0.1,
                padded_tokens=None,
                generated_tokens=640,
                manifest_id="m2",
            )
        ],
        {
            "m2": {
                "matmul_peak_flops": 2e11,
                "fp32_matmul_peak_flops": 2e11,
                "memory_bandwidth_bytes_s": 1e10,
            }
        },
        variant("g8-fp32", 8),
    )
    assert "memory bound (about 8 tokens a batch do 4 FLOP per weight byte" in decoding.limited_by


def test_a_real_attempt_records_flops_utilisation_and_the_probe(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 12, [variant("b1-fp32", 4, length_grouping="sorted")])
    result = CliRunner().invoke(cli, ["run", str(book)])
    assert result.exit_code == 0, result.output
    data = store.read(book)
    (row,) = data.tables["Attempts"]
    (manifest,) = data.tables["Manifest"]
    assert unexplained(row) == []
    assert 0 < row["real_flops"] <= row["padded_flops"]
    assert row["real_flop_rate"] == pytest.approx(row["real_flops"] / row["measured_s"], rel=1e-5)
    assert row["probe_peak_flops"] <= manifest["matmul_peak_flops"]  # the campaign's maximum
    assert row["probe_s"] > 0 and row["probe_others_share"] is not None
    shares = (row["probe_others_share"], row["others_cpu_share"])
    if max(shares) > summary.LOADED_SHARE:  # a shared host's other jobs: said, not divided
        assert str(row["utilisation_reason"]).startswith("not recorded: other processes took ")
    else:
        assert row["utilisation"] == pytest.approx(
            row["real_flop_rate"] / manifest["matmul_peak_flops"], rel=1e-4
        )
    assert 0 <= row["padding_waste"] < 1
    assert manifest["memory_bandwidth_bytes_s"] > 0 and "torch.mm fp32" in manifest["peak_probe"]


def test_the_utilisation_benchmark_prints_its_ratio_and_peak() -> None:
    """benchmarks/utilisation.py on a tiny slice: it runs and prints what it measured (no
    target is asserted: timings are not tests)."""
    import subprocess
    import sys

    root = ROOT
    done = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "utilisation.py"),
            "--items",
            "16",
            "--runs",
            "1",
            "--precisions",
            "fp32",
        ],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "fp32 ratio " in done.stdout and "peak probes: " in done.stdout
    assert "where a profiled pass's time goes: matrix products " in done.stdout


def test_each_manifest_row_shows_the_peak_its_attempts_divided_by() -> None:
    """Both kinds of attempt (classification, generation) complete their Manifest row with
    manifest.manifest_row. The probe varies from run to run: attempts that measured
    different peaks get rows of their own (ingestion keeps one row per id, so a shared row
    would show one peak beside a utilisation divided by another); a reused peak shares its
    row; an unprobed attempt (a failed one) is set apart."""
    from toolkit.runner.tasks.manifest import manifest_row

    content = {"variant_id": "b8-fp32", "precision": "fp32", "torch_version": "2.13.0"}
    probed = [
        manifest_row(content, {"matmul_peak_flops": flops}) for flops in (1.6e11, 1.7e11, 1.7e11)
    ]
    unprobed = manifest_row(content, achieved.manifest_values(None, "not probed: failed"))
    assert probed[0]["manifest_id"] != probed[1]["manifest_id"] == probed[2]["manifest_id"]
    assert unprobed["manifest_id"] not in {p["manifest_id"] for p in probed}
    assert (probed[1]["matmul_peak_flops"], unprobed["matmul_peak_flops"]) == (1.7e11, None)


def test_report_lines_say_an_empty_utilisation_s_reason_once() -> None:
    unknown = utilisation.of_variant(
        [
            attempt(
                "a1",
                utilisation=None,
                utilisation_reason="generation attempt: the FLOP count covers classification only",
            )
        ],
        {},
        None,
    )
    lines = utilisation.report_lines(
        [("g8", unknown), ("b16", utilisation.of_variant([], {}, None))]
    )
    assert lines == [
        "- g8: utilisation empty: generation attempt: the FLOP count covers classification only",
        "- b16: utilisation empty: no successful run",
    ]
    assert unknown.limited_by.startswith("utilisation unknown: ")  # the Summary cell keeps it
