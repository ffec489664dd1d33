"""The workbook's Memory sheet: the planner's estimate beside the observed peaks (R18).

An estimate never replaces measuring: each variant's row shows both, their
ratio, and a flag when an observation exceeds the estimate. Under a generation
protocol the KV cache is shown apart too: the planner's term (at the variant's
batch, max_length + max_new_tokens tokens) beside the largest measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolkit import layout
from toolkit.errors import ModelError, UsageError
from toolkit.planner.memory import Estimate, estimate, shape_from_config
from toolkit.planner.models import resolve_model_path
from toolkit.report.generation import NOT_GENERATION, is_generation
from toolkit.workbook.model import WorkbookData


def memory_rows_of(data: WorkbookData, base_dir: Path) -> list[dict[str, Any]]:
    """The Memory sheet's rows for a workbook's variants and attempts."""
    generation = is_generation(data)
    new_tokens = data.forms["Protocol"].get("max_new_tokens")
    estimates: dict[str, Estimate | str] = {}
    for v in data.tables["Variants"]:
        vid = str(v.get("variant_id"))
        if not generation:
            estimates[vid] = variant_estimate(v, base_dir)
        elif isinstance(new_tokens, int) and isinstance(v.get("max_length"), int):
            # A generation's sequences grow past the prompt budget by max_new_tokens: the KV
            # cache and activations are estimated at max_length + max_new_tokens.
            estimates[vid] = variant_estimate(
                {**v, "max_length": v["max_length"] + new_tokens}, base_dir
            )
        else:
            estimates[vid] = (
                "a generation is estimated at max_length + the Protocol's "
                "max_new_tokens: both must be whole numbers"
            )
    columns = [col for _, col in (*OBSERVED, KV_CACHE)] if generation else None
    return memory_rows(
        estimates, peak_observations(data.tables["Attempts"], columns), generation=generation
    )


OBSERVED = (
    ("observed_allocated_bytes", "mem_allocated_peak_bytes"),
    ("observed_reserved_bytes", "mem_reserved_peak_bytes"),
    ("observed_host_rss_bytes", "host_rss_peak_bytes"),
)
#: A generation's KV cache: the Memory column and the Attempts column it is the largest of.
KV_CACHE = ("observed_kv_cache_bytes", "kv_cache_peak_bytes")


def peak_observations(
    attempts: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per variant, the largest observed memory peaks over its attempts (Attempts rows).

    ``columns``: the Attempts columns to read, OBSERVED's by default. Excluded
    attempts are left out, as in every other statistic (R14). A peak that no
    attempt measured stays empty, with the attempts' reasons.
    """
    columns = columns or [col for _, col in OBSERVED]
    out: dict[str, dict[str, Any]] = {}
    for row in attempts:
        if row.get("excluded") == "yes":
            continue
        seen = out.setdefault(str(row["variant_id"]), {})
        for col in columns:
            value = row.get(col)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                seen[col] = max(int(value), seen.get(col) or 0)
            elif seen.get(col) is None:
                seen[col] = None
                reasons = seen.setdefault(f"{col}_reason", [])
                reason = row.get(f"{col}_reason") or "not measured"
                if reason not in reasons:
                    reasons.append(reason)
    for seen in out.values():
        for col in columns:
            reasons = seen.pop(f"{col}_reason", [])
            if seen.get(col) is None:
                seen[f"{col}_reason"] = "; ".join(reasons)
    return out


