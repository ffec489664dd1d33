"""Generation by CTranslate2: the variant's causal LM converted once, greedy decoding.

The model folder is converted by CTranslate2's own ``TransformersConverter`` into the
cache beside the workbook (keyed by the folder's hash, the compute type and the
converter's version), inside the first attempt's load phase. Compute type from the
variant: ``quantization = dynamic-int8`` -> ``int8`` (``int8_float16`` on cuda), else
the precision: fp32 -> ``float32``, fp16 -> ``float16``, bf16 -> ``bfloat16``.

Decoding is the Protocol's rule, greedy (``sampling_topk=1``, one beam), at most
``max_new_tokens``; the ``max_new_tokens`` stop rule sets ``min_length`` too, the ``eos``
rule ends an output at the model's end token. Prompts are tokenised and cut to the
variant's budget exactly as the torch task does (:func:`causal_lm.prompt_ids`);
CTranslate2 pads a batch itself (``padding_side`` does not apply).

What is timed (the torch task's definitions): ``generate_batch`` streams every new token
to a callback as it is decoded; time to first token is from the call to the batch's first
callback (the prefill), decode time from that first callback to the last, and decode
tokens/s = (generated tokens - one first token per output) / decode time. CTranslate2
does not expose its KV cache, so its peak stays empty with that reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from toolkit.errors import ModelError
from toolkit.evidence import corpus
from toolkit.plumbing import engines
from toolkit.runner.engines import cache, causal_lm
from toolkit.runner.instruments import flops

NO_KV_CACHE = "ctranslate2 does not expose its KV cache: its peak is not measured"


class Ct2Generator:
    """The CTranslate2 engine of generation (a :class:`engines.contract.Generator`)."""

    attention_backend = "ctranslate2"
    kv_cache_reason = NO_KV_CACHE
    #: Seconds this load spent converting the model (0 when the cache had it).
    conversion_s = 0.0

    def __init__(
        self,
        generator: Any,
        tokenizer: Any,
        *,
        variant: dict[str, Any],
        rule: causal_lm.DecodingRule,
        files: Any,
        config: dict[str, Any],
        eos: int | None,
        engine: str,
        artifact: str,
        notes: list[str],
    ) -> None:
        self.generator, self.tokenizer = generator, tokenizer
        self.variant, self.rule = variant, rule
        self.folder: Path = files.folder
        self.model_revision = files.weights_revision
        self.tokenizer_revision = files.tokenizer_revision
        self.config, self.eos_id = config, eos
        self.device = torch.device(str(variant["device"]))
        self.engine: str = engine
        self.engine_artifact: str | None = artifact
        self.engine_notes: list[str] = notes

    def generate(
        self,
        items: Sequence[corpus.Item],
        window: causal_lm.GenerationWindow,
        after_batch: Callable[[int], None],
    ) -> None:
        run_window(self, items, window, after_batch)

    def flop_cost(self) -> tuple[flops.Cost | None, str | None]:
        """The decoder's generation cost from its config: the blocks and the LM head (the
        one linear layer outside them, hidden x vocabulary), as torch's count of it."""
        try:
            head = [(int(self.config["hidden_size"]), int(self.config["vocab_size"]))]
            return flops.cost_from_config(self.config, head, generating=True), None
        except (KeyError, ValueError) as exc:
            return None, f"FLOPs unknown: {exc}"

    def synchronize(self) -> None:
        """Nothing to wait for: ``generate_batch`` returns when its tokens are on the host."""

    def close(self) -> None:
        self.generator = None


def compute_type(variant: dict[str, Any]) -> str:
    """CTranslate2's compute type for the variant's precision and quantization."""
    if variant.get("quantization") == "dynamic-int8":
        return "int8_float16" if variant.get("device") == "cuda" else "int8"
    return {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}[str(variant["precision"])]


