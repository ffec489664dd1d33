"""Which task kind fills which measured Attempts column, and the check every row passes.

Every measured column of :data:`toolkit.layout.ATTEMPTS` is declared exactly once (a test
holds it): in :data:`EVERY_KIND` (each kind fills it, each its own way) or in the columns
of one kind (:data:`OWN`), which another kind's row leaves empty with that kind's
:data:`ABSENT` reason. :func:`finish` writes those and then checks the row against the
layout the process runs under: a measured column with neither a value nor a reason is a
bug of the task kind, never a row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit import layout
from toolkit.runner.decoding import GENERATION_COLUMNS, SERVING_COLUMNS

if TYPE_CHECKING:  # the declaration itself stays free of torch (tests read it without)
    from toolkit.runner.tasks.cells import Cells

#: The measured columns every task kind fills (phases, quality, memory, tokens, FLOPs, load,
#: the peak probe).
EVERY_KIND = (
    "load_s",
    "warmup_s",
    "measured_s",
    "device_s",
    "forward_device_s",
    "evaluation_s",
    "export_s",
    "observed_ids",
    "ids_match",
    "metric_value",
    "reference_agreement",
    "mem_allocated_peak_bytes",
    "mem_reserved_peak_bytes",
    "host_rss_peak_bytes",
    "padded_tokens",
    "padding_efficiency",
    "truncated",
    "real_flops",
    "padded_flops",
    "real_flop_rate",
    "padded_flop_rate",
    "utilisation",
    "padding_waste",
    "others_cpu_s",
    "others_cpu_share",
    "probe_peak_flops",
    "probe_fp32_peak_flops",
    "probe_s",
    "probe_others_share",
)
#: The measured columns only one kind fills, by Protocol task.
OWN: dict[str, tuple[str, ...]] = {
    "classification": ("cold_pass_s",),
    "generation": GENERATION_COLUMNS,
    "serving": SERVING_COLUMNS,
}
#: Why a kind's own columns are empty in another kind's row (after "KIND attempt: ").
ABSENT: dict[str, str] = {
    kind: f"measured for Protocol task {kind} only"
    for kind in ("classification", "generation", "serving")
}


def absent_reason(kind: str, other: str) -> str:
    """Why ``other``'s own columns are empty in a ``kind`` attempt's row."""
    return f"{kind} attempt: {ABSENT[other]}"


def measured_columns() -> list[layout.Column]:
    """The measured Attempts columns of the layout this process runs under."""
    return [c for c in layout.ATTEMPTS.columns if c.measurement]


def finish(cells: Cells, kind: str) -> None:
    """Leave the other kinds' own columns empty with their reason, then check that every
    measured column has a value or a reason (AssertionError naming the column and kind)."""
    for other, names in OWN.items():
        if other != kind:
            for name in names:
                cells.put(name, None, absent_reason(kind, other))
    check(cells.row, kind)


def check(row: dict[str, object], kind: str) -> None:
    """AssertionError when a measured column of ``row`` has neither a value nor a reason."""
    missing = [
        c.name for c in measured_columns() if row.get(c.name) is None and not row.get(c.reason)
    ]
    if missing:
        raise AssertionError(
            f"{kind} attempt row: measured column(s) {', '.join(missing)} "
            "with neither a value nor a reason (declare them in "
            "runner.tasks.columns and fill them in the task kind)"
        )
