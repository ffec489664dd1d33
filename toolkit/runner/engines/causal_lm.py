"""Offline batch generation over a prompts corpus: load, measured window, token counts (R9-R10).

The Protocol's ``task`` is ``generation`` and its decoding rule (:class:`DecodingRule`) is the
same for every variant, fixed before timing (R1, R8): greedy decoding, at most
``max_new_tokens`` new tokens, a stop rule, and what happens to a prompt longer than the
variant's ``max_length`` prompt budget (truncated from the left and counted, R3, or refused).

The measured window (:func:`run_window`) covers reading the prompts, tokenising, generating
and decoding every output to text on the host, the device synchronised at both ends (the
caller's :class:`toolkit.runner.instruments.probes.Span`). Inside it each batch also records:

- *time to first token*: from the batch's call of ``generate`` to its first new token
  (the prefill), read at the first step's stopping check, the device synchronised there;
- *decode time*: from that first token to the last, so decode tokens/s =
  (generated tokens - one first token per output) / decode time, apart from the prefill;
- the KV cache's size in bytes at the batch's end (the cache only grows while a batch
  decodes, so its end is its peak), summed over its key and value tensors: measured on CPU
  and GPU alike.

The synchronisation per step is what ``generate`` already does to test its own stopping
rule (it reads the unfinished flags on the host), so it adds no wait of its own on CUDA.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, StoppingCriteria

from toolkit.errors import ModelError
from toolkit.evidence import corpus
from toolkit.runner.decoding import (  # noqa: F401 - re-exported: the task's rule lives there
    TASKS,
    DecodingRule,
    decoding_rule,
    task_of,
)
from toolkit.runner.engines.model import DTYPES, _attention_backend, model_files

PADDING_SIDES = ("left", "right")


class PromptTooLong(ModelError):
    """A prompt is longer than the variant's budget and the protocol refuses long prompts."""


@dataclass(kw_only=True)
class LoadedLM:
    """A causal LM ready to generate, with the file hashes that identify it (R3)."""

    tokenizer: Any
    module: Any
    device: torch.device
    model_revision: str
    tokenizer_revision: str
    attention_backend: str
    folder: Path
    #: The model's context (config max_position_embeddings), None when it declares none.
    context: int | None
    pad_id: int
    eos_id: int | None


def load_lm(variant: dict[str, Any], base: Path, rule: DecodingRule) -> LoadedLM:
    """Load the variant's causal LM on its device, precision and attention backend.

    Raises ModelError for a model that cannot load, a cuda variant without CUDA, a
    setting this runner does not apply (compile, quantization, a KV-cache dtype other
    than the model's), or a prompt budget plus max_new_tokens past the model's context.
    """
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    vid = variant.get("variant_id", "?")
    if variant.get("device") == "cuda" and not torch.cuda.is_available():
        raise ModelError(
            f"variant {vid} runs on cuda, but torch sees no CUDA device",
            hint="run it on a GPU machine (`iteralab env` says what this one has)",
        )
    if variant.get("compile") == "yes":
        raise ModelError(
            f"variant {vid}: compile yes is not applied to generation yet",
            hint="declare compile no for a generation variant",
        )
    if str(variant.get("quantization") or "none") != "none":
        raise ModelError(
            f"variant {vid}: quantization {variant.get('quantization')!r} is not "
            "applied to generation",
            hint="declare quantization none",
        )
    kv = str(variant.get("kv_cache_dtype") or "auto").strip().lower()
    if kv not in ("auto", str(variant["precision"])):
        raise ModelError(
            f"variant {vid}: kv_cache_dtype {kv!r} is not supported by this "
            "runner (the cache is kept in the model's precision)",
            hint="write auto (or the variant's precision) in kv_cache_dtype",
        )
    folder, _, model_revision, tokenizer_revision = model_files(str(variant["model_path"]), base)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        module: Any = AutoModelForCausalLM.from_pretrained(
            str(folder),
            dtype=DTYPES[str(variant["precision"])],
            attn_implementation=str(variant["attention_backend"]),
            local_files_only=True,
        )
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"model {folder}: cannot load as a causal LM ({type(exc).__name__}: {exc})",
            hint="model_path must be a causal LM folder with config, weights and tokenizer files",
        ) from exc
    module.eval()
    device = torch.device(str(variant["device"]))
    module.to(device)
    context = getattr(module.config, "max_position_embeddings", None)
    budget = int(variant["max_length"])
    if context is not None and budget + rule.max_new_tokens > int(context):
        raise ModelError(
            f"variant {vid}: max_length {budget} + max_new_tokens "
            f"{rule.max_new_tokens} is past the model's context of {context} "
            "tokens",
            hint=f"lower max_length to at most {int(context) - rule.max_new_tokens}",
        )
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    if pad is None:
        raise ModelError(
            f"model {folder}: its tokenizer has neither a padding nor an end-of-sequence token",
            hint="use a tokenizer that declares one",
        )
    return LoadedLM(
        tokenizer=tokenizer,
        module=module,
        device=device,
        model_revision=model_revision,
        tokenizer_revision=tokenizer_revision,
        attention_backend=_attention_backend(module, str(variant["attention_backend"])),
        folder=folder,
        context=None if context is None else int(context),
        pad_id=int(pad),
        eos_id=None if eos is None else int(eos),
    )


