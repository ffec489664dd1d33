"""An attempt's model FLOPs, achieved rates and utilisation, as Attempts and Manifest cells.

From the model's :class:`~toolkit.runner.instruments.flops.Cost`, the token tallies of the measured
window (real and padded tokens, their squares per sequence), ``measured_s`` and the peak
the attempt's probe (:mod:`toolkit.runner.instruments.peak`) measured after the timed phases,
merged into its campaign's maximum:

* ``real_flops`` / ``padded_flops``: the FLOPs the inputs need / the model computed;
* ``real_flop_rate`` / ``padded_flop_rate``: those over ``measured_s``;
* ``utilisation``: ``real_flop_rate / matmul peak`` in the variant's precision, the
  campaign's maximum so far, this attempt's probe included (the Manifest's
  ``matmul_peak_flops``). Empty with its reason when other processes took more than
  :data:`~toolkit.report.summary.LOADED_SHARE` of the machine during the probe or the
  measured window: a stretched window, or a probe that saw a part of the machine, makes the
  ratio a statement about the other jobs. Above :data:`UTILISATION_LIMIT` the window outran
  the peak, so that peak is not the machine's (a faster kernel than the probe's): the
  precision is probed once more (:class:`Reprobe`) and a higher peak used for this attempt,
  its notes saying so; still above, the cell is not recorded (empty with its reason);
* ``padding_waste``: ``1 - real_flops / padded_flops``;
* ``probe_peak_flops``, ``probe_fp32_peak_flops``, ``probe_s``, ``probe_others_share``: the
  attempt's own probe (its precision's and fp32's rates, what it cost, the load it saw).

Each is empty with its reason when it cannot be known (failed window, no FLOP formula for
the model, no peak, a quantized variant whose int8 products the probe does not measure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit import layout
from toolkit.report.summary import LOADED_SHARE
from toolkit.runner.instruments import flops, peak
from toolkit.runner.instruments.machine_load import NOT_MEASURABLE

Cell = tuple[Any, str | None]
ATTEMPT_COLUMNS = (
    "real_flops",
    "padded_flops",
    "real_flop_rate",
    "padded_flop_rate",
    "utilisation",
    "padding_waste",
)
#: The attempt's own probe, beside its row's figures.
PROBE_COLUMNS = ("probe_peak_flops", "probe_fp32_peak_flops", "probe_s", "probe_others_share")
#: The highest utilisation recorded: the probe's best-of-a-few timing and the window's
#: mean differ by a few percent; beyond that the peak is wrong, not the window fast.
UTILISATION_LIMIT = 1.05
MANIFEST_COLUMNS = (
    "matmul_peak_flops",
    "fp32_matmul_peak_flops",
    "memory_bandwidth_bytes_s",
    "peak_probe",
    "catalog_peaks",
)


@dataclass
class Tally:
    """Token counts of a batched pass: sequences, real and padded tokens and squares.

    A generation window counts forward passes as sequences and query-key pairs as squares
    (:func:`.flops.generation_passes`); its batch runs more passes than its
    outputs need (rows that ended early keep decoding), hence ``padded_sequences``, which
    is ``sequences`` when None."""

    sequences: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0
    real_squares: int = 0
    padded_squares: int = 0
    padded_sequences: int | None = None


@dataclass
class Work:
    """The cells to write: Attempts columns and Manifest columns, each (value, reason), and
    what the attempt's notes say about them."""

    attempt: dict[str, Cell] = field(default_factory=dict)
    manifest: dict[str, Cell] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class Reprobe:
    """One more probe of the variant's precision, for a window that outran the peak it is
    divided by (under heavy load the campaign's probe can see a fraction of the machine).
    Runs at most once per attempt (about 0.2 s on a CPU, under a second on a GPU), after
    the timed phases; ``note`` then says what it found, for the attempt's notes. The
    campaign's probe stays as it was (the Manifest's, shared by the campaign's attempts)."""

    device: str
    precision: str
    threads: int
    note: str | None = None
    ran: bool = False

    def __call__(self) -> tuple[peak.Peak | None, str]:
        """The new probe, or None and why there is none."""
        if self.ran:
            return None, "already re-probed for this attempt"
        self.ran = True
        try:
            return peak.reprobe(self.device, self.precision, self.threads), ""
        except Exception as exc:  # noqa: BLE001 - a failed re-probe keeps the first peak
            return None, f"the re-probe failed: {type(exc).__name__}: {str(exc)[:200]}"


