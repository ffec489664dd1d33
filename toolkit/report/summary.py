"""The Summary sheet: per variant counts, raw durations, median/min/max (R14), quality (R16).

Each number is a live formula over the Attempts sheet *and* the value the
Python generator computed for it (the formula's cached value), so Excel and
LibreOffice recalculate it when rows are added, and readers that never
recalculate (pandas, openpyxl ``data_only``, previews) still see it. Both
sides apply one rule, stated once in :data:`SUCCESS_RULE`.

Formulas follow the portability rules of :class:`toolkit.workbook.model.Formula`
(Excel, LibreOffice and Gnumeric compute the same): coerced SUMPRODUCT counts,
medians, minima and maxima over a selection as LARGE inside SUMPRODUCT (no array entry:
:func:`kth_largest`), ``INDEX(..., SUMPRODUCT(MATCH(1, ..., 0)))``, guarded against blanks
and against an empty selection (MIN and MAX of nothing are 0 there, never "no data"). They read
the Attempts columns by defined names (``Attempts_measured_s``) whose ranges reach a fixed row
far below the data, so that new rows are covered.

Under a generation protocol, ttft_s, decode_tokens_per_s and decode_ceiling_fraction are
medians over the successes like metric_value (:mod:`toolkit.report.generation`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit import layout
from toolkit.evidence.amendments import Relaxation, relaxations
from toolkit.report import generation, serving, stats, utilisation
from toolkit.workbook import names
from toolkit.workbook.model import Formula, WorkbookData

#: How many raw durations the sheet shows side by side (run_1_s .. run_5_s).
RUN_COLUMNS = layout.RUN_COLUMNS
SUCCESS_RULE = (
    "a success is an attempt with status completed, ids_match yes, a measured_s, "
    "not excluded and not pre-amendment; only successes enter the median, min "
    "and max"
)
NO_DATA = "no data: no successful run (completed, ids match, not excluded, not pre-amendment)"
#: Why a Summary row has no cold pass.
NO_COLD = (
    "no cold pass among the successes: it is measured on repetition 1 of a classification "
    "attempt (layout 8 on)"
)
MEMORY_COLUMNS = ("mem_allocated_peak_bytes", "mem_reserved_peak_bytes", "host_rss_peak_bytes")
#: The software stack a measurement belongs to (R4): two variants compared on different
#: stacks are compared as whole tested configurations, and the verdict says so.
STACK_FIELDS = ("driver", "backend", "torch", "transformers", "model_revision")
#: The hardware a measurement belongs to, compared beside the software stack.
HARDWARE_FIELDS = ("gpu_name",)
#: The phases of one corpus end to end (R9, R23), summed per success for campaign_s.
CAMPAIGN_PHASES = ("load_s", "warmup_s", "measured_s", "evaluation_s", "export_s")
#: A measured window is "taken under load" when other processes took more than this share
#: of the whole machine's CPU during it (Attempts others_cpu_share): a quarter of the machine
#: busy elsewhere is enough to stretch a CPU window severalfold on a small host (a 3.7 s
#: window took 13-17 s beside other jobs). The verdicts name such windows; numbers stay.
LOADED_SHARE = 0.25

YES = layout.YES


def _text(value: Any) -> str:
    """A cell as the spreadsheet compares it: blank is "", case ignored."""
    return "" if value is None else str(value).lower()


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def is_success(attempt: dict[str, Any]) -> bool:
    """Whether an Attempts row enters the statistics (:data:`SUCCESS_RULE`)."""
    return (
        _text(attempt.get("status")) == "completed"
        and _text(attempt.get("ids_match")) == YES
        and _text(attempt.get("excluded")) != YES
        and _text(attempt.get("pre_amendment")) != YES
        and attempt.get("measured_s") is not None
    )


@dataclass
class VariantStats:
    """What the Summary row of one variant says, as Python values."""

    variant_id: str
    series: int | None
    description: str | None
    attempts: int = 0
    completed: int = 0
    failed: int = 0
    interrupted: int = 0
    excluded: int = 0
    pre_amendment: int = 0
    runs: tuple[float, ...] = ()  # successes' measured_s, in Attempts order
    #: Successes' load + warm-up + measured + evaluation + export, when all five are recorded.
    campaign_runs: tuple[float, ...] = ()
    by_repetition: dict[int, float] = field(default_factory=dict)
    #: Successes' cold_pass_s (recorded on repetition 1: one pass before any warm-up).
    cold_runs: tuple[float, ...] = ()
    #: Successes' measured_s per seed (Attempts seed, R17): kept apart in the notes; the
    #: variant's median stays the one over all seeds.
    by_seed: dict[int, list[float]] = field(default_factory=dict)
    items: float | None = None  # corpus items (median expected_ids of the successes)
    quality_verdict: str = "not evaluated"
    metric_value: float | None = None
    reference_agreement: float | None = None
    peaks: dict[str, int | None] = field(default_factory=dict)
    #: Why a peak is empty: its attempts' reasons ("cpu variant: ..."), for the notes (R12).
    peak_reasons: dict[str, str] = field(default_factory=dict)
    exclusions: list[str] = field(default_factory=list)
    #: Corpus fingerprints (Manifest corpus_sha256) its successes were measured on: two
    #: variants are compared only on one and the same corpus.
    corpora: frozenset[str] = frozenset()
    #: What its successes ran on (R4): per Manifest field of STACK_FIELDS and HARDWARE_FIELDS,
    #: the values seen.
    stacks: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Successes' measured_s per machine (Manifest host, gpu_name): a merge of two boxes'
    #: copies or a cluster pools them into one median, which the notes and memo then state.
    machines: dict[tuple[str | None, str | None], list[float]] = field(default_factory=dict)
    #: Attempt rows of the variant with integrity findings (validate's checks): while any
    #: remain, its numbers are shown but no verdict or choice rests on them.
    untrusted: int = 0
    #: Attempts that did not finish the whole corpus (R18), exclusions, pre-amendment runs and
    #: interruptions aside: "b8-fp32-r3 (failed, 312 of 1000 items)".
    unfinished: list[str] = field(default_factory=list)
    #: The variant this one resumes after a failure (Variants resume_of, R13).
    resume_of: str | None = None
    #: The protocol's thresholds lowered or tolerances widened after attempts ran (R16).
    relaxations: tuple[Relaxation, ...] = ()
    #: Filled by the quality gate (report.quality): joins the cost comparison.
    equal_quality: bool = False
    gate_note: str = ""
    #: Median utilisation and padding waste of the successes, and what limits them.
    usage: utilisation.Utilisation | None = None
    #: Generation figures of the successes (TTFT, decode rate, ceiling fraction); None
    #: when the Protocol's task is classification.
    generation: generation.Figures | None = None
    #: Serving figures of the successes and its endpoint and card's highest rate meeting
    #: the targets; None when the Protocol's task is not serving.
    served: serving.Figures | None = None
    answer: serving.Answer | None = None
    #: Successes whose measured window was taken under load (:data:`LOADED_SHARE`):
    #: "a003-b8-fp32-r1-1a2b 61%".
    loaded: list[str] = field(default_factory=list)

    @property
    def successes(self) -> int:
        """Runs in the statistics."""
        return len(self.runs)

    @property
    def median(self) -> float | None:
        """Median measured_s of the successes; None when there is none."""
        return stats.median(self.runs)

    @property
    def campaign(self) -> float | None:
        """Median time of one corpus end to end (campaign_s); None without a full success."""
        return stats.median(self.campaign_runs)

    @property
    def cold(self) -> float | None:
        """Median cold pass of the successes (cold_pass_s); None when none was recorded."""
        return stats.median(self.cold_runs)

    @property
    def cold_surcharge(self) -> float:
        """Seconds a corpus met cold costs beyond the warm median: the cold pass less
        median_s, never below 0; 0 without both."""
        if self.cold is None or self.median is None:
            return 0.0
        return max(0.0, self.cold - self.median)

    @property
    def minimum(self) -> float | None:
        """Fastest success."""
        return stats.minimum(self.runs)

    @property
    def maximum(self) -> float | None:
        """Slowest success."""
        return stats.maximum(self.runs)

    @property
    def throughput(self) -> float | None:
        """Corpus items per second at the median."""
        if self.median is None or self.items is None or self.median <= 0:
            return None
        rate = self.items / self.median
        return rate if math.isfinite(rate) else None  # a cell holds no infinity

    @property
    def mixed_hardware(self) -> bool:
        """Whether the successes ran on more than one recorded host or GPU model."""
        hosts = {host for host, _ in self.machines if host}
        gpus = {gpu for _, gpu in self.machines if gpu}
        return len(hosts) > 1 or len(gpus) > 1


def variant_stats(data: WorkbookData) -> list[VariantStats]:
    """One VariantStats per declared variant (Variants order), then any undeclared one."""
    found: dict[str, VariantStats] = {}
    for v in data.tables["Variants"]:
        vid = v.get("variant_id")
        if vid is not None:
            found[str(vid)] = VariantStats(
                str(vid),
                v.get("series"),
                v.get("description"),
                resume_of=str(v.get("resume_of") or "").strip() or None,
            )
    of_variant: dict[str, list[dict[str, Any]]] = {}  # each variant's rows, in sheet order
    for a in data.tables["Attempts"]:
        of_variant.setdefault(str(a.get("variant_id")), []).append(a)
        if a.get("variant_id") is None:
            continue  # a row without a variant belongs to no summary (validate reports it)
        vid = str(a.get("variant_id"))
        st = found.setdefault(vid, VariantStats(vid, None, None))
        _count(st, a)
    corpus_of = {m.get("manifest_id"): m.get("corpus_sha256") for m in data.tables["Manifest"]}
    manifests = {m.get("manifest_id"): m for m in data.tables["Manifest"]}
    relaxed = tuple(relaxations(data))
    generative = generation.is_generation(data)
    served = serving.is_serving(data)
    for st in found.values():
        st.relaxations = relaxed
        mine = of_variant.get(st.variant_id, [])
        wins = [a for a in mine if is_success(a)]
        _finish(st, mine)
        st.corpora = frozenset(
            str(corpus_of[a.get("manifest_id")])
            for a in wins
            if corpus_of.get(a.get("manifest_id"))
        )
        used = [manifests[a.get("manifest_id")] for a in wins if a.get("manifest_id") in manifests]
        st.stacks = {
            f: frozenset(str(m[f]) for m in used if m.get(f) is not None)
            for f in STACK_FIELDS + HARDWARE_FIELDS
        }
        st.machines = _machine_runs(mine, manifests)
        declared = next(
            (v for v in data.tables["Variants"] if str(v.get("variant_id")) == st.variant_id), None
        )
        st.usage = utilisation.of_variant(wins, manifests, declared)
        st.generation = generation.of_variant(wins) if generative else None
        st.served = serving.of_variant(wins, declared) if served else None
    if served:
        answers = serving.highest_rates(
            {vid: st.served for vid, st in found.items() if st.served is not None},
            data.tables["Variants"],
        )
        for vid, st in found.items():
            st.answer = answers.get(vid)
    return list(found.values())


def _machine_runs(
    attempts: list[dict[str, Any]], manifests: dict[Any, dict[str, Any]]
) -> dict[tuple[str | None, str | None], list[float]]:
    """The successes' measured_s per (host, gpu_name) of their Manifest rows; None where
    the row or the field is missing (a workbook from before host was recorded)."""
    found: dict[tuple[str | None, str | None], list[float]] = {}
    for a in attempts:
        seconds = _number(a.get("measured_s"))
        if not is_success(a) or seconds is None:
            continue  # as in _finish: only successes with a number enter median_s
        m = manifests.get(a.get("manifest_id"), {})
        found.setdefault((_recorded(m, "host"), _recorded(m, "gpu_name")), []).append(seconds)
    return found


def _recorded(row: dict[str, Any], column: str) -> str | None:
    """A Manifest cell as text; None when blank."""
    return str(row.get(column) or "").strip() or None


def _count(st: VariantStats, a: dict[str, Any]) -> None:
    st.attempts += 1
    status = _text(a.get("status"))
    st.completed += status == "completed"
    st.failed += status == "failed"
    st.interrupted += status == "interrupted"
    if _text(a.get("excluded")) == YES:
        st.excluded += 1
        st.exclusions.append(f"{a.get('attempt_id')}: {a.get('exclusion_reason') or 'no reason'}")
    st.pre_amendment += _text(a.get("pre_amendment")) == YES
    if unfinished(a):
        st.unfinished.append(
            f"{a.get('attempt_id')} ({status or 'no status'}, "
            f"{a.get('items_completed')} of {a.get('expected_ids')} items)"
        )


def unfinished(attempt: dict[str, Any]) -> bool:
    """Whether an attempt held against the variant's feasibility (R18) did not finish the
    whole corpus: failed, or fewer items completed than expected. Exclusions, pre-amendment
    runs and interruptions (Ctrl-C, a killed run: their slot runs again) are not held."""
    if (
        _text(attempt.get("excluded")) == YES
        or _text(attempt.get("pre_amendment")) == YES
        or _text(attempt.get("status")) == "interrupted"
    ):
        return False
    items, expected = _number(attempt.get("items_completed")), attempt.get("expected_ids")
    return _text(attempt.get("status")) == "failed" or items is None or items != expected


def _finish(st: VariantStats, attempts: list[dict[str, Any]]) -> None:
    wins = [a for a in attempts if is_success(a)]
    # A measured_s that is not a number (text typed in the cell: validate names it) is
    # unusable: it enters none of the timings.
    timed = [(a, float(s)) for a in wins if (s := _number(a["measured_s"])) is not None]
    st.runs = tuple(s for _, s in timed)
    for a, s in timed:
        rep = a.get("repetition")
        if isinstance(rep, int) and rep not in st.by_repetition:
            st.by_repetition[rep] = s
        seed = a.get("seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            st.by_seed.setdefault(seed, []).append(s)
    st.cold_runs = tuple(s for a in wins if (s := _number(a.get("cold_pass_s"))) is not None)
    st.campaign_runs = tuple(
        _phases_sum(a) for a in wins if all(_number(a.get(p)) is not None for p in CAMPAIGN_PHASES)
    )
    st.loaded = [
        f"{a.get('attempt_id')} {share:.0%}"
        for a, _ in timed
        if (share := _number(a.get("others_cpu_share"))) is not None and share > LOADED_SHARE
    ]
    items = [_number(a.get("expected_ids")) for a in wins]
    st.items = stats.median([i for i in items if i is not None])
    verdicts = {_text(a.get("quality_verdict")) for a in wins} - {"not evaluated", ""}
    st.quality_verdict = (
        "fail" if "fail" in verdicts else "pass" if verdicts == {"pass"} else "not evaluated"
    )
    metrics = [m for m in (_number(a.get("metric_value")) for a in wins) if m is not None]
    st.metric_value = stats.median(metrics)
    agreements = [m for m in (_number(a.get("reference_agreement")) for a in wins) if m is not None]
    st.reference_agreement = stats.minimum(agreements)
    kept = [a for a in attempts if _text(a.get("excluded")) != YES]
    for col in MEMORY_COLUMNS:
        values = [int(v) for v in (_number(a.get(col)) for a in kept) if v is not None]
        st.peaks[col] = max(values) if values else None
        reasons = sorted({str(a[f"{col}_reason"]) for a in kept if a.get(f"{col}_reason")})
        if st.peaks[col] is None and reasons:
            st.peak_reasons[col] = " / ".join(reasons)


def _phases_sum(a: dict[str, Any]) -> float:
    total = 0.0
    for phase in CAMPAIGN_PHASES:  # left to right, as the formula adds them
        total += float(a[phase])
    return total


# --------------------------------------------------------------------------- formulas


class Ranges:
    """Attempts columns as the Summary's formulas name them (``Attempts_measured_s``): a
    defined name each, down to a fixed high row (:mod:`toolkit.workbook.names`)."""

    def __call__(self, column: str) -> str:
        return names.attempts_column(column)


def _cell(column: str, row: int) -> str:
    return f"{layout.column_letter(layout.SUMMARY, column)}{row}"


def _abs_cell(column: str, row: int) -> str:
    return f"${layout.column_letter(layout.SUMMARY, column)}{row}"


#: How far below any value the rows outside a selection are pushed (1E+300: no measurement
#: comes near it; a selected value is kept exact, minus 0).
OUTSIDE = "1E+300"


def kth_largest(values: str, condition: str, k: str) -> str:
    """The ``k``-th largest of ``values`` on the rows where ``condition`` (1 or 0) holds, as a
    formula that needs no array entry: the other rows pushed :data:`OUTSIDE` below, LARGE
    over the array inside SUMPRODUCT, which evaluates its argument as an array in Excel,
    LibreOffice and Gnumeric alike (a bare LARGE does not in LibreOffice). ``k`` at most the
    selected count."""
    return f"SUMPRODUCT(LARGE({values}-(1-{condition})*{OUTSIDE},{k}))"


def max_of(values: str, condition: str, n: str) -> str:
    """MAX(IF(condition, values)) without array entry; ``n``: the selected count (>= 1)."""
    return kth_largest(values, condition, "1")


def min_of(values: str, condition: str, n: str) -> str:
    """MIN(IF(condition, values)) without array entry: the ``n``-th largest of ``n``."""
    return kth_largest(values, condition, n)


def median_of(values: str, condition: str, n: str) -> str:
    """MEDIAN(IF(condition, values)) without array entry: the mean of the middle two of
    ``n`` (one and the same when ``n`` is odd), as :func:`statistics.median` computes it."""
    low = kth_largest(values, condition, f"INT(({n}+1)/2)")
    high = kth_largest(values, condition, f"{n}+1-INT(({n}+1)/2)")
    return f"({low}+{high})/2"


#: The aggregates over a selection, by their spreadsheet name.
AGGREGATES = {"MAX": max_of, "MIN": min_of, "MEDIAN": median_of}


def success_condition(r: Ranges, row: int) -> str:
    """The array condition selecting this Summary row's successes (1 or 0 per Attempts row)."""
    return (
        f"({r('variant_id')}={_abs_cell('variant_id', row)})"
        f'*({r("status")}="completed")*({r("ids_match")}="yes")'
        f'*({r("excluded")}<>"yes")*({r("pre_amendment")}<>"yes")'
        f'*({r("measured_s")}<>"")'
    )