def load(variant: dict[str, Any], base: Path, rule: causal_lm.DecodingRule) -> Ct2Generator:
    """The variant's causal LM converted and loaded by CTranslate2 (ModelError when not);
    intra threads = the attempt's (``--threads``, already torch's in this process)."""
    import ctranslate2
    from ctranslate2.converters import TransformersConverter
    from transformers import AutoTokenizer

    vid = variant.get("variant_id", "?")
    device = str(variant["device"])
    threads = torch.get_num_threads()
    if device == "cuda" and ctranslate2.get_cuda_device_count() == 0:
        raise ModelError(
            f"variant {vid} runs on cuda, but ctranslate2 "
            f"{ctranslate2.__version__} sees no CUDA device",
            hint="run it on a GPU machine with the CUDA build of ctranslate2",
        )
    files = causal_lm.model_files(str(variant["model_path"]), base)
    kind = compute_type(variant)
    settings: dict[str, object] = {
        "source": files.weights_revision,
        "tokenizer": files.tokenizer_revision,
        "converter": f"ctranslate2 {ctranslate2.__version__}",
        "transformers": engines.version("transformers"),
    }

    def convert(folder: Path) -> None:
        TransformersConverter(str(files.folder)).convert(str(folder), force=True)

    built = cache.cached(base, "ctranslate2", settings, convert)
    config = json.loads((files.folder / "config.json").read_text(encoding="utf-8"))
    context = config.get("max_position_embeddings")
    budget = int(variant["max_length"])
    if context is not None and budget + rule.max_new_tokens > int(context):
        raise ModelError(
            f"variant {vid}: max_length {budget} + max_new_tokens "
            f"{rule.max_new_tokens} is past the model's context of {context} "
            "tokens",
            hint=f"lower max_length to at most {int(context) - rule.max_new_tokens}",
        )
    try:
        generator = ctranslate2.Generator(
            str(built.folder),
            device=device,
            compute_type=kind,
            intra_threads=threads,
            inter_threads=1,
        )
    except (RuntimeError, ValueError) as exc:
        raise ModelError(
            f"ctranslate2 cannot load variant {vid} as {kind} on {device}: {exc}",
            hint="declare a precision this device supports",
        ) from exc
    tokenizer = AutoTokenizer.from_pretrained(str(files.folder), local_files_only=True)
    weights = built.folder / "model.bin"
    loaded = Ct2Generator(
        generator,
        tokenizer,
        variant=variant,
        rule=rule,
        files=files,
        config=config,
        eos=tokenizer.eos_token_id,
        engine=f"ctranslate2 {ctranslate2.__version__}",
        artifact=f"converted model.bin sha256 {cache.sha256_of(weights)}; compute type {kind}; device "
        f"{device}; intra threads {threads}",
        notes=[built.note("ctranslate2 conversion")],
    )
    loaded.conversion_s = built.seconds
    return loaded


def run_window(
    lm: Ct2Generator,
    items: Sequence[corpus.Item],
    window: causal_lm.GenerationWindow,
    after_batch: Callable[[int], None],
) -> None:
    """:func:`causal_lm.run_window` on CTranslate2: the same prompts, order, cut, outputs
    and clocks (see the module's docstring for what is timed)."""
    variant, rule = lm.variant, lm.rule
    size = int(variant["batch_size"])
    tokenized: Any = lm  # prompt_ids reads only its tokenizer
    encoded = causal_lm.prompt_ids(
        tokenized, [i.text for i in items], [i.id for i in items], int(variant["max_length"]), rule
    )
    order = list(range(len(items)))
    if variant.get("length_grouping") == "sorted":
        order.sort(key=lambda i: len(encoded[i][0]))
    eos = lm.eos_id if rule.stop == "eos" else None
    for start in range(0, len(order), size):
        indexes = order[start : start + size]
        prompts = [lm.tokenizer.convert_ids_to_tokens(encoded[i][0]) for i in indexes]
        stamps: list[float] = []

        def stream(step: Any, stamps: list[float] = stamps) -> bool:
            stamps.append(time.perf_counter())
            return False  # never stop early: the Protocol's rule decides

        began = time.perf_counter()
        results = lm.generator.generate_batch(
            prompts,
            max_length=rule.max_new_tokens,
            sampling_topk=1,
            beam_size=1,
            include_prompt_in_result=False,
            end_token=[] if eos is None else [eos],
            return_end_token=True,
            min_length=rule.max_new_tokens if rule.stop == "max_new_tokens" else 0,
            callback=stream,
        )
        new_rows = [list(r.sequences_ids[0]) for r in results]
        cut = [causal_lm._cut(r, lm.eos_id, rule) for r in new_rows]
        width = max(len(encoded[i][0]) for i in indexes)
        window.batches.append(
            causal_lm.GeneratedBatch(len(indexes), width, max(len(r) for r in new_rows))
        )
        texts = lm.tokenizer.batch_decode(cut, skip_special_tokens=True)
        if stamps:
            window.first_token_s.append(stamps[0] - began)
            window.decode_s += stamps[-1] - stamps[0]
            window.decode_tokens += sum(max(len(c) - 1, 0) for c in cut)
        for i, tokens, text in zip(indexes, cut, texts, strict=True):
            window.outputs.append(
                causal_lm.Output(i, text, tokens, len(encoded[i][0]), encoded[i][1])
            )
        after_batch(len(window.outputs))
