"""Pictures of the campaign: durations per variant and cost per accepted corpus.

The workbook's own charts are :mod:`toolkit.workbook.charts`; these are the
same pictures as PNG files for readers without Excel. matplotlib is imported lazily; without it the
PNGs are skipped and the report says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolkit import layout
from toolkit.money.tariffs import Plan, rules
from toolkit.plumbing.atomic import publish
from toolkit.report.costs import Costing
from toolkit.report.summary import VariantStats
from toolkit.workbook.charts import BAR_COLOUR, MEDIAN_COLOUR, RUN_COLOUR

DURATIONS_PNG = "durations.png"
COSTS_PNG = "projected_cost_per_expected.png"


@dataclass(frozen=True)
class Pictures:
    """PNG files written, or why none were."""

    paths: tuple[Path, ...]
    skipped: str | None = None


def write_pngs(
    out_dir: Path, all_stats: Sequence[VariantStats], costs: Sequence[Costing]
) -> Pictures:
    """Write the durations and cost PNGs into ``out_dir``; skip them without matplotlib."""
    try:
        plt = _pyplot()
    except ImportError as exc:
        return Pictures(
            (),
            f"PNG charts skipped: matplotlib is not installed ({exc}); "
            "`pip install matplotlib` to get them",
        )
    paths = [_durations_png(plt, out_dir / DURATIONS_PNG, all_stats)]
    paths.append(_costs_png(plt, out_dir / COSTS_PNG, costs))
    return Pictures(tuple(paths))


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


def _durations_png(plt: object, path: Path, all_stats: Sequence[VariantStats]) -> Path:
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(all_stats) + 2), 4))  # type: ignore[attr-defined]
    labelled = False
    for x, st in enumerate(all_stats):
        if st.runs:
            # Spread the points sideways a little so equal durations stay visible.
            offsets = [(i - (len(st.runs) - 1) / 2) * 0.06 for i in range(len(st.runs))]
            ax.scatter(
                [x + o for o in offsets],
                st.runs,
                color=RUN_COLOUR,
                s=24,
                zorder=2,
                label=None if labelled else "successful run",
            )
            ax.hlines(
                st.median,
                x - 0.3,
                x + 0.3,
                color=MEDIAN_COLOUR,
                linewidth=2,
                zorder=3,
                label=None if labelled else "median",
            )
            labelled = True
        else:
            ax.annotate(
                "not run yet" if st.attempts == 0 else "no data",
                (x, 0.02),
                ha="center",
                va="bottom",
                color=MEDIAN_COLOUR,
                xycoords=("data", "axes fraction"),
            )
        if st.successes and not st.equal_quality:
            ax.annotate(
                "outside quality",
                (x, 0.98),
                ha="center",
                va="top",
                fontsize=8,
                xycoords=("data", "axes fraction"),
                color="#7F6000",
            )
    ax.set_xticks(range(len(all_stats)), [plain_label(st.variant_id) for st in all_stats])
    ax.set_xlim(-0.6, len(all_stats) - 0.4)
    top = max((max(st.runs) for st in all_stats if st.runs), default=1.0)
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel("measured_s (s)")
    ax.set_title("Measured time per variant: every successful run, median marked")
    ax.grid(axis="y", alpha=0.3)
    if labelled:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    publish(path, lambda temp: fig.savefig(temp, dpi=120, format="png"))
    plt.close(fig)  # type: ignore[attr-defined]
    return path


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


def _costs_png(plt: object, path: Path, costs: Sequence[Costing]) -> Path:
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(costs) + 2), 4))  # type: ignore[attr-defined]
    names = [plain_label(c.stats.variant_id) for c in costs]
    for x, c in enumerate(costs):
        cost = c.forecast_per_expected
        if cost is not None and c.stats.equal_quality:
            ax.bar(x, float(cost), color=BAR_COLOUR)
            ax.annotate(
                f"{rules.to_cent(cost):,.2f}",
                (x, float(cost)),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        else:
            ax.annotate(
                no_bar_label(c),
                (x, 0.02),
                ha="center",
                va="bottom",
                fontsize=8,
                color="#7F6000",
                xycoords=("data", "axes fraction"),
                rotation=90,
            )
    ax.set_xticks(range(len(costs)), names)
    ax.set_xlim(-0.6, len(costs) - 0.4)
    ax.set_ylabel("USD per expected corpus (forecast)")
    ax.set_title(
        "Projected cost per expected corpus, a FORECAST (equal-quality "
        f"configurations)\n{costs_note(costs)}",
        fontsize=10,
    )
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    publish(path, lambda temp: fig.savefig(temp, dpi=120, format="png"))
    plt.close(fig)  # type: ignore[attr-defined]
    return path


def plain_label(text: str) -> str:
    """``text`` as a chart shows it literally: a ``$`` would start matplotlib's mathtext (a
    variant id ``$\\frac{1}{$`` stopped the report after its save)."""
    return str(text).replace("$", r"\$")