def summary_row(st: VariantStats, row: int, r: Ranges, notes: str) -> dict[str, Any]:
    """The Summary row of one variant written at Excel row ``row``: formulas with values."""
    vid = _abs_cell("variant_id", row)
    mine = f"({r('variant_id')}={vid})"
    ok = success_condition(r, row)
    full = ok + "".join(f'*({r(p)}<>"")' for p in CAMPAIGN_PHASES if p != "measured_s")
    successes = _cell("successes", row)
    median = _cell("median_s", row)
    with_items = f'{ok}*({r("expected_ids")}<>"")'
    items = f"SUMPRODUCT({with_items})"
    whole = f"SUMPRODUCT({full})"
    phases = "(" + "+".join(r(p) for p in CAMPAIGN_PHASES) + ")"

    def count(condition: str, value: int) -> Formula:
        # SUMPRODUCT of equalities, not COUNTIFS: an id like "b*" or "<>x" stays literal.
        # "1*" coerces the booleans: Excel and Gnumeric count a bare boolean array as 0.
        return Formula(f"SUMPRODUCT(1*{mine}{condition})", value)

    def guarded(function: str, column: str, condition: str, value: Any) -> Formula:
        # MIN/MAX of an empty selection give 0 in a spreadsheet: count first.
        selected = f'{condition}*({r(column)}<>"")'
        n = f"SUMPRODUCT({selected})"
        return Formula(f'IF({n}=0,"",{AGGREGATES[function](r(column), selected, n)})', value)

    values: dict[str, Any] = {
        "variant_id": st.variant_id,
        "series": st.series,
        "attempts": count("", st.attempts),
        "completed": count(f'*({r("status")}="completed")', st.completed),
        "failed": count(f'*({r("status")}="failed")', st.failed),
        "interrupted": count(f'*({r("status")}="interrupted")', st.interrupted),
        "excluded": count(f'*({r("excluded")}="yes")', st.excluded),
        "pre_amendment": count(f'*({r("pre_amendment")}="yes")', st.pre_amendment),
        "successes": Formula(f"SUMPRODUCT({ok})", st.successes),
        "median_s": Formula(
            f'IF({successes}=0,"",{median_of(r("measured_s"), ok, successes)})', st.median
        ),
        "median_s_reason": Formula(
            f'IF({successes}=0,"{NO_DATA}","")', NO_DATA if st.median is None else None
        ),
        "min_s": Formula(
            f'IF({successes}=0,"",{min_of(r("measured_s"), ok, successes)})', st.minimum
        ),
        "max_s": Formula(
            f'IF({successes}=0,"",{max_of(r("measured_s"), ok, successes)})', st.maximum
        ),
        "throughput_items_s": Formula(
            f'IF({items}=0,"",{median_of(r("expected_ids"), with_items, items)}/{median})',
            st.throughput,
        ),
        "campaign_s": Formula(
            f'IF({whole}=0,"",{median_of(phases, full, whole)})',
            st.campaign,
        ),
        "quality_verdict": st.quality_verdict,
        "equal_quality": YES if st.equal_quality else layout.NO,
        "metric_value": guarded("MEDIAN", "metric_value", ok, st.metric_value),
        "reference_agreement": guarded("MIN", "reference_agreement", ok, st.reference_agreement),
        "notes": notes,
    }
    for k in range(1, RUN_COLUMNS + 1):
        # The first success of repetition k; SUMPRODUCT evaluates MATCH's array without
        # array entry (no match: #N/A, shown empty).
        values[f"run_{k}_s"] = Formula(
            f"IFERROR(INDEX({r('measured_s')},"
            f'SUMPRODUCT(MATCH(1,{ok}*({r("repetition")}={k}),0))),"")',
            st.by_repetition.get(k),
        )
    kept = f'{mine}*({r("excluded")}<>"yes")'
    for col in MEMORY_COLUMNS:
        values[col] = guarded("MAX", col, kept, st.peaks.get(col))
    usage = st.usage
    if usage is not None:
        values["utilisation"] = guarded("MEDIAN", "utilisation", ok, usage.value)
        # A formula's text literal holds at most 255 characters in Excel.
        reason = (usage.reason or "").replace('"', "'")[:200]
        values["utilisation_reason"] = Formula(
            f'IF(SUMPRODUCT({ok}*({r("utilisation")}<>""))=0,"{reason}","")', reason or None
        )
        values["padding_waste"] = guarded("MEDIAN", "padding_waste", ok, usage.padding_waste)
        values["limited_by"] = usage.limited_by
    values["cold_pass_s"] = guarded("MEDIAN", "cold_pass_s", ok, st.cold)
    values["cold_pass_s_reason"] = Formula(
        f'IF(SUMPRODUCT({ok}*({r("cold_pass_s")}<>""))=0,"{NO_COLD}","")',
        NO_COLD if st.cold is None else None,
    )
    for col in generation.SUMMARY_COLUMNS:
        if st.generation is None:  # a classification protocol: no generation figure
            values[f"{col}_reason"] = generation.NOT_GENERATION
            continue
        values[col] = guarded("MEDIAN", col, ok, getattr(st.generation, col))
        reason = st.generation.reasons.get(col, "").replace('"', "'")[:200]
        values[f"{col}_reason"] = Formula(
            f'IF(SUMPRODUCT({ok}*({r(col)}<>""))=0,"{reason}","")', reason or None
        )
    values.update(serving_cells(st, row, r, ok))
    return {name: values.get(name) for name in layout.SUMMARY.names}


