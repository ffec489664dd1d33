"""The GPU catalog: one row per card kind, vendor figures with their source (R31-R34).

Reads ``tariffs/gpus.csv``: memory, bandwidth, precision support (``fp8``,
``int8``, ``fp4``), interconnect, the PCIe link, and the names
``torch.cuda.get_device_name()`` gives such a card (:func:`identify` checks a
device against its row). A model must fit the memory a card reports, not its
label: the optional ``usable_mib`` column holds the total a device reports
(``nvidia-smi --query-gpu=memory.total``) with its source in ``usable_source``;
without it, the label less :data:`DRIVER_RESERVE_PCT` is taken
(:attr:`Gpu.usable_bytes`). What a card costs is the price catalog's business
(:mod:`toolkit.planner.offers`); how a model is laid out over cards is
:mod:`toolkit.planner.splits`'s. Stdlib only.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from toolkit.errors import CatalogError
from toolkit.plumbing.shipped import GPU_CATALOG, shipped

#: Card labels say GB for binary sizes: a "24 GB" card holds 24 GiB.
GB_LABEL = 2**30
#: Share of a card's memory the driver may keep for itself: torch reports that much less.
DRIVER_RESERVE_PCT = 8
#: MiB, the unit nvidia-smi reports memory.total in.
MIB = 2**20
#: A device may report a little more than its label (rounding of the label).
LABEL_ROUNDING_PCT = 2

COLUMNS = (
    "slug",
    "name",
    "device_names",
    "vendor",
    "vram_gb",
    "memory_type",
    "memory_bandwidth_gbps",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "fp8",
    "int8",
    "fp4",
    "interconnect",
    "interconnect_gbps",
    "pcie",
    "source",
    "source_date",
    "checked",
    "notes",
)
REQUIRED = (
    "slug",
    "name",
    "vram_gb",
    "memory_type",
    "memory_bandwidth_gbps",
    "interconnect",
    "source",
    "source_date",
)
NUMBERS = (
    "vram_gb",
    "memory_bandwidth_gbps",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "interconnect_gbps",
)
#: PCIe x16 bandwidth per direction, GB/s, by generation (nominal).
PCIE_X16_GBPS = {3: Decimal(16), 4: Decimal(32), 5: Decimal(64), 6: Decimal(128)}


@dataclass(frozen=True, kw_only=True)
class Gpu:
    """One catalog row; a number the vendor does not state is None."""

    slug: str
    name: str
    vram_gb: Decimal
    memory_type: str
    bandwidth_gbps: Decimal
    interconnect: str
    interconnect_gbps: Decimal | None
    bf16_dense_tflops: Decimal | None
    fp8_dense_tflops: Decimal | None
    fp8: str
    int8: str
    fp4: str
    source: str
    source_date: str
    notes: str
    device_names: tuple[str, ...] = ()
    pcie: str = ""
    usable_mib: int | None = None  # None: gpus.csv has no reported total for the card
    usable_source: str = ""

    @property
    def capacity_bytes(self) -> int:
        """Memory of one card in bytes as labelled (the label's GB are GiB)."""
        return int(self.vram_gb * GB_LABEL)

    @property
    def usable_bytes(self) -> int:
        """What a model may fill: the total the device reports, else the label less the
        driver's reserve (an H100 labelled 80 GB reports 81,559 MiB, an L40S with ECC on
        46,068 MiB of its 48)."""
        if self.usable_mib is not None:
            return self.usable_mib * MIB
        return self.capacity_bytes * (100 - DRIVER_RESERVE_PCT) // 100

    @property
    def usable_basis(self) -> str:
        """Which figure :attr:`usable_bytes` is, in words."""
        if self.usable_mib is not None:
            return f"{self.usable_mib:,} MiB reported total ({self.usable_source})"
        return (
            f"label less {DRIVER_RESERVE_PCT}% (no reported total in gpus.csv: driver "
            "reserve and ECC assumed)"
        )

    @property
    def pcie_only(self) -> bool:
        """True when cards of this kind talk to each other over PCIe only."""
        return self.interconnect.strip().lower() == "pcie only"

    @property
    def bridge_pairs_two(self) -> bool:
        """True when the card's NVLink is a bridge joining two cards only."""
        return "2 cards" in self.interconnect

    @property
    def pcie_generation(self) -> int | None:
        """The PCIe generation named in the ``pcie`` column (``PCIe Gen4 x16`` -> 4)."""
        found = re.search(r"gen\s*(\d)", self.pcie, re.IGNORECASE)
        return int(found.group(1)) if found else None

    @property
    def pcie_gbps(self) -> Decimal | None:
        """Bandwidth per direction of the card's PCIe x16 link, from its generation."""
        gen = self.pcie_generation
        return PCIE_X16_GBPS.get(gen) if gen is not None else None

    def lacks(self, precision: str) -> bool:
        """True when the catalog says the card has no native support for ``precision``.

        Only fp8 and int8 are flagged; fp32/bf16/fp16 run on every card of the
        catalog, and 4-bit weights (int4) are dequantized to the compute dtype
        in the kernels, which needs no 4-bit math. An empty flag counts as lacking.
        """
        flags = {"fp8": self.fp8, "int8": self.int8}
        return precision in flags and flags[precision].strip().lower() != "yes"


def load_catalog(path: Path | None = None) -> list[Gpu]:
    """Read the GPU catalog (default: the shipped one); CatalogError names the line and
    column of a bad cell."""
    path = path or shipped(GPU_CATALOG)
    if not path.is_file():
        raise CatalogError(
            f"{path}: GPU catalog not found",
            hint="pass --catalog PATH (the repository ships tariffs/gpus.csv)",
        )
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CatalogError(
                f"{path}, line 1: missing columns {', '.join(missing)}",
                hint=f"the header is {','.join(COLUMNS)}",
            )
        gpus = [_gpu(path, reader.line_num, row) for row in reader]
    slugs = [g.slug for g in gpus]
    dup = sorted({s for s in slugs if slugs.count(s) > 1})
    if dup:
        raise CatalogError(f"{path}: slug {dup[0]} appears twice", hint="keep one row per card")
    return gpus


def _gpu(path: Path, line: int, row: Mapping[str, str]) -> Gpu:
    for col in REQUIRED:
        if not (row.get(col) or "").strip():
            raise CatalogError(
                f"{path}, line {line}, column {col}: empty",
                hint="every card needs this value, with its source",
            )
    nums: dict[str, Decimal | None] = {}
    for col in NUMBERS:
        text = (row.get(col) or "").strip()
        try:
            nums[col] = Decimal(text) if text else None
        except InvalidOperation:
            nums[col] = Decimal(-1)
        value = nums[col]
        if value is not None and (not value.is_finite() or value <= 0):
            raise CatalogError(
                f"{path}, line {line}, column {col}: {text!r} is not a positive number",
                hint="leave the cell empty (not 0) where the vendor "
                "states no figure, and say so in notes",
            )
    assert nums["vram_gb"] is not None and nums["memory_bandwidth_gbps"] is not None
    usable, usable_source = _usable(path, line, row)
    names = tuple(n.strip() for n in (row.get("device_names") or "").split(";") if n.strip())
    return Gpu(
        slug=row["slug"].strip(),
        name=row["name"].strip(),
        vram_gb=nums["vram_gb"],
        memory_type=row["memory_type"].strip(),
        bandwidth_gbps=nums["memory_bandwidth_gbps"],
        interconnect=row["interconnect"].strip(),
        interconnect_gbps=nums["interconnect_gbps"],
        bf16_dense_tflops=nums["bf16_dense_tflops"],
        fp8_dense_tflops=nums["fp8_dense_tflops"],
        fp8=row["fp8"].strip(),
        int8=row["int8"].strip(),
        fp4=row["fp4"].strip(),
        source=row["source"].strip(),
        source_date=row["source_date"].strip(),
        notes=(row.get("notes") or "").strip(),
        device_names=names,
        pcie=(row.get("pcie") or "").strip(),
        usable_mib=usable,
        usable_source=usable_source,
    )


def _usable(path: Path, line: int, row: Mapping[str, str]) -> tuple[int | None, str]:
    """The optional reported total in MiB and its source; both or neither."""
    text = (row.get("usable_mib") or "").strip()
    source = (row.get("usable_source") or "").strip()
    if not text:
        return None, source
    if not text.isdigit() or int(text) <= 0:
        raise CatalogError(
            f"{path}, line {line}, column usable_mib: {text!r} is not a whole number of MiB",
            hint="nvidia-smi's memory.total, e.g. 81559; leave "
            "it empty when no device report is at hand",
        )
    if not source:
        raise CatalogError(
            f"{path}, line {line}, column usable_source: empty",
            hint="say where the reported total was read (an nvidia-smi output)",
        )
    return int(text), source


def identify(
    slug: str,
    device_name: str,
    total_memory_bytes: int | None,
    catalog: Sequence[Gpu] | None = None,
) -> str | None:
    """None when the device is the card ``slug`` names, else one line saying why not.

    The device matches when ``device_name`` (as ``torch.cuda.get_device_name()``
    gives it) is one of the row's ``device_names`` and, when given, its total
    memory lies between the label less what the driver keeps
    (:data:`DRIVER_RESERVE_PCT`) and the label plus :data:`LABEL_ROUNDING_PCT`.
    The reason names what the slug expects and what is present.
    """
    cards = load_catalog() if catalog is None else catalog
    gpu = next((g for g in cards if g.slug == slug), None)
    if gpu is None:
        known = ", ".join(sorted(g.slug for g in cards))
        return f"the GPU catalog has no slug {slug!r} (known: {known})"
    present = f"{device_name!r}" + (
        f" with {_gib(total_memory_bytes)} GiB" if total_memory_bytes is not None else ""
    )
    if device_name.strip() not in gpu.device_names:
        expected = (
            " or ".join(repr(n) for n in gpu.device_names)
            or "no device name (the catalog's device_names is empty)"
        )
        return f"{slug} is {expected} with {gpu.vram_gb} GiB; the device is {present}"
    if total_memory_bytes is not None:
        cap = gpu.capacity_bytes
        low, high = cap * (100 - DRIVER_RESERVE_PCT) // 100, cap * (100 + LABEL_ROUNDING_PCT) // 100
        if not low <= total_memory_bytes <= high:
            return (
                f"{slug} is {device_name!r} with {gpu.vram_gb} GiB ({_gib(low)} to "
                f"{_gib(high)} GiB as reported, the driver keeping up to "
                f"{DRIVER_RESERVE_PCT}%); the device is {present}"
            )
    return None


def _gib(n: int) -> str:
    return f"{n / GB_LABEL:.1f}"
