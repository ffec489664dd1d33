"""The model and workload the memory commands' options describe (``memory estimate``,
``gpus``): a Hugging Face config.json, or explicit sizes, checked for what is missing or
given twice, then estimated term by term (:mod:`toolkit.planner.memory`).

The options arrive by their parameter names (``hidden_size`` for ``--hidden-size``); the
messages name them as a user types them.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from toolkit.errors import UsageError
from toolkit.planner import memory
from toolkit.planner.need import Need

#: The options that size a model without its config.json.
EXPLICIT_SIZES = (
    "params",
    "layers",
    "hidden_size",
    "heads",
    "kv_heads",
    "head_dim",
    "vocab",
    "intermediate_size",
)


def estimate_from_options(opts: Mapping[str, Any]) -> memory.Estimate:
    """The Estimate of the model (:func:`shape_from_options`) and workload the memory
    commands' options describe."""
    return memory.estimate(
        shape_from_options(opts),
        workload=opts["workload"],
        precision=opts.get("precision"),
        seq_len=opts["seq_len"],
        batch=opts["batch"],
        compute=opts.get("compute_dtype"),
        kv_precision=opts.get("kv_precision"),
        attention=opts["attention"],
        lora_rank=opts["lora_rank"],
        checkpointing=bool(opts.get("grad_checkpointing")),
        allocator_pct=opts["allocator_margin"],
    )


def shape_from_options(opts: Mapping[str, Any]) -> memory.Shape:
    """The model a ``config`` (a config.json or its folder) or explicit sizes describe, never
    both; UsageError naming the options to give."""
    explicit = [k for k in EXPLICIT_SIZES if opts.get(k) is not None]
    if opts.get("config") is not None:
        if explicit:
            raise UsageError(
                f"--config and explicit sizes ({', '.join(explicit)}) together",
                hint="give either --config or the explicit sizes",
            )
        return memory.shape_from_config(opts["config"])
    missing = [
        f"--{k.replace('_', '-')}"
        for k in ("params", "layers", "hidden_size", "heads")
        if opts.get(k) is None
    ]
    if missing and opts.get("params") is not None:
        raise UsageError(
            f"--params sizes the weights only: give {', '.join(missing)} as well (the KV "
            "cache and activations are sized from them), or --config PATH",
            hint="e.g. --params 70B --layers 80 --hidden-size 8192 --heads 64, or "
            "--need-gb 160 for a memory figure you already have",
        )
    if missing:
        raise UsageError(
            f"no model: give --config PATH, or {', '.join(missing)}",
            hint="e.g. --config path/to/config.json",
        )
    return memory.shape_from_sizes(
        params=opts["params"],
        layers=opts["layers"],
        hidden=opts["hidden_size"],
        heads=opts["heads"],
        kv_heads=opts.get("kv_heads"),
        head_dim=opts.get("head_dim"),
        vocab=opts.get("vocab"),
        intermediate=opts.get("intermediate_size"),
        tied_embeddings=bool(opts.get("tied_embeddings")),
    )


def sized(
    need_gb: str | None, opts: Mapping[str, Any]
) -> tuple[memory.Estimate | None, Need | None]:
    """What `gpus` sizes the cards against: the model's estimate (:func:`estimate_from_options`),
    or a bare memory figure ``need_gb`` in GiB; UsageError for both, or a figure that is
    not a positive number."""
    if need_gb is None:
        return estimate_from_options(opts), None
    gb = _positive_gb(need_gb)
    if opts.get("config") is not None or opts.get("params") is not None:
        raise UsageError("--need-gb and a model together", hint="give one of them")
    return None, Need.from_gb(gb)


def _positive_gb(text: str) -> Decimal:
    return _positive(text, "--need-gb", "a positive number", "40")


def schedule_hours(text: str | None) -> Decimal | None:
    """``gpus --hours`` as a number of hours > 0; None when not given."""
    return None if text is None else _positive(text, "--hours", "a number of hours > 0", "24")


def _positive(text: str, option: str, what: str, example: str) -> Decimal:
    """``text`` as a finite number > 0 (surrounding spaces allowed); UsageError naming
    ``option`` otherwise."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal(0)
    if not value.is_finite() or value <= 0:
        raise UsageError(f"{option} {text!r} is not {what}", hint=f"e.g. {option} {example}")
    return value
