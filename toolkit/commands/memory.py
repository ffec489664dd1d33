"""VRAM planner commands: ``memory estimate`` and ``gpus``."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import click

PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
WORKLOADS = ("inference", "lora", "qlora", "full")
USAGES = ("endpoint", "batch", "checkpointed", "unresumable")


class ParamCount(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.2
    """A parameter count as people write it: 8030261248, 8e9, 8B, 7.5B, 70b, 125M, 1.2T.

    K, M, B (or G) and T are thousands, millions, billions and trillions, in
    either case. The count is exact (decimal arithmetic, no float) and must be a
    positive whole number.
    """

    name = "COUNT"
    SUFFIXES = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
    #: Larger counts are typing errors, and would only build a huge integer.
    LIMIT = 10**16
    EXAMPLES = "e.g. 8030261248, 8e9, 8B, 7.5B, 70b or 125M"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number, text = Decimal(value), str(value)
        else:
            text = str(value).strip()
            scale = self.SUFFIXES.get(text[-1:].lower(), 1)
            digits = text[:-1].strip() if scale != 1 else text
            try:
                number = Decimal(digits) * scale if digits else Decimal("NaN")
            except InvalidOperation:
                number = Decimal("NaN")
            if not number.is_finite():
                self.fail(f"{text!r} is not a number of parameters ({self.EXAMPLES})", param, ctx)
        if number < 1:
            self.fail(f"{text!r} is not a positive number of parameters", param, ctx)
        if number > self.LIMIT:
            self.fail(f"{text!r} is more than {self.LIMIT:,} parameters", param, ctx)
        if number != number.to_integral_value():
            self.fail(
                f"{text!r} is {number.normalize():f} parameters, not a whole number", param, ctx
            )
        return int(number)


PARAM_COUNT = ParamCount()


def _defaulted(
    name: str, kind: click.ParamType[Any], default: object, help: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An option whose help shows its default."""
    return click.option(name, type=kind, default=default, show_default=True, help=help)


_MODEL_OPTIONS = (
    click.option(
        "--config",
        "config",
        type=click.Path(path_type=Path),
        help="Hugging Face config.json (or its folder) of the model.",
    ),
    click.option(
        "--params",
        type=PARAM_COUNT,
        help="Explicit sizes instead of --config: total parameters (8030261248, "
        "8e9, 8B, 7.5B, 125M), given with --layers, --hidden-size and --heads (the KV cache "
        "and activations are sized from them); --need-gb alone takes a memory figure.",
    ),
    click.option("--layers", type=click.IntRange(min=1), help="Explicit: layers."),
    click.option("--hidden-size", type=click.IntRange(min=1), help="Explicit: hidden size."),
    click.option("--heads", type=click.IntRange(min=1), help="Explicit: attention heads."),
    click.option(
        "--kv-heads",
        type=click.IntRange(min=1),
        help="Explicit: key/value heads (grouped-query attention); default --heads.",
    ),
    click.option(
        "--head-dim",
        type=click.IntRange(min=1),
        help="Explicit: head dimension; default hidden size / heads.",
    ),
    click.option("--vocab", type=click.IntRange(min=1), help="Explicit: vocabulary size."),
    click.option(
        "--intermediate-size",
        type=click.IntRange(min=1),
        help="Explicit: MLP width (gated); default 4 x hidden size.",
    ),
    click.option(
        "--tied-embeddings", is_flag=True, help="Explicit: lm_head shares the embedding matrix."
    ),
    click.option(
        "--precision",
        type=click.Choice(PRECISIONS),
        help="Weight storage. [default: bf16; int4 for qlora]",
    ),
    _defaulted(
        "--workload", click.Choice(WORKLOADS), "inference", "full = full fine-tuning with AdamW."
    ),
    _defaulted(
        "--seq-len",
        click.IntRange(min=1),
        2048,
        "Tokens per sequence (the context held in the KV cache).",
    ),
    _defaulted("--batch", click.IntRange(min=1), 1, "Sequences processed together."),
    click.option(
        "--compute-dtype",
        type=click.Choice(("fp32", "bf16", "fp16")),
        help="Activations and unquantized weights. [default: the precision, or "
        "bf16 for a quantized one]",
    ),
    click.option(
        "--kv-precision",
        type=click.Choice(("fp32", "bf16", "fp16", "fp8", "int8")),
        help="KV cache storage. [default: the compute dtype]",
    ),
    _defaulted(
        "--attention",
        click.Choice(("sdpa", "eager")),
        "sdpa",
        "eager materializes the attention scores.",
    ),
    _defaulted(
        "--lora-rank",
        click.IntRange(min=1),
        16,
        "LoRA/QLoRA rank; adapters on every linear layer of the blocks.",
    ),
    click.option(
        "--grad-checkpointing",
        is_flag=True,
        help="Training: keep only each layer's input, recompute the rest.",
    ),
    _defaulted(
        "--allocator-margin",
        click.IntRange(0, 100),
        10,
        "Allocator fragmentation margin, percent of the tensors.",
    ),
)


