"""Where a variant runs on a cluster: its label, and the Ray resource a node advertises for it.

A node started with ``iteralab worker start --label rtx-4090`` offers one unit of the
custom resource ``iteralab-label:rtx-4090``; an attempt of a variant labelled rtx-4090
asks for that unit, so a node runs one attempt at a time and only the attempts of its
label. A variant's label is its Variants ``label`` cell, else its ``gpu_slug`` when it
runs on cuda; a cpu variant names one. Pure functions: no Ray here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolkit.errors import UsageError

#: Prefix of the custom Ray resource that carries a label.
RESOURCE_PREFIX = "iteralab-label:"
#: A label: what a catalog slug looks like (rtx-4090, b200, cpu-a), nothing Ray could misread.
LABEL = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


def check_label(label: str, where: str) -> str:
    """``label`` when it is a valid label; UsageError naming ``where`` otherwise."""
    if not LABEL.fullmatch(label):
        raise UsageError(
            f"{where}: label {label!r} is not a label",
            hint="use lower-case letters, digits, '.', '_' or '-' (e.g. rtx-4090, "
            "b200, cpu-a), at most 63 characters",
        )
    return label


def resource(label: str) -> str:
    """The Ray resource name of ``label``."""
    return RESOURCE_PREFIX + label


def variant_label(variant: Mapping[str, Any]) -> str:
    """Where ``variant`` runs: its ``label``, else its ``gpu_slug`` on cuda.

    Raises UsageError for a variant that says neither.
    """
    vid = variant.get("variant_id")
    where = f"Variants row {vid}, column label"
    text = str(variant.get("label") or "").strip()
    if text:
        return check_label(text, where)
    slug = str(variant.get("gpu_slug") or "").strip()
    if variant.get("device") == "cuda" and slug:
        return check_label(slug, f"Variants row {vid}, column gpu_slug")
    raise UsageError(
        f"{where}: variant {vid} runs on {variant.get('device')} and names no "
        "label, so no node of the cluster is known to run it",
        hint="fill its label with the one a node advertises (`iteralab worker "
        "start --label cpu-a`), or give a cuda variant its gpu_slug; on a locked "
        "workbook record the edit with `iteralab amend --reason ...`",
    )


def offered(resources: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Labels the alive nodes offer, with how many nodes offer each, from their resources."""
    counts: dict[str, int] = {}
    for node in resources:
        for name, amount in node.items():
            if name.startswith(RESOURCE_PREFIX) and float(amount) >= 1:
                label = name[len(RESOURCE_PREFIX) :]
                counts[label] = counts.get(label, 0) + 1
    return counts


def missing(needed: Iterable[str], available: Mapping[str, int]) -> list[str]:
    """The labels of ``needed`` that no node offers, sorted."""
    return sorted(set(needed) - set(available))


def described(available: Mapping[str, int]) -> str:
    """``cpu-a (1 node), rtx-4090 (2 nodes)``, or ``none`` for a cluster without labels."""
    if not available:
        return "none"
    return ", ".join(
        f"{label} ({n} node{'s' if n != 1 else ''})" for label, n in sorted(available.items())
    )
