"""An attempt's model FLOPs, achieved rates and utilisation, as Attempts and Manifest cells.

From the model's :class:`~toolkit.runner.instruments.flops.Cost`, the token tallies of the measured
window (real and padded tokens, their squares per sequence), ``measured_s`` and the peak
the probe (:mod:`toolkit.runner.instruments.peak`) measured after the timed phases:

* ``real_flops`` / ``padded_flops``: the FLOPs the inputs need / the model computed;
* ``real_flop_rate`` / ``padded_flop_rate``: those over ``measured_s``;
* ``utilisation``: ``real_flop_rate / matmul peak`` in the variant's precision (the
  Manifest's ``matmul_peak_flops``); above :data:`UTILISATION_LIMIT` the window outran the
  measured peak, so that peak is not the machine's (a probe under load, or a faster kernel
  than the probe's): the precision is probed once more (:class:`Reprobe`) and a higher peak
  used for this attempt, its notes saying so; still above, the cell is not recorded (empty
  with its reason) and the ratio would mislead;
* ``padding_waste``: ``1 - real_flops / padded_flops``.

Each is empty with its reason when it cannot be known (failed window, no FLOP formula for
the model, no peak, a quantized variant whose int8 products the probe does not measure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit import layout
from toolkit.runner.instruments import flops, peak

Cell = tuple[Any, str | None]
ATTEMPT_COLUMNS = (
    "real_flops",
    "padded_flops",
    "real_flop_rate",
    "padded_flop_rate",
    "utilisation",
    "padding_waste",
)
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
) -> dict[str, Cell]:
    """The Attempts cells. ``unfinished``: why the window's tallies do not cover the whole
    corpus (None when it completed); ``peak_reason``: why ``measured_peak`` is None;
    ``reprobe``: what probes again when the window outran the peak (None: never)."""
    reason = unfinished or cost_reason
    if reason is None and not measured_s:
        reason = "no measured_s: no rate"
    cells: dict[str, Cell] = {}
    if reason is not None or cost is None or not tally.padded_tokens:
        why = reason or "no tokens counted"
        return {name: (None, why) for name in ATTEMPT_COLUMNS}
    real = cost.total(tally.sequences, tally.real_tokens, tally.real_squares)
    padded_sequences = tally.sequences if tally.padded_sequences is None else tally.padded_sequences
    padded = cost.total(padded_sequences, tally.padded_tokens, tally.padded_squares)
    assert measured_s is not None
    cells["real_flops"] = (float(real), None)
    cells["padded_flops"] = (float(padded), None)
    cells["real_flop_rate"] = (_sig(real / measured_s), None)
    cells["padded_flop_rate"] = (_sig(padded / measured_s), None)
    cells["padding_waste"] = (round(1 - real / padded, 6), None)
    if variant.get("quantization") not in (None, "", "none"):
        cells["utilisation"] = (
            None,
            f"quantization {variant['quantization']}: the probe measures float products, not int8",
        )
    elif measured_peak is None:
        cells["utilisation"] = (None, peak_reason or "no peak measured")
    else:
        cells["utilisation"] = _utilisation(
            real / measured_s, measured_peak, str(variant["precision"]), reprobe
        )
    return cells


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