@dataclass
class Output:
    """One generated output, in corpus order by ``index``."""

    index: int
    text: str
    token_ids: list[int]
    prompt_tokens: int
    truncated: bool


@dataclass(frozen=True)
class GeneratedBatch:
    """The sizes of one ``generate`` call that its computed FLOPs depend on
    (:mod:`toolkit.runner.instruments.flops`): every row runs every step, ended or not."""

    rows: int
    #: The prompts' padded width.
    width: int
    #: Tokens generated per row: the batch's longest output before its end-of-sequence cut.
    steps: int


@dataclass
class GenerationWindow:
    """What the measured window produced so far (kept when it fails midway)."""

    items: list[corpus.Item] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    #: Per batch: seconds from calling generate to the first new token (the prefill).
    first_token_s: list[float] = field(default_factory=list)
    decode_s: float = 0.0
    #: Generated tokens after each output's first (what decode_s produced).
    decode_tokens: int = 0
    kv_cache_peak_bytes: int | None = None
    batches: list[GeneratedBatch] = field(default_factory=list)

    @property
    def prompt_tokens(self) -> int:
        return sum(o.prompt_tokens for o in self.outputs)

    @property
    def generated_tokens(self) -> int:
        return sum(len(o.token_ids) for o in self.outputs)

    @property
    def truncated(self) -> int:
        return sum(o.truncated for o in self.outputs)

    def ttft_s(self) -> float | None:
        """Median time to first token over the batches; None before any batch."""
        return median(self.first_token_s) if self.first_token_s else None

    def decode_tokens_per_s(self) -> float | None:
        """Decode tokens per second apart from the prefill; None without decode steps."""
        if self.decode_tokens <= 0 or self.decode_s <= 0:
            return None
        return self.decode_tokens / self.decode_s


class _StepClock(StoppingCriteria):
    """Host time after each generation step (the device synchronised on CUDA); stops nothing."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.times: list[float] = []

    def __call__(
        self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any
    ) -> torch.Tensor:
        if self.cuda:
            torch.cuda.synchronize()
        self.times.append(time.perf_counter())
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def cache_bytes(cache: Any) -> int | None:
    """Bytes held by a generate() KV cache's tensors; None when it exposes none."""
    if cache is None:
        return None
    seen: set[int] = set()
    total = 0
    layers = getattr(cache, "layers", None)
    if layers is not None:
        tensors = [
            t
            for layer in layers
            for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
        ]
    else:  # a legacy tuple of (key, value) per layer
        tensors = [t for pair in cache for t in pair]
    for t in tensors:
        if isinstance(t, torch.Tensor) and id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total or None


def prompt_ids(
    lm: LoadedLM, texts: Sequence[str], ids: Sequence[str], budget: int, rule: DecodingRule
) -> list[tuple[list[int], bool]]:
    """Each prompt's token ids within ``budget``, and whether it was cut (R3).

    A prompt past the budget keeps its last ``budget`` tokens (what the output continues)
    under ``long_prompts: truncate``; under ``refuse`` it raises PromptTooLong naming it.
    """
    encoded = lm.tokenizer(list(texts))["input_ids"]
    out = []
    for item_id, row in zip(ids, encoded, strict=True):
        if len(row) <= budget:
            out.append((list(row), False))
        elif rule.long_prompts == "truncate":
            out.append((list(row[-budget:]), True))
        else:
            raise PromptTooLong(
                f"prompt {item_id!r} has {len(row)} tokens, past the variant's "
                f"max_length of {budget}",
                hint="shorten the prompt, raise "
                "max_length within the model's context, or declare Protocol "
                "long_prompts truncate (cut prompts are counted)",
            )
    return out


