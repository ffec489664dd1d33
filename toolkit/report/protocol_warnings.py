"""Warnings on a protocol that is valid but cannot answer its own question.

Said by `validate` and `lock` (not findings: the protocol may be locked as it is, knowingly):
- repetitions too few for the separation rule (:mod:`toolkit.report.stats`) ever to tell two
  variants apart, with the least number that can;
- a subgroup so small that one changed prediction moves its metric by more than the
  tolerance: a single flip then fails the variant, whatever the configuration.
The quick demo's declared subset has both by design: one note says so instead
(:func:`protocol_notes`).
Stdlib only.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from toolkit.errors import CorpusError, ProtocolError
from toolkit.evidence import corpus
from toolkit.report import stats
from toolkit.workbook.model import WorkbookData

#: How the amendment `iteralab demo --quick` logs for its declared subset begins.
QUICK_DEMO = "quick demo: declared subset"


def protocol_warnings(data: WorkbookData, workbook: Path) -> list[str]:
    """Every warning on ``data``'s protocol (read from ``workbook``): repetitions that never
    separate a pair, subgroups a single changed prediction fails. None for the quick demo's
    declared subset, which is small by design: :func:`protocol_notes` says it once."""
    if quick_demo(data):
        return []
    form = data.forms["Protocol"]
    found = [repetitions_warning(form.get("repetitions"))]
    return [w for w in found if w] + subgroup_warnings(form, workbook)


def protocol_notes(data: WorkbookData, workbook: Path) -> list[str]:
    """What a protocol that declares itself a smoke run cannot answer, said once as a note
    rather than warned: the quick demo's repetitions too few to separate a pair, and its
    subgroups too small for the tolerance."""
    if not quick_demo(data):
        return []
    form = data.forms["Protocol"]
    repetitions = form.get("repetitions")
    few = repetitions if repetitions_warning(repetitions) is not None else None
    small = len(subgroup_warnings(form, workbook))
    return [quick_demo_note(few, small)] if few is not None or small else []


def quick_demo_note(repetitions: int | None, small_subgroups: int = 0) -> str:
    """What the quick demo cannot answer, in words: a known property of a smoke run, not a
    fault. ``repetitions``: too few to separate a pair (None: enough); ``small_subgroups``:
    how many subgroups one changed prediction fails."""
    said = []
    if repetitions is not None:
        said.append(
            f"runs {repetitions} repetitions, too few for any pair to separate "
            f"({stats.runs_needed()} or more can)"
        )
    if small_subgroups:
        said.append(
            f"leaves {small_subgroups} subgroup(s) of its subset too small for the tolerance "
            "(one changed prediction fails one)"
        )
    return (
        f"the quick demo {' and '.join(said)}: a smoke run, not the comparison; "
        "`iteralab demo` without --quick runs the whole sample"
    )


def quick_demo(data: WorkbookData) -> bool:
    """Whether the protocol in force is the quick demo's declared subset: the latest lock or
    amendment in Audit is the one `iteralab demo --quick` logs."""
    locks = [r for r in data.tables["Audit"] if r.get("action") in ("lock", "amend")]
    return bool(locks) and str(locks[-1].get("reason") or "").startswith(QUICK_DEMO)


def repetitions_warning(repetitions: Any) -> str | None:
    """Why ``repetitions`` runs per variant can never separate a pair, else None."""
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        return None  # the schema's finding
    needed = stats.runs_needed()
    if repetitions >= needed:
        return None
    chance = stats.chance_of_clean_split(repetitions, repetitions)
    return (
        f"repetitions {repetitions} can never separate two variants: {repetitions} runs "
        f"against {repetitions} fall wholly apart by chance {chance:.0%} of the time, above "
        f"the separation rule's {stats.SIGNIFICANCE:.0%}; lock {needed} or more repetitions "
        "to tell two variants apart"
    )


def subgroup_warnings(form: dict[str, Any], workbook: Path) -> list[str]:
    """A warning per subgroup (of a corpus field, the length stratum aside) whose one changed
    prediction moves its accuracy by more than the tolerance; [] when the corpus or the
    Protocol does not read (their findings say why)."""
    tolerance, path = form.get("tolerance"), form.get("corpus_path")
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or tolerance <= 0:
        return []
    if not isinstance(path, str) or not path.strip():
        return []
    try:
        names = [n for n in corpus.parse_subgroups(form.get("subgroups")) if n != corpus.STRATUM]
        items = corpus.read_corpus(workbook.parent / path.strip())
    except (ProtocolError, CorpusError, OSError):
        return []
    warnings = []
    for name in names:
        sizes = Counter(i.label if name == "label" else i.fields.get(name) for i in items)
        for value, size in sorted(sizes.items(), key=lambda kv: (kv[1], str(kv[0]))):
            if value is not None and 1 / size > tolerance:
                warnings.append(too_small(f"{name}={value}", size, float(tolerance)))
    return warnings


def too_small(key: str, size: int, tolerance: float) -> str:
    """The words for a subgroup of ``size`` items too small for ``tolerance``."""
    return (
        f"subgroup {key} holds {size} item(s): one changed prediction moves its accuracy by "
        f"{1 / size:.4f}, more than the tolerance {tolerance:.4f}, so a single flip fails it; "
        "enlarge the subgroup, merge it, or leave it out of subgroups before you lock"
    )