def serving_cells(st: VariantStats, row: int, r: Ranges, ok: str) -> dict[str, Any]:
    """The serving columns of a Summary row: targets met and tokens within target as
    formulas over the successes, the rate and its endpoint's highest rate as values."""
    figures = st.served
    if figures is None:
        return {f"{c}_reason": serving.NOT_SERVING for c in serving.SUMMARY_COLUMNS}
    successes = _cell("successes", row)
    met = f'SUMPRODUCT({ok}*({r("targets_met")}="yes"))'
    none = f'IF({successes}=0,"{serving.NO_SUCCESS}","")'
    values: dict[str, Any] = {
        "request_rate": figures.request_rate,
        "targets_met": Formula(
            f'IF({successes}=0,"",IF({met}={successes},"yes","no"))',
            None if figures.targets_met is None else YES if figures.targets_met else layout.NO,
        ),
        "targets_met_reason": Formula(none, figures.reasons.get("targets_met")),
        "good_output_tokens": Formula(
            f'IF({successes}=0,"",SUMPRODUCT({ok},{r("good_output_tokens")}))',
            figures.good_output_tokens,
        ),
        "good_output_tokens_reason": Formula(none, figures.reasons.get("good_output_tokens")),
        "served_s": Formula(
            f'IF({successes}=0,"",SUMPRODUCT({ok},{r("measured_s")}))',
            figures.measured_s if figures.targets_met is not None else None,
        ),
    }
    answer = st.answer
    rate = answer.rate if answer is not None else None
    values["highest_rate"] = rate
    values["highest_rate_reason"] = None if rate is not None else serving.NO_RATE
    return values


