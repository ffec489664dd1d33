"""The GPU that was paid for is the GPU that was measured.

A variant declares the rented GPU by its catalog slug (Variants.gpu_slug); the
Manifest records the device each attempt really ran on (gpu_name,
gpu_memory_bytes). :func:`gpu_findings` names every Manifest row of a CUDA
variant whose device is not the declared card, by the catalog's device names
and memory (:func:`toolkit.planner.gpus.identify`). A slug the catalog does not
know cannot be checked and is left to the Tariffs lookup, which names it. A serving
variant (engine openai-http) is not checked here: its attempts ran on the endpoint's client,
and the endpoint describes itself in the Manifest's endpoint column.
"""

from __future__ import annotations

from toolkit import layout
from toolkit.findings import Finding
from toolkit.planner.gpus import Gpu, identify, load_catalog
from toolkit.plumbing import engines
from toolkit.workbook.model import WorkbookData


def device_mismatches(
    variants: list[dict[str, object]], device_name: str, total_memory_bytes: int | None
) -> list[str]:
    """One line per CUDA variant whose declared, catalogued GPU is not this device."""
    cards = load_catalog()
    known = {g.slug for g in cards}
    out = []
    for v in variants:
        slug = str(v.get("gpu_slug") or "").strip().lower()
        if v.get("device") == "cuda" and slug in known:
            reason = identify(slug, device_name, total_memory_bytes, cards)
            if reason is not None:
                out.append(f"{v.get('variant_id')}: {reason}")
    return out


def cpu_on_gpu_rental(data: WorkbookData, known: set[str]) -> list[Finding]:
    """A finding per cpu variant naming a catalogued GPU as its gpu_slug, or linked to a
    rental of one: its cost would be set against a card it never used (B1: the GPU priced is
    the GPU measured)."""
    rentals = {str(r.get("rental_id") or "").strip(): r for r in data.tables[layout.RENTALS.name]}
    found = []
    for i, v in enumerate(data.tables["Variants"]):
        rental = rentals.get(str(v.get("rental_id") or "").strip())
        slug = str((rental or {}).get("gpu_slug") or "").strip().lower()
        named = str(v.get("gpu_slug") or "").strip().lower()
        if v.get("device") == "cpu" and named in known:
            found.append(
                Finding(
                    "Variants",
                    data.excel_row("Variants", i),
                    "gpu_slug",
                    "gpu-identity",
                    f"variant {v.get('variant_id')} runs on the cpu but names gpu_slug "
                    f"{named}, a GPU of the catalog: it would be priced and reported as run on "
                    "that card; clear gpu_slug (empty on CPU), or name the priced CPU host",
                )
            )
        if v.get("device") == "cpu" and rental is not None and slug in known:
            found.append(
                Finding(
                    "Variants",
                    data.excel_row("Variants", i),
                    "rental_id",
                    "gpu-identity",
                    f"variant {v.get('variant_id')} runs on the cpu but is linked to rental "
                    f"{rental.get('rental_id')!r}, a {slug} GPU rental: link it to the rental of "
                    "the machine it ran on, or clear rental_id",
                )
            )
    return found


def gpu_findings(data: WorkbookData, catalog: list[Gpu] | None = None) -> list[Finding]:
    """A finding per Manifest row whose device is not its CUDA variant's declared GPU, and per
    cpu variant linked to a GPU rental."""
    variants = {str(v.get("variant_id")): v for v in data.tables["Variants"]}
    rows = data.tables[layout.MANIFEST.name]
    linked = any(v.get("rental_id") for v in variants.values())
    if not linked and not any(v.get("gpu_slug") for v in variants.values()):
        return []
    cards = load_catalog() if catalog is None else catalog
    known = {g.slug for g in cards}
    found = cpu_on_gpu_rental(data, known)
    for i, m in enumerate(rows):
        variant = variants.get(str(m.get("variant_id")), {})
        slug = str(variant.get("gpu_slug") or "").strip().lower()
        if variant.get("device") != "cuda" or slug not in known:
            continue
        if engines.engine_of(variant) == engines.OPENAI_HTTP:
            continue  # its Manifest's devices are its client's: the card serves elsewhere
        name, memory = m.get("gpu_name"), m.get("gpu_memory_bytes")
        if not isinstance(name, str) or not name.strip():
            continue  # the Manifest schema names a missing device on a CUDA run
        first = name.split(";")[0].strip()  # the device the attempt ran on: cuda:0
        reason = identify(slug, first, memory if isinstance(memory, int) else None, cards)
        if reason is not None:
            found.append(
                Finding(
                    layout.MANIFEST.name,
                    data.excel_row(layout.MANIFEST.name, i),
                    "gpu_name",
                    "gpu-identity",
                    f"variant {m.get('variant_id')} declares {slug}, priced as "
                    f"such, but ran on another device: {reason}; run it on the rented card, or "
                    "correct gpu_slug with `iteralab amend`",
                )
            )
    return found