def _sig(value: float, digits: int = 6) -> float:
    return float(f"{value:.{digits}g}")


def probe_cells(
    device: str, precision: str, threads: int, gpu_name: str | None, campaign: str
) -> tuple[peak.Peak | None, dict[str, Cell]]:
    """Run (or reuse) the peak probe of ``campaign`` (its workbook's path); the Manifest
    cells it fills."""
    catalog = peak.catalog_line(device, gpu_name)
    try:
        measured = peak.measure(device, precision, threads, campaign)
    except Exception as exc:  # noqa: BLE001 - a probe that cannot run leaves cells empty
        reason = f"peak probe failed: {type(exc).__name__}: {str(exc)[:200]}"
        return None, {
            "matmul_peak_flops": (None, reason),
            "fp32_matmul_peak_flops": (None, reason),
            "memory_bandwidth_bytes_s": (None, reason),
            "peak_probe": (reason, None),
            "catalog_peaks": (catalog, None),
        }
    return measured, {
        "matmul_peak_flops": (_sig(measured.matmul[precision]), None),
        "fp32_matmul_peak_flops": (_sig(measured.matmul["fp32"]), None),
        "memory_bandwidth_bytes_s": (
            _sig(measured.bandwidth or 0) or None,
            None if measured.bandwidth else "copy not timed",
        ),
        "peak_probe": (measured.text, None),
        "catalog_peaks": (catalog, None),
    }


def work(
    cost: flops.Cost | None,
    cost_reason: str | None,
    tally: Tally,
    measured_s: float | None,
    unfinished: str | None,
    variant: dict[str, Any],
    measured_peak: peak.Peak | None,
    peak_reason: str | None,
    reprobe: Reprobe | None = None,
    window_share: float | None = None,
) -> dict[str, Cell]:
    """The Attempts cells. ``unfinished``: why the window's tallies do not cover the whole
    corpus (None when it completed); ``peak_reason``: why ``measured_peak`` is None;
    ``reprobe``: what probes again when the window outran the peak (None: never);
    ``window_share``: the part of the machine other processes took during the measured
    window (Attempts ``others_cpu_share``; None when not counted)."""
    reason = unfinished or cost_reason
    if reason is None and not measured_s:
        reason = "no measured_s: no rate"
    cells = probe_columns(measured_peak, str(variant["precision"]), peak_reason or reason)
    if reason is not None or cost is None or not tally.padded_tokens:
        why = reason or "no tokens counted"
        return cells | {name: (None, why) for name in ATTEMPT_COLUMNS}
    real = cost.total(tally.sequences, tally.real_tokens, tally.real_squares)
    padded_sequences = tally.sequences if tally.padded_sequences is None else tally.padded_sequences
    padded = cost.total(padded_sequences, tally.padded_tokens, tally.padded_squares)
    assert measured_s is not None
    cells["real_flops"] = (float(real), None)
    cells["padded_flops"] = (float(padded), None)
    cells["real_flop_rate"] = (_sig(real / measured_s), None)
    cells["padded_flop_rate"] = (_sig(padded / measured_s), None)
    cells["padding_waste"] = (round(1 - real / padded, 6), None)
    loaded = _loaded(measured_peak, window_share)
    if variant.get("quantization") not in (None, "", "none"):
        cells["utilisation"] = (
            None,
            f"quantization {variant['quantization']}: the probe measures float products, not int8",
        )
    elif measured_peak is None:
        cells["utilisation"] = (None, peak_reason or "no peak measured")
    elif loaded is not None:
        cells["utilisation"] = (None, loaded)
    else:
        cells["utilisation"] = _utilisation(
            real / measured_s, measured_peak, str(variant["precision"]), reprobe
        )
    return cells