def summary_notes(st: VariantStats, exclusion_rule: str | None) -> str:
    """What a reader needs beside the numbers: exclusions, extra runs, the quality gate."""
    notes = []
    if st.excluded:
        notes.append(
            f'{st.excluded} excluded under the rule "{exclusion_rule or "not stated"}"'
            f" ({'; '.join(st.exclusions)})"
        )
    if st.pre_amendment:
        notes.append(
            f"{st.pre_amendment} measured before an amendment of the protocol: kept "
            "out of the statistics"
        )
    if st.failed or st.interrupted:
        notes.append(
            f"{st.failed} failed, {st.interrupted} interrupted: counted, never in the median"
        )
    extra = sorted(k for k in st.by_repetition if k > RUN_COLUMNS)
    if extra:
        notes.append(
            f"repetitions {', '.join(map(str, extra))} are in the median but not in "
            f"run_1_s..run_{RUN_COLUMNS}_s"
        )
    unplaced = st.successes - len(st.by_repetition)
    if len(st.by_seed) > 1:
        notes.append(seeds_note(st.by_seed))
    elif unplaced > 0:
        notes.append(
            f"{unplaced} success(es) share a repetition number with another: in the "
            "median, not in the run columns"
        )
    if st.mixed_hardware:
        notes.append(machines_note(st.machines))
    notes += [
        f"{r.text()}: its runs are on the corpus measured before "
        f"({', '.join(c[:12] for c in r.seen(st.corpora))}), not the new, independent "
        "evaluation that change requires"
        for r in st.relaxations
        if r.seen(st.corpora)
    ]
    if st.loaded:
        notes.append(loaded_note(st))
    if st.served is not None and st.served.lagged:
        notes.append(serving.lagged_note(st.served))
    if st.gate_note:
        notes.append(st.gate_note)
    by_reason: dict[str, list[str]] = {}
    for col, reason in st.peak_reasons.items():
        by_reason.setdefault(reason, []).append(col)
    notes += [f"{', '.join(cols)} empty: {reason}" for reason, cols in by_reason.items()]
    if st.untrusted:
        notes.insert(
            0,
            f"INTEGRITY: {st.untrusted} attempt row(s) with integrity findings "
            "(`iteralab validate` names them): these numbers cannot be trusted until "
            "the evidence is restored",
        )
    return "; ".join(notes)