def _model_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_MODEL_OPTIONS):
        func = option(func)
    return func


@click.group()
def memory() -> None:
    """VRAM planner: estimate memory term by term, before measuring."""


@memory.command()
@_model_options
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON (bytes).")
def estimate(as_json: bool, **opts: Any) -> None:
    """Estimate the memory of a model for a workload, every term with its formula.

    Weights, KV cache (grouped-query heads counted), activations, gradients,
    optimizer states and adapters, then a stated margin for the allocator and
    runtime. An estimate is not a measurement: measure your own model.
    """
    from toolkit.planner import estimate_text
    from toolkit.planner.model_options import estimate_from_options

    est = estimate_from_options(opts)
    if as_json:
        from toolkit.commands import documents

        click.echo(json.dumps({"format": documents.MEMORY_ESTIMATE, **est.as_dict()}, indent=2))
        return
    for line in estimate_text.lines(est):
        click.echo(line)


@click.command()
@_model_options
@click.option(
    "--need-gb", help="Instead of a model: memory needed, in the GB of card labels (GiB)."
)
@_defaulted("--plan-days", click.Choice(("3", "7", "30")), "7", "Plan whose lot price is shown.")
@click.option(
    "--hours",
    help="The schedule in hours: each card's lot priced at the cheapest of the flat plans "
    "covering it and the metered prices (by the hour or second) for it, instead of the "
    "--plan-days plan.",
)
@click.option(
    "--usage",
    type=click.Choice(USAGES),
    help="What the capacity is for: endpoint (always on), batch (fault-tolerant), "
    "checkpointed (fine-tuning that resumes), unresumable (a long job); spot offers "
    "are judged against it.",
)
@click.option(
    "--catalog",
    type=click.Path(path_type=Path),
    help="GPU catalog CSV. [default: tariffs/gpus.csv of the repository]",
)
@click.option(
    "--tariffs",
    type=click.Path(path_type=Path),
    help="Price CSV, flat plans and metered prices. [default: tariffs/tarifs-forfaits.csv of "
    "the repository]",
)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
def gpus(
    need_gb: str | None,
    plan_days: str,
    hours: str | None,
    usage: str | None,
    catalog: Path | None,
    tariffs: Path | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Which catalog cards hold a model: VRAM first, then memory bandwidth.

    Takes the same model options as `memory estimate`, or --need-gb. Cards that
    lack the precision (FP8 on Ampere) are listed apart, upcast. A model too big
    for one card is split within ONE machine: tensor-parallel degrees that
    divide the heads and KV heads, pipeline stages beyond, over NVLink or PCIe
    (warned). A split is priced only when one lot holds it, with its billing
    unit, availability, storage and egress, and tokens/s per dollar; the
    margins table shows how the answer moves at a larger allocator margin and
    an 8x longer context.
    """
    from toolkit.planner import choice, choice_text, model_options, offers

    est, need = model_options.sized(need_gb, opts)
    answer, metered = choice.choose_from_files(
        catalog,
        tariffs,
        estimate=est,
        need=need,
        usage=usage,
        plan_days=int(plan_days),
        hours=model_options.schedule_hours(hours),
    )
    if as_json:
        click.echo(
            json.dumps({**answer.as_dict(), "metered": offers.metered_as_dict(metered)}, indent=2)
        )
        return
    for line in choice_text.lines(answer):
        click.echo(line)
    for line in offers.metered_lines(metered, usage):
        click.echo(line)


COMMANDS = [memory, gpus]
