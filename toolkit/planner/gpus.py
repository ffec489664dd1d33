"""GPU catalog and card choice for a memory need: VRAM first, then bandwidth (R31-R34).

Reads ``tariffs/gpus.csv`` (vendor figures, each row with its source and date)
and, where known, the flat-rate prices of ``tariffs/tarifs-forfaits.csv``. For a
need (an Estimate, or a number of GB) it says which cards hold it on one card,
how many cards the others would take (warning when they only talk over PCIe),
the shortfall of one card, and the bandwidth-bound ceiling on generated tokens
per second: an upper bound from memory bandwidth, never a measurement. Stdlib only.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from toolkit.errors import CatalogError
from toolkit.money import tariffs
from toolkit.money.tariffs import rules
from toolkit.planner.memory import FRAGMENTATION_PCT, RUNTIME_BYTES, Estimate
from toolkit.plumbing.shipped import GPU_CATALOG, shipped

#: Card labels say GB for binary sizes: a "24 GB" card holds 24 GiB.
GB_LABEL = 2**30
MAX_CARDS = 8
CEILING_NOTE = ("decode tok/s is an upper bound from memory bandwidth alone (weights plus the "
                "KV cache read once per decoding step, at the full context), not a measurement")

COLUMNS = ("slug", "name", "vendor", "vram_gb", "memory_type", "memory_bandwidth_gbps",
           "bf16_dense_tflops", "fp8_dense_tflops", "fp8", "int8", "fp4", "interconnect",
           "interconnect_gbps", "pcie", "source", "source_date", "checked", "notes")
REQUIRED = ("slug", "name", "vram_gb", "memory_type", "memory_bandwidth_gbps", "interconnect",
            "source", "source_date")
NUMBERS = ("vram_gb", "memory_bandwidth_gbps", "bf16_dense_tflops", "fp8_dense_tflops",
           "interconnect_gbps")
PRICE_COLUMNS = ("catalog_date", "gpu_slug", "gpu_name", "cards_per_lot", "plan_days",
                 "price_per_lot_usd", "source")


@dataclass(frozen=True)
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

    @property
    def capacity_bytes(self) -> int:
        """Memory of one card in bytes (the label's GB are GiB)."""
        return int(self.vram_gb * GB_LABEL)

    @property
    def pcie_only(self) -> bool:
        """True when cards of this kind talk to each other over PCIe only."""
        return self.interconnect.strip().lower() == "pcie only"


def load_catalog(path: Path | None = None) -> list[Gpu]:
    """Read the GPU catalog (default: the shipped one); CatalogError names the line and
    column of a bad cell."""
    path = path or shipped(GPU_CATALOG)
    if not path.is_file():
        raise CatalogError(f"{path}: GPU catalog not found",
                           hint="pass --catalog PATH (the repository ships tariffs/gpus.csv)")
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CatalogError(f"{path}, line 1: missing columns {', '.join(missing)}",
                               hint=f"the header is {','.join(COLUMNS)}")
        gpus = [_gpu(path, reader.line_num, row) for row in reader]
    slugs = [g.slug for g in gpus]
    dup = sorted({s for s in slugs if slugs.count(s) > 1})
    if dup:
        raise CatalogError(f"{path}: slug {dup[0]} appears twice", hint="keep one row per card")
    return gpus


def _gpu(path: Path, line: int, row: Mapping[str, str]) -> Gpu:
    for col in REQUIRED:
        if not (row.get(col) or "").strip():
            raise CatalogError(f"{path}, line {line}, column {col}: empty",
                               hint="every card needs this value, with its source")
    nums: dict[str, Decimal | None] = {}
    for col in NUMBERS:
        text = (row.get(col) or "").strip()
        try:
            nums[col] = Decimal(text) if text else None
        except InvalidOperation:
            nums[col] = Decimal(-1)
        value = nums[col]
        if value is not None and (not value.is_finite() or value <= 0):
            raise CatalogError(f"{path}, line {line}, column {col}: {text!r} is not a positive "
                               "number", hint="leave the cell empty (not 0) where the vendor "
                               "states no figure, and say so in notes")
    assert nums["vram_gb"] is not None and nums["memory_bandwidth_gbps"] is not None
    return Gpu(row["slug"].strip(), row["name"].strip(), nums["vram_gb"],
               row["memory_type"].strip(), nums["memory_bandwidth_gbps"],
               row["interconnect"].strip(), nums["interconnect_gbps"],
               nums["bf16_dense_tflops"], nums["fp8_dense_tflops"], row["fp8"].strip(),
               row["int8"].strip(), row["fp4"].strip(), row["source"].strip(),
               row["source_date"].strip(), (row.get("notes") or "").strip())


@dataclass(frozen=True)
class Price:
    """The flat price of one lot for a plan, from the tariff catalog."""

    cards_per_lot: int
    price_per_lot_usd: Decimal
    catalog_date: str


def load_prices(path: Path | None = None, plan_days: int = 7) -> tuple[dict[str, Price], str]:
    """Latest price per GPU slug for a plan, and the reason when there are none.

    The CSV is read by the one tariff reader (:func:`toolkit.money.tariffs.load_catalog`;
    default: the shipped catalog). A missing tariff file is not an error: every card
    then has no price.
    """
    if path is not None and not path.is_file():
        return {}, f"no price in catalog ({path.name} not found)"
    prices: dict[str, Price] = {}
    for plan in tariffs.load_catalog(path).plans:
        if plan.plan_days != plan_days:
            continue
        known = prices.get(plan.gpu_slug)
        if known is None or plan.catalog_date >= known.catalog_date:
            prices[plan.gpu_slug] = Price(plan.cards_per_lot, plan.price_per_lot_usd,
                                          plan.catalog_date)
    return prices, "no price in catalog"


@dataclass(frozen=True)
class Need:
    """What must fit: the tensors (split across cards) and a per-card runtime."""

    tensors_bytes: int
    runtime_bytes: int
    weights_bytes: int | None = None  # read per decoding step
    kv_per_sequence: int | None = None
    batch: int = 1
    ceiling_reason: str | None = None

    def per_card(self, cards: int) -> int:
        """Bytes one card must hold when the tensors are split evenly over ``cards``."""
        return -(-self.tensors_bytes // cards) + self.runtime_bytes

    @classmethod
    def from_estimate(cls, est: Estimate) -> Need:
        """The need of an estimate: tensors plus fragmentation, and a runtime per card."""
        tensors = est.subtotal + -(-est.subtotal * FRAGMENTATION_PCT // 100)
        reason = None
        if est.workload != "inference":
            reason = f"{est.workload} workload: no decoding"
        elif not est.shape.generative:
            reason = "encoder: not generative, no decoding"
        return cls(tensors, RUNTIME_BYTES, est.term("weights").bytes, est.kv_per_sequence,
                   est.batch, reason)

    @classmethod
    def from_gb(cls, gb: Decimal) -> Need:
        """A total need given in the GB of the card labels (GiB)."""
        return cls(int(gb * GB_LABEL), 0, ceiling_reason="no model sizes (--need-gb)")


@dataclass(frozen=True)
class Fit:
    """How one card kind meets a need."""

    gpu: Gpu
    cards: int | None  # None: more than MAX_CARDS
    per_card_bytes: int
    shortfall_bytes: int  # of one card; 0 when it fits
    warning: str
    tokens_batch1: int | None
    tokens_batch: int | None
    ceiling_reason: str | None
    lots: int | None
    price: Price | None
    price_reason: str | None

    @property
    def budget_usd(self) -> Decimal | None:
        """price of one lot x lots (R21), or None without a price."""
        return self.price.price_per_lot_usd * self.lots if self.price and self.lots else None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: bytes as integers, money as text with cents."""
        g = self.gpu
        return {
            "slug": g.slug, "name": g.name, "vram_gb": str(g.vram_gb),
            "capacity_bytes": g.capacity_bytes, "memory_type": g.memory_type,
            "memory_bandwidth_gbps": str(g.bandwidth_gbps), "interconnect": g.interconnect,
            "fits_single_card": self.cards == 1, "cards": self.cards,
            "per_card_bytes": self.per_card_bytes, "single_card_shortfall_bytes":
            self.shortfall_bytes, "warning": self.warning or None,
            "decode_tokens_per_s_batch1": self.tokens_batch1,
            "decode_tokens_per_s_batch": self.tokens_batch,
            "decode_ceiling_reason": self.ceiling_reason,
            "cards_per_lot": self.price.cards_per_lot if self.price else None,
            "lots": self.lots, "price_per_lot_usd": usd(self.price.price_per_lot_usd)
            if self.price else None, "budget_usd": usd(self.budget_usd)
            if self.budget_usd is not None else None, "price_reason": self.price_reason,
        }


def usd(amount: Decimal) -> str:
    """An amount rounded half-up to the cent, for display."""
    return str(rules.to_cent(amount))


def rank(need: Need, catalog: Sequence[Gpu], prices: Mapping[str, Price],
         price_reason: str = "no price in catalog") -> list[Fit]:
    """Every card, ordered: one card holds the need (by bandwidth, fastest first), then
    the fewest cards that do, then those that would need more than MAX_CARDS."""
    fits = [_fit(need, g, prices, price_reason) for g in catalog]
    return sorted(fits, key=lambda f: (f.cards or MAX_CARDS + 1, -f.gpu.bandwidth_gbps,
                                       f.gpu.slug))


def _fit(need: Need, g: Gpu, prices: Mapping[str, Price], price_reason: str) -> Fit:
    cap = g.capacity_bytes
    cards = next((n for n in range(1, MAX_CARDS + 1) if need.per_card(n) <= cap), None)
    warning = ""
    if cards is None:
        warning = f"does not fit in {MAX_CARDS} cards"
    elif cards > 1 and g.pcie_only:
        warning = f"{cards} cards over PCIe only: splitting one model across them is slow (R33)"
    elif cards > 2 and "2 cards" in g.interconnect:
        warning = f"{cards} cards: the NVLink bridge pairs two, the rest goes over PCIe"
    t1 = tb = None
    reason = need.ceiling_reason
    if reason is None and cards is None:
        reason = "does not fit"
    if reason is None and need.weights_bytes is not None and need.kv_per_sequence is not None:
        bw = int(g.bandwidth_gbps * 10**9) * (cards or 1)
        t1 = bw // (need.weights_bytes + need.kv_per_sequence)
        tb = need.batch * bw // (need.weights_bytes + need.batch * need.kv_per_sequence)
    price = prices.get(g.slug)
    lots = -(-cards // price.cards_per_lot) if price and cards else None
    return Fit(g, cards, need.per_card(cards or 1), max(0, need.per_card(1) - cap), warning,
               t1, tb, reason, lots, price, None if price else price_reason)