def loaded_note(st: VariantStats) -> str:
    """The successes whose window was taken under load: their numbers stand as measured,
    and a reader knows what may have stretched them."""
    return (
        f"UNDER LOAD: {len(st.loaded)} of {st.successes} success(es) measured while other "
        f"processes took more than {LOADED_SHARE:.0%} of the machine's CPU "
        f"({', '.join(st.loaded)}; Attempts others_cpu_share): median_s and what rests on "
        "it are as measured, possibly stretched by that load; rerun on a quiet machine to "
        "compare"
    )


def seeds_note(by_seed: dict[int, list[float]]) -> str:
    """Each seed's median kept apart (R17): the variant's median_s is over every seed, and
    run_k_s shows repetition k's first success, whichever its seed."""
    parts = [
        f"seed {seed}: median {stats.median(runs):.3f} s over {len(runs)} run(s)"
        for seed, runs in by_seed.items()
    ]
    return (
        f"per seed: {'; '.join(parts)}; median_s is over all {len(by_seed)} seeds "
        "and run_k_s shows repetition k's first success, whichever its seed"
    )


def machine_label(machine: tuple[str | None, str | None]) -> str:
    """``b200-box (NVIDIA B200)``: a host and its GPU model as the Manifest recorded them."""
    host, gpu = machine
    return (host or "host not recorded") + (f" ({gpu})" if gpu else "")


def machines_note(machines: dict[tuple[str | None, str | None], list[float]]) -> str:
    """Each machine's runs kept apart: median_s pools them all under the one rule (R14), so
    it is no one machine's figure."""
    parts = [
        f"{machine_label(m)}: median {stats.median(runs):.3f} s over {len(runs)} run(s)"
        for m, runs in machines.items()
    ]
    return (
        f"runs from {len(machines)} machines pooled: {'; '.join(parts)}; median_s "
        "mixes their hardware and is no one machine's figure"
    )


def summary_rows(all_stats: Sequence[VariantStats], data: WorkbookData) -> list[dict[str, Any]]:
    """The Summary sheet's rows, one per variant, from Excel row 2 on."""
    r = Ranges()
    rule = data.forms["Protocol"].get("exclusion_rule")
    return [
        summary_row(st, row, r, summary_notes(st, rule))
        for row, st in enumerate(all_stats, start=2)
    ]