def probe_columns(
    measured_peak: peak.Peak | None, precision: str, reason: str | None
) -> dict[str, Cell]:
    """The attempt's own probe as Attempts cells (its ``probe``, not the campaign's
    maximum); each empty with ``reason`` when there was no probe."""
    if measured_peak is None:
        why = reason or "no peak measured"
        return {name: (None, why) for name in PROBE_COLUMNS}
    own = measured_peak.probe
    rate, fp32 = own.matmul.get(precision), own.matmul.get("fp32")
    return {
        "probe_peak_flops": (_sig(rate), None) if rate else (None, f"no {precision} rate probed"),
        "probe_fp32_peak_flops": (_sig(fp32), None) if fp32 else (None, "no fp32 rate probed"),
        "probe_s": (round(own.seconds, 3), None),
        "probe_others_share": (
            (round(own.others_share, 4), None)
            if own.others_share is not None
            else (None, NOT_MEASURABLE)
        ),
    }


def _loaded(measured_peak: peak.Peak | None, window_share: float | None) -> str | None:
    """Why utilisation is not recorded when other processes took more than LOADED_SHARE of
    the machine during the attempt's probe or its measured window; None when neither was."""
    probe_share = measured_peak.probe.others_share if measured_peak is not None else None
    shares = (("peak probe", probe_share), ("measured window", window_share))
    busy = [  # as the row's cells show them (four decimals)
        f"{round(share, 4):.0%} of the machine during the {what}"
        for what, share in shares
        if share is not None and round(share, 4) > LOADED_SHARE
    ]
    if not busy:
        return None
    return (
        f"not recorded: other processes took {' and '.join(busy)} (above {LOADED_SHARE:.0%}; "
        "Attempts probe_others_share, others_cpu_share): the window's rate or the probe's peak "
        "would measure the other jobs as much as this variant"
    )


def _gflops(rate: float) -> str:
    return f"{rate / 1e9:.4g} GFLOP/s"


def _utilisation(
    real_rate: float, measured_peak: peak.Peak, precision: str, reprobe: Reprobe | None
) -> Cell:
    rate = measured_peak.matmul.get(precision)
    if not rate:
        return None, f"no {precision} peak measured"
    ratio = real_rate / rate
    again = ""
    if ratio > UTILISATION_LIMIT and reprobe is not None:
        found, why = reprobe()
        higher = found.matmul.get(precision, 0.0) if found is not None else 0.0
        outran = (
            f"the window's real-token rate {_gflops(real_rate)} outran the campaign's "
            f"{precision} peak {_gflops(rate)} ({ratio:.2f}x), so the peak was probed once more"
        )
        if found is not None and higher > rate:
            reprobe.note = (
                f"utilisation against a re-probed peak: {outran}: {_gflops(higher)} "
                f"({found.text}), used for this attempt; the Manifest keeps the campaign's probe"
            )
            rate, ratio = higher, real_rate / higher
        else:
            reprobe.note = (
                f"{outran}: {why or f'{_gflops(higher)}, not higher'}; the first peak kept"
            )
        again = " even after one re-probe (see notes)"
    if ratio > UTILISATION_LIMIT:
        return None, (
            f"not recorded: the real-token rate {_gflops(real_rate)} is "
            f"{ratio:.2f}x the measured {precision} peak {_gflops(rate)}{again} "
            f"(above {UTILISATION_LIMIT}): that peak is not the machine's (the "
            "probe ran under other load, or missed a faster kernel); see the "
            "Manifest's peak_probe"
        )
    return round(ratio, 6), None


def manifest_values(cells: dict[str, Cell] | None, reason: str) -> dict[str, Any]:
    """The probe's Manifest columns (values and reasons) from :func:`probe_cells`' cells;
    every one empty with ``reason`` when ``cells`` is None."""
    out: dict[str, Any] = {}
    for name in MANIFEST_COLUMNS:
        value, why = (cells or {}).get(name, (None, reason))
        column = layout.MANIFEST.column(name)
        out[name] = value
        if column.measurement:
            out[column.reason] = None if value is not None else (why or reason)
        elif value is None:
            out[name] = reason
    return out