def memory_rows(
    estimates_by_variant: Mapping[str, Estimate | str],
    observed_by_variant: Mapping[str, Mapping[str, Any]],
    generation: bool = False,
) -> list[dict[str, Any]]:
    """Rows of the Memory sheet: estimate beside observation, per variant (R18).

    ``estimates_by_variant`` maps a variant to its Estimate, or to the reason
    there is none; ``observed_by_variant`` maps it to its peaks under the
    Attempts column names (see ``peak_observations``). The ratio is observed
    allocated / estimated tensors (like for like: neither counts the margin);
    the flag says when an observation exceeds the estimate. ``generation`` adds
    the KV cache: the estimate's term beside ``kv_cache_peak_bytes``; without it
    both KV cells are empty with :data:`NOT_GENERATION`.
    """
    observed = (*OBSERVED, KV_CACHE) if generation else OBSERVED
    order = list(dict.fromkeys([*estimates_by_variant, *observed_by_variant]))
    rows = []
    for vid in order:
        est = estimates_by_variant.get(vid, "no estimate for this variant")
        obs = observed_by_variant.get(vid)
        row: dict[str, Any] = {"variant_id": vid}
        if isinstance(est, Estimate):
            row.update(
                estimate_bytes=est.total,
                estimate_bytes_reason=None,
                estimate_tensors_bytes=est.subtotal,
                estimate_tensors_bytes_reason=None,
                estimate_basis=est.basis(),
                estimate_kv_cache_bytes=est.term("kv_cache").bytes,
                estimate_kv_cache_bytes_reason=None,
            )
        else:
            row.update(
                estimate_bytes=None,
                estimate_bytes_reason=est,
                estimate_tensors_bytes=None,
                estimate_tensors_bytes_reason=est,
                estimate_basis=None,
                estimate_kv_cache_bytes=None,
                estimate_kv_cache_bytes_reason=est,
            )
        if not generation:
            row.update(
                estimate_kv_cache_bytes=None,
                estimate_kv_cache_bytes_reason=NOT_GENERATION,
                observed_kv_cache_bytes=None,
                observed_kv_cache_bytes_reason=NOT_GENERATION,
            )
        for out_col, col in observed:
            if obs is None:
                row[out_col], row[f"{out_col}_reason"] = None, "no attempt recorded"
            else:
                value = obs.get(col)
                row[out_col] = value
                row[f"{out_col}_reason"] = (
                    None if value is not None else (obs.get(f"{col}_reason") or "not measured")
                )
        _compare(row, est)
        rows.append({name: row.get(name) for name in layout.MEMORY.names})
    return rows


def _compare(row: dict[str, Any], est: Estimate | str) -> None:
    allocated, reserved = row["observed_allocated_bytes"], row["observed_reserved_bytes"]
    row["observed_over_estimate"] = None
    if not isinstance(est, Estimate):
        row["observed_over_estimate_reason"] = f"no estimate: {est}"
        row["flag"] = "not compared: no estimate"
        return
    over = []
    if allocated is None:
        row["observed_over_estimate_reason"] = row["observed_allocated_bytes_reason"]
    else:
        row["observed_over_estimate"] = round(allocated / est.subtotal, 4)
        row["observed_over_estimate_reason"] = None
        if allocated > est.subtotal:
            over.append(f"allocated {allocated:,} > estimated tensors {est.subtotal:,}")
        if reserved is not None and reserved > est.total:
            over.append(f"reserved {reserved:,} > estimated total {est.total:,}")
    kv, kv_estimate = row.get("observed_kv_cache_bytes"), row.get("estimate_kv_cache_bytes")
    kv_compared = kv is not None and kv_estimate is not None
    if kv is not None and kv_estimate is not None and kv > kv_estimate:
        over.append(f"KV cache {kv:,} > estimated KV cache {kv_estimate:,}")
    if over:
        row["flag"] = "OVER ESTIMATE: " + "; ".join(over)
    elif allocated is None:
        row["flag"] = (
            "KV cache within estimate; " if kv_compared else "not compared: "
        ) + "device memory not measured"
    else:
        row["flag"] = "within estimate"


def variant_estimate(variant: Mapping[str, Any], base_dir: Path) -> Estimate | str:
    """The inference estimate of a Variants row, or the reason there is none.

    Reads ``model_path`` (resolved as the runner resolves it:
    :func:`toolkit.planner.models.resolve_model_path`) at the
    variant's precision, batch size and max_length (an upper bound under
    dynamic padding); ``dynamic-int8`` quantizes the linear weights to int8.
    """
    model_path = str(variant.get("model_path") or "")
    try:
        folder, hub_id = resolve_model_path(model_path, base_dir)
    except ModelError as exc:
        return f"{exc.message}: estimate not computed"
    if folder is None:
        return f"model_path {model_path!r} is a hub id: estimate needs a local config.json"
    if not (folder / "config.json").is_file():
        return f"no local config.json for model_path {model_path!r}: estimate not computed"
    try:
        shape = shape_from_config(folder)
        quantized = variant.get("quantization") == "dynamic-int8"
        return estimate(
            shape,
            workload="inference",
            precision="int8" if quantized else str(variant["precision"]),
            compute=str(variant["precision"]),
            seq_len=int(variant["max_length"]),
            batch=int(variant["batch_size"]),
            attention=str(variant.get("attention_backend") or "sdpa"),
        )
    except (UsageError, KeyError, TypeError, ValueError) as exc:
        return f"estimate not computed: {exc}"
