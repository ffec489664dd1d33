"""Pictures of the campaign: durations per variant and cost per accepted corpus.

The workbook's own charts are :mod:`toolkit.workbook.charts`; these are the
same pictures as PNG files for readers without Excel. matplotlib is imported lazily; without it the
PNGs are skipped and the report says why.

Each picture is first described as plain values (a :class:`Chart`: every label, number,
colour and size drawn, nothing else), then drawn from that description alone. The PNG
records the description's fingerprint (with this module's source and the installed
matplotlib's identity) in a text chunk: a picture whose file is intact (every chunk's CRC)
and records the fingerprint it would be drawn with is already the picture, and is left
as it is. A report of unchanged evidence then never imports matplotlib (about 0.3 s).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.money.tariffs import Plan, rules
from toolkit.plumbing.atomic import publish
from toolkit.plumbing.plain import plain_bytes
from toolkit.report.costs import Costing
from toolkit.report.summary import VariantStats
from toolkit.workbook.charts import BAR_COLOUR, MEDIAN_COLOUR, RUN_COLOUR

DURATIONS_PNG = "durations.png"
COSTS_PNG = "projected_cost_per_expected.png"
#: The PNG text chunk's keyword under which a picture records its fingerprint.
FINGERPRINT_KEY = "iteralab chart"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: A chart's PNG is about 60 kB: a larger file at its name is not read, only replaced.
PNG_MAX_BYTES = 16 * 2**20


@dataclass(frozen=True)
class Pictures:
    """PNG files written, or why none were."""

    paths: tuple[Path, ...]
    skipped: str | None = None


@dataclass(frozen=True)
class Chart:
    """One picture as plain values: ``kind`` names the drawing, ``scene`` is all it draws."""

    path: Path
    kind: str
    scene: tuple[Any, ...]

    def fingerprint(self) -> str:
        """SHA-256 of what the picture is drawn from: the scene, the code that draws it (this
        module's source) and the matplotlib that draws it (where it is installed)."""
        digest = hashlib.sha256(_DRAWER)
        digest.update(repr((self.kind, self.scene, _matplotlib_identity())).encode())
        return digest.hexdigest()


def _matplotlib_identity() -> tuple[str, int, int] | None:
    """Where matplotlib is installed and when it was (an upgrade rewrites it), found without
    importing it; None when it cannot be imported."""
    try:
        spec = importlib.util.find_spec("matplotlib")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    try:
        found = os.stat(spec.origin)
    except OSError:
        return None
    return spec.origin, found.st_size, found.st_mtime_ns


_DRAWER = Path(__file__).read_bytes()


def charts(
    out_dir: Path, all_stats: Sequence[VariantStats], costs: Sequence[Costing]
) -> list[Chart]:
    """The report's two pictures, described."""
    return [
        Chart(out_dir / DURATIONS_PNG, "durations", durations_scene(all_stats)),
        Chart(out_dir / COSTS_PNG, "costs", costs_scene(costs)),
    ]


def pending(
    out_dir: Path, all_stats: Sequence[VariantStats], costs: Sequence[Costing]
) -> list[Chart]:
    """The pictures whose file does not already hold them (missing, damaged, drawn from
    other values or by other code)."""
    return [c for c in charts(out_dir, all_stats, costs) if recorded(c.path) != c.fingerprint()]


def recorded(path: Path) -> str | None:
    """The fingerprint a PNG file records, when the file is a whole PNG whose every chunk
    matches its CRC; None otherwise."""
    blob = plain_bytes(path, PNG_MAX_BYTES)
    if blob is None or not blob.startswith(PNG_SIGNATURE):
        return None
    found, at = None, len(PNG_SIGNATURE)
    while at + 12 <= len(blob):
        length, kind = struct.unpack(">I4s", blob[at : at + 8])
        end = at + 12 + length
        body = blob[at + 8 : end - 4]
        if (
            end > len(blob)
            or zlib.crc32(kind + body) != struct.unpack(">I", blob[end - 4 : end])[0]
        ):
            return None
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            if key == FINGERPRINT_KEY.encode("latin-1"):
                found = value.decode("latin-1")
        if kind == b"IEND":
            return found if end == len(blob) else None
        at = end
    return None


def write_pngs(
    out_dir: Path, all_stats: Sequence[VariantStats], costs: Sequence[Costing]
) -> Pictures:
    """Write the durations and cost PNGs into ``out_dir`` (those it does not already hold);
    skip them without matplotlib."""
    todo = pending(out_dir, all_stats, costs)
    paths = tuple(c.path for c in charts(out_dir, all_stats, costs))
    if not todo:
        return Pictures(paths)
    try:
        plt = _pyplot()
    except ImportError as exc:
        return Pictures(
            (),
            f"PNG charts skipped: matplotlib is not installed ({exc}); "
            "`pip install matplotlib` to get them",
        )
    for chart in todo:
        _draw(plt, chart)
    return Pictures(paths)


def _pyplot() -> object:
    """matplotlib's pyplot on the file-only Agg backend; raises ImportError without it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def preload() -> None:
    """Import matplotlib ahead of :func:`write_pngs` (about 0.7 s here), at a moment when
    this process would otherwise wait; nothing happens without it."""
    try:
        _pyplot()
    except ImportError:
        pass


def _draw(plt: Any, chart: Chart) -> None:
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(chart.scene[0]) + 2), 4))
    (_durations if chart.kind == "durations" else _costs)(ax, chart.scene)
    fig.tight_layout()
    metadata = {FINGERPRINT_KEY: chart.fingerprint()}
    publish(chart.path, lambda temp: fig.savefig(temp, dpi=120, format="png", metadata=metadata))
    plt.close(fig)


def durations_scene(all_stats: Sequence[VariantStats]) -> tuple[Any, ...]:
    """Per variant: label, successful runs, median, what stands for no runs, whether it is
    outside quality; then the colours of runs and medians."""
    columns = tuple(
        (
            plain_label(st.variant_id),
            tuple(st.runs),
            st.median if st.runs else None,
            None if st.runs else "not run yet" if st.attempts == 0 else "no data",
            bool(st.successes and not st.equal_quality),
        )
        for st in all_stats
    )
    return columns, RUN_COLOUR, MEDIAN_COLOUR


def _durations(ax: Any, scene: tuple[Any, ...]) -> None:
    columns, run_colour, median_colour = scene
    labelled = False
    for x, (_, runs, median, empty, outside) in enumerate(columns):
        if runs:
            # Spread the points sideways a little so equal durations stay visible.
            offsets = [(i - (len(runs) - 1) / 2) * 0.06 for i in range(len(runs))]
            ax.scatter(
                [x + o for o in offsets],
                runs,
                color=run_colour,
                s=24,
                zorder=2,
                label=None if labelled else "successful run",
            )
            ax.hlines(
                median,
                x - 0.3,
                x + 0.3,
                color=median_colour,
                linewidth=2,
                zorder=3,
                label=None if labelled else "median",
            )
            labelled = True
        else:
            ax.annotate(
                empty,
                (x, 0.02),
                ha="center",
                va="bottom",
                color=median_colour,
                xycoords=("data", "axes fraction"),
            )
        if outside:
            ax.annotate(
                "outside quality",
                (x, 0.98),
                ha="center",
                va="top",
                fontsize=8,
                xycoords=("data", "axes fraction"),
                color="#7F6000",
            )
    ax.set_xticks(range(len(columns)), [c[0] for c in columns])
    ax.set_xlim(-0.6, len(columns) - 0.4)
    top = max((max(c[1]) for c in columns if c[1]), default=1.0)
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel("measured_s (s)")
    ax.set_title("Measured time per variant: every successful run, median marked")
    ax.grid(axis="y", alpha=0.3)
    if labelled:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8, frameon=False)


def no_bar_label(c: Costing) -> str:
    """Why a configuration has no bar in the cost chart, in two or three words."""
    return (
        "not run yet"
        if c.stats.attempts == 0
        else "no success"
        if not c.stats.successes
        else "not feasible"
        if c.stats.unfinished and c.resume is None
        else "outside quality"
        if not c.stats.equal_quality
        else "no price"
        if c.plan is None
        else "no forecast"
    )


def costs_note(costs: Sequence[Costing]) -> str:
    """Whose plans, which plan lengths and catalog dates the bars come from; EXAMPLE first
    when one rests on an example figure (the workbook's chart says the same)."""
    plans = [c.plan for c in costs if c.plan is not None]
    sellers = sorted({p.provider or "shipped catalog" for p in plans})
    days = sorted({p.plan_days for p in plans if isinstance(p, Plan)})
    dates = sorted({p.catalog_date for p in plans})
    note = "; ".join(
        x
        for x in (
            ", ".join(sellers),
            f"{'/'.join(map(str, days))}-day plans" if days else "",
            f"catalog of {', '.join(dates)}" if dates else "",
        )
        if x
    )
    if any(c.example for c in costs):
        note = f"{layout.EXAMPLE} figures: {note}"
    return note or "no priced configuration"


def costs_scene(costs: Sequence[Costing]) -> tuple[Any, ...]:
    """Per configuration: label, then the bar's height and its figure, or why it has none;
    then the note on whose prices and the bars' colour."""
    columns = []
    for c in costs:
        cost = c.forecast_per_expected
        if cost is not None and c.stats.equal_quality:
            bar: tuple[Any, ...] = (float(cost), f"{rules.to_cent(cost):,.2f}", None)
        else:
            bar = (None, None, no_bar_label(c))
        columns.append((plain_label(c.stats.variant_id), *bar))
    return tuple(columns), costs_note(costs), BAR_COLOUR


def _costs(ax: Any, scene: tuple[Any, ...]) -> None:
    columns, note, bar_colour = scene
    for x, (_, height, figure, why) in enumerate(columns):
        if height is not None:
            ax.bar(x, height, color=bar_colour)
            ax.annotate(figure, (x, height), ha="center", va="bottom", fontsize=8)
        else:
            ax.annotate(
                why,
                (x, 0.02),
                ha="center",
                va="bottom",
                fontsize=8,
                color="#7F6000",
                xycoords=("data", "axes fraction"),
                rotation=90,
            )
    ax.set_xticks(range(len(columns)), [c[0] for c in columns])
    ax.set_xlim(-0.6, len(columns) - 0.4)
    ax.set_ylabel("USD per expected corpus (forecast)")
    ax.set_title(
        f"Projected cost per expected corpus, a FORECAST (equal-quality configurations)\n{note}",
        fontsize=10,
    )
    ax.grid(axis="y", alpha=0.3)


def plain_label(text: str) -> str:
    """``text`` as a chart shows it literally: a ``$`` would start matplotlib's mathtext (a
    variant id ``$\\frac{1}{$`` stopped the report after its save)."""
    return str(text).replace("$", r"\$")