def _batch_tensors(
    rows: list[list[int]], pad_id: int, left: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids, mask = [], []
    for r in rows:
        extra = width - len(r)
        ids.append([pad_id] * extra + r if left else r + [pad_id] * extra)
        mask.append([0] * extra + [1] * len(r) if left else [1] * len(r) + [0] * extra)
    return torch.tensor(ids), torch.tensor(mask)


def _cut(new: list[int], eos: int | None, rule: DecodingRule) -> list[int]:
    """An output's tokens: up to and including its first end-of-sequence token (eos rule)."""
    if rule.stop == "eos" and eos is not None and eos in new:
        return new[: new.index(eos) + 1]
    return new


def run_window(
    lm: LoadedLM,
    variant: dict[str, Any],
    rule: DecodingRule,
    items: Sequence[corpus.Item],
    window: GenerationWindow,
    after_batch: Callable[[int], None],
) -> None:
    """Tokenise, generate and decode ``items`` by batches into ``window`` (warm-up and the
    measured window alike). Batches follow file order, or prompt length with
    ``length_grouping: sorted`` (a declared variant, R6)."""
    size = int(variant["batch_size"])
    budget = int(variant["max_length"])
    left = str(variant.get("padding_side") or "left") == "left"
    fixed = str(variant.get("padding") or "dynamic") == "max_length"
    encoded = prompt_ids(lm, [i.text for i in items], [i.id for i in items], budget, rule)
    order = list(range(len(items)))
    if variant.get("length_grouping") == "sorted":
        order.sort(key=lambda i: len(encoded[i][0]))
    module, device = lm.module, lm.device
    extra: dict[str, Any] = {}
    if rule.stop == "max_new_tokens":
        extra["min_new_tokens"] = rule.max_new_tokens
    with torch.inference_mode():
        for start in range(0, len(order), size):
            indexes = order[start : start + size]
            rows = [encoded[i][0] for i in indexes]
            if fixed:  # pad every batch to max_length: a declared variant
                rows_for_width = rows + [[lm.pad_id] * budget]
                ids, mask = _batch_tensors(rows_for_width, lm.pad_id, left)
                ids, mask = ids[:-1], mask[:-1]
            else:
                ids, mask = _batch_tensors(rows, lm.pad_id, left)
            ids, mask = ids.to(device), mask.to(device)
            clock = _StepClock(device)
            if clock.cuda:
                torch.cuda.synchronize()
            began = time.perf_counter()
            out = module.generate(
                input_ids=ids,
                attention_mask=mask,
                do_sample=False,
                num_beams=1,
                max_new_tokens=rule.max_new_tokens,
                pad_token_id=lm.pad_id,
                eos_token_id=lm.eos_id if rule.stop == "eos" else None,
                stopping_criteria=[clock],
                return_dict_in_generate=True,
                use_cache=True,
                **extra,
            )
            width = ids.shape[1]
            new_rows = out.sequences[:, width:].tolist()
            window.batches.append(GeneratedBatch(len(rows), width, len(new_rows[0])))
            kv = cache_bytes(getattr(out, "past_key_values", None))
            if kv is not None:
                window.kv_cache_peak_bytes = max(kv, window.kv_cache_peak_bytes or 0)
            del out
            cut = [_cut(r, lm.eos_id, rule) for r in new_rows]
            texts = lm.tokenizer.batch_decode(cut, skip_special_tokens=True)
            if clock.times:
                window.first_token_s.append(clock.times[0] - began)
                window.decode_s += clock.times[-1] - clock.times[0]
                window.decode_tokens += sum(max(len(c) - 1, 0) for c in cut)
            for i, tokens, text in zip(indexes, cut, texts, strict=True):
                window.outputs.append(Output(i, text, tokens, len(encoded[i][0]), encoded[i][1]))
            after_batch(len(window.outputs))


def prediction_rows(
    window: GenerationWindow, bounds: Sequence[int], subgroups: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The predictions file's rows, in corpus order: id, the output text, its token ids and
    counts, whether its prompt was cut, its stratum by prompt tokens and each declared
    subgroup field."""
    rows = []
    for o in sorted(window.outputs, key=lambda o: o.index):
        item = window.items[o.index]
        row = corpus.prediction_row(
            item, o.text, corpus.stratum(o.prompt_tokens, bounds), subgroups
        )
        row.update(
            {
                "prompt_tokens": o.prompt_tokens,
                "generated_tokens": len(o.token_ids),
                "token_ids": o.token_ids,
                "truncated": o.truncated,
            }
        )
        rows.append(row)
    return rows
