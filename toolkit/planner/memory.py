"""VRAM planner: a term-by-term memory estimate, each term with its formula (R18, R30-R32).

Pure arithmetic on a model's shape (read from a Hugging Face ``config.json`` or
given as explicit sizes): weights, KV cache, activations, gradients, optimizer
states and adapters, then a stated margin for the allocator and the runtime.
Every term keeps the formula that produced it, with the numbers filled in, so a
reviewer can redo it by hand. Stdlib only; an estimate never replaces measuring
(:mod:`toolkit.report.memory_sheet` puts both side by side in the Memory sheet).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.errors import UsageError

PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
FLOAT_PRECISIONS = ("fp32", "bf16", "fp16")
WORKLOADS = ("inference", "lora", "qlora", "full")
ATTENTIONS = ("sdpa", "eager")
KV_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8")
BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

#: Allocator fragmentation allowance, percent of the tensors' subtotal.
FRAGMENTATION_PCT = 10
#: CUDA context, cuBLAS/cuDNN workspaces and libraries, outside the caching allocator.
RUNTIME_BYTES = 512 * 2**20
#: int4 layout: bitsandbytes NF4 default, one fp32 absmax per block of 64 weights.
INT4_BLOCK = 64

DECODERS = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2"}
ENCODERS = {"bert": "BERT", "roberta": "RoBERTa", "xlm-roberta": "XLM-RoBERTa"}
TERMS = ("weights", "kv_cache", "activations", "gradients", "optimizer_states", "adapters")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def gib(n: int) -> str:
    """``n`` bytes in GiB with two decimals, for display.

    Exact integer arithmetic, rounding half to even as float formatting does:
    the same text as ``f"{n / 2**30:.2f}"`` wherever a float is exact, and no
    overflow or lost digits for the huge needs of hostile sizes.
    """
    hundredths, rest = divmod(abs(n) * 100, 2**30)
    if 2 * rest > 2**30 or (2 * rest == 2**30 and hundredths % 2):
        hundredths += 1
    whole, cents = divmod(hundredths, 100)
    return f"{'-' if n < 0 and hundredths else ''}{whole}.{cents:02d}"


@dataclass(frozen=True, kw_only=True)
class Params:
    """Parameter count split into the parts that are stored differently."""

    total: int
    embeddings: int
    per_layer: int
    layers: int
    head: int  # final norm, lm_head (unless tied) or pooler
    block_linear: int  # weights of the blocks' linear layers: what quantization shrinks
    formula: str


@dataclass(frozen=True)
class Shape:
    """The sizes of a transformer that memory depends on."""

    name: str
    family: str  # "decoder" (generative, KV cache) or "encoder"
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int | None
    gated_mlp: bool
    params: Params
    sliding_window: int | None = None
    max_positions: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def generative(self) -> bool:
        """True for a decoder that generates token by token with a KV cache."""
        return self.family == "decoder"

    def linear_dims(self) -> list[tuple[int, int]]:
        """(in, out) of every linear layer in one block: the LoRA targets."""
        h, q, kv, i = (
            self.hidden,
            self.heads * self.head_dim,
            self.kv_heads * self.head_dim,
            self.intermediate,
        )
        mlp = [(h, i), (h, i), (i, h)] if self.gated_mlp else [(h, i), (i, h)]
        return [(h, q), (h, kv), (h, kv), (q, h), *mlp]


def _read_config(path: Path) -> dict[str, Any]:
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise UsageError(
            f"{file}: no such config file",
            hint="give the path of a Hugging Face config.json or of its folder",
        )
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{file}, line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})",
            hint="fix the file or download it again",
        ) from exc
    if not isinstance(data, dict):
        raise UsageError(
            f"{file}: a config.json holds a JSON object", hint="give the model's config.json"
        )
    data["__file__"] = str(file)
    return data


def _need(cfg: Mapping[str, Any], key: str) -> int:
    value = cfg.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(
            f"{cfg['__file__']}: key {key!r} is {value!r}, expected a positive integer",
            hint="check the config, or give explicit sizes instead "
            "(--params, --layers, --hidden-size, --heads)",
        )
    return value


def _heads(cfg: Mapping[str, Any], h: int, a: int) -> tuple[int, int]:
    """KV heads and head dimension of a decoder config, refusing sizes that cannot be.

    An absent (or null) ``num_key_value_heads`` means one per attention head, an
    absent ``head_dim`` H / A; a given one must be a positive integer (0 is not
    "absent"), and grouped-query attention shares each KV head among a whole
    number of query heads.
    """
    file = cfg["__file__"]
    kv = a if cfg.get("num_key_value_heads") is None else _need(cfg, "num_key_value_heads")
    if cfg.get("head_dim") is not None:
        d = _need(cfg, "head_dim")
    elif h % a:
        raise UsageError(
            f"{file}: hidden_size {h} is not a multiple of num_attention_heads "
            f"{a}, and no head_dim is given",
            hint="check hidden_size and "
            "num_attention_heads, or add the model's head_dim to the config",
        )
    else:
        d = h // a
    if kv > a:
        raise UsageError(
            f"{file}: num_key_value_heads {kv} is more than num_attention_heads {a}",
            hint="a KV head serves one or more query heads: check num_key_value_heads",
        )
    if a % kv:
        raise UsageError(
            f"{file}: num_attention_heads {a} is not a multiple of num_key_value_heads {kv}",
            hint="each KV head serves the same number of query heads: check num_key_value_heads",
        )
    return kv, d


def shape_from_config(path: Path) -> Shape:
    """Read a Hugging Face config.json (Llama/Mistral/Qwen2 decoders, BERT-style encoders).

    Counts parameters from the sizes: embeddings, attention (grouped-query
    heads counted as such), MLP (gated/SwiGLU or not), norms, biases, and the
    lm_head unless tied (or the pooler of an encoder).
    """
    return shape_from_mapping(_read_config(path))


def shape_from_mapping(config: Mapping[str, Any], origin: str | None = None) -> Shape:
    """The shape of a config.json already read into a mapping (as :func:`shape_from_config`).

    ``origin`` names it in messages and, without a ``_name_or_path``, is the model's
    name (a file's stem, e.g. ``llama-2-70b``).
    """
    cfg = dict(config)
    cfg.setdefault("__file__", origin or "config")
    kind = cfg.get("model_type")
    name = str(cfg.get("_name_or_path") or Path(cfg["__file__"]).stem)
    if kind in DECODERS:
        return _decoder(cfg, name)
    if kind in ENCODERS:
        return _encoder(cfg, name)
    known = ", ".join(sorted([*DECODERS, *ENCODERS]))
    raise UsageError(
        f"{cfg['__file__']}: model_type {kind!r} is not one the planner counts ({known})",
        hint="give explicit sizes instead: --params, --layers, "
        "--hidden-size, --heads, --kv-heads, --head-dim, --vocab",
    )


def _decoder(cfg: Mapping[str, Any], name: str) -> Shape:
    v, h, n_layers = (
        _need(cfg, "vocab_size"),
        _need(cfg, "hidden_size"),
        _need(cfg, "num_hidden_layers"),
    )
    a, i = _need(cfg, "num_attention_heads"), _need(cfg, "intermediate_size")
    kv, d = _heads(cfg, h, a)
    tied = bool(cfg.get("tie_word_embeddings", False))
    qkv_bias = cfg["model_type"] == "qwen2" or bool(cfg.get("attention_bias", False))
    o_bias = bool(cfg.get("attention_bias", False))
    mlp_bias = bool(cfg.get("mlp_bias", False))
    attn = h * a * d + 2 * h * kv * d + a * d * h
    mlp = 3 * h * i
    bias = (
        (a * d + 2 * kv * d if qkv_bias else 0)
        + (h if o_bias else 0)
        + (2 * i + h if mlp_bias else 0)
    )
    per_layer = attn + mlp + bias + 2 * h
    embeddings = v * h
    head = h + (0 if tied else v * h)
    total = embeddings + n_layers * per_layer + head
    bias_txt = f" + biases {bias:,}" if bias else ""
    formula = (
        f"embeddings V*H = {v:,}*{h:,} = {embeddings:,}; per layer: attention "
        f"H*A*D + 2*H*KV*D + A*D*H = {attn:,} (A={a}, KV={kv}, D={d}), gated MLP 3*H*I = "
        f"{mlp:,} (I={i:,}){bias_txt}, 2 RMSNorms 2*H = {2 * h:,} -> {per_layer:,} x {n_layers} "
        f"layers; final norm H = {h:,}; lm_head "
        + ("tied to the embeddings: 0" if tied else f"V*H = {v * h:,}")
    )
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) else None
    return Shape(
        name=name,
        family="decoder",
        layers=n_layers,
        hidden=h,
        heads=a,
        kv_heads=kv,
        head_dim=d,
        intermediate=i,
        vocab=v,
        gated_mlp=True,
        params=Params(
            total=total,
            embeddings=embeddings,
            per_layer=per_layer,
            layers=n_layers,
            head=head,
            block_linear=n_layers * (attn + mlp),
            formula=formula,
        ),
        sliding_window=window if isinstance(window, int) else None,
        max_positions=cfg.get("max_position_embeddings"),
    )


def _encoder(cfg: Mapping[str, Any], name: str) -> Shape:
    v, h, n_layers = (
        _need(cfg, "vocab_size"),
        _need(cfg, "hidden_size"),
        _need(cfg, "num_hidden_layers"),
    )
    a, i = _need(cfg, "num_attention_heads"), _need(cfg, "intermediate_size")
    p, t = _need(cfg, "max_position_embeddings"), int(cfg.get("type_vocab_size", 2))
    if h % a:
        raise UsageError(
            f"{cfg['__file__']}: hidden_size {h} is not a multiple of num_attention_heads {a}",
            hint="check the config",
        )
    embeddings = (v + p + t) * h + 2 * h
    linear = 4 * h * h + 2 * h * i
    per_layer = linear + (4 * h + i + h) + 4 * h
    pooler = h * h + h
    total = embeddings + n_layers * per_layer + pooler
    formula = (
        f"embeddings (V+P+T)*H + LayerNorm 2*H = ({v:,}+{p}+{t})*{h} + {2 * h} = "
        f"{embeddings:,}; per layer: Q,K,V,O 4*H*H = {4 * h * h:,}, MLP 2*H*I = {2 * h * i:,} "
        f"(I={i:,}), biases 5*H+I = {5 * h + i:,}, 2 LayerNorms 4*H = {4 * h:,} -> "
        f"{per_layer:,} x {n_layers} layers; pooler H*H+H = {pooler:,}"
    )
    return Shape(
        name=name,
        family="encoder",
        layers=n_layers,
        hidden=h,
        heads=a,
        kv_heads=a,
        head_dim=h // a,
        intermediate=i,
        vocab=v,
        gated_mlp=False,
        params=Params(
            total=total,
            embeddings=embeddings,
            per_layer=per_layer,
            layers=n_layers,
            head=pooler,
            block_linear=n_layers * linear,
            formula=formula,
        ),
        max_positions=p,
    )


def shape_from_sizes(
    *,
    params: int,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    vocab: int | None = None,
    intermediate: int | None = None,
    tied_embeddings: bool = False,
) -> Shape:
    """A decoder shape from explicit sizes (no config.json).

    The MLP is taken as gated (SwiGLU) with ``intermediate`` = 4*H when not
    given; everything except the embeddings and lm_head (V*H each, when the
    vocabulary is given) counts as the blocks' linear weights.
    """
    _check_sizes_given(params, layers, hidden, heads, kv_heads, head_dim)
    kv = heads if kv_heads is None else kv_heads
    d = hidden // heads if head_dim is None else head_dim
    notes = []
    if intermediate is None:
        intermediate = 4 * hidden
        notes.append(
            f"MLP width not given: assumed gated with I = 4*H = {intermediate:,} "
            "(pass --intermediate-size)"
        )
    emb = vocab * hidden if vocab else 0
    head = 0 if tied_embeddings else emb
    if emb + head >= params:
        raise UsageError(
            f"--params {params:,} is not more than the embeddings and lm_head ({emb + head:,})",
            hint="check --params and --vocab",
        )
    if not vocab:
        notes.append("vocabulary not given: embeddings not separated, logits not counted")
    formula = (
        f"{params:,} given; embeddings V*H = {emb:,}, lm_head "
        + ("tied" if tied_embeddings else f"{head:,}")
        + f", the rest ({params - emb - head:,}) taken as block linear weights"
    )
    return Shape(
        name="explicit sizes",
        family="decoder",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv,
        head_dim=d,
        intermediate=intermediate,
        vocab=vocab,
        gated_mlp=True,
        params=Params(
            total=params,
            embeddings=emb,
            per_layer=0,
            layers=layers,
            head=head,
            block_linear=params - emb - head,
            formula=formula,
        ),
        notes=tuple(notes),
    )


def _check_sizes_given(
    params: int, layers: int, hidden: int, heads: int, kv_heads: int | None, head_dim: int | None
) -> None:
    """UsageError naming the option when the explicit sizes cannot describe a decoder:
    one not positive, a width not split evenly by the heads, KV heads that do not divide
    them."""
    for label, value in (
        ("--params", params),
        ("--layers", layers),
        ("--hidden-size", hidden),
        ("--heads", heads),
    ):
        if value < 1:
            raise UsageError(
                f"{label} must be a positive integer, got {value}",
                hint="give the model's sizes from its card or config",
            )
    kv = heads if kv_heads is None else kv_heads
    for label, given in (("--kv-heads", kv_heads), ("--head-dim", head_dim)):
        if given is not None and given < 1:
            raise UsageError(
                f"{label} must be a positive integer, got {given}",
                hint="give the model's sizes from its card or config",
            )
    if head_dim is None and hidden % heads:
        raise UsageError(
            f"--hidden-size {hidden} is not a multiple of --heads {heads}",
            hint="check both, or give --head-dim",
        )
    if kv > heads:
        raise UsageError(
            f"--kv-heads {kv} is more than --heads {heads}",
            hint="a KV head serves one or more query heads: check --kv-heads",
        )
    if heads % kv:
        raise UsageError(
            f"--heads {heads} is not a multiple of --kv-heads {kv}",
            hint="each KV head serves the same number of query heads: check --kv-heads",
        )


@dataclass(frozen=True)
class Term:
    """One memory term: its name, size in bytes and the formula that gave it."""

    name: str
    bytes: int
    formula: str


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """A memory estimate: the terms, their subtotal, the margin and the total."""

    shape: Shape
    workload: str
    precision: str
    compute: str
    kv_precision: str
    seq_len: int
    batch: int
    attention: str
    lora_rank: int
    checkpointing: bool
    terms: tuple[Term, ...]
    margin: Term
    kv_per_sequence: int
    adapter_params: int
    notes: tuple[str, ...]
    allocator_pct: int = FRAGMENTATION_PCT

    @property
    def subtotal(self) -> int:
        """Bytes of the tensors: the sum of the terms (compare with max_memory_allocated)."""
        return sum(t.bytes for t in self.terms)

    @property
    def total(self) -> int:
        """Subtotal plus the allocator and runtime margin."""
        return self.subtotal + self.margin.bytes

    def term(self, name: str) -> Term:
        """The term called ``name``."""
        return next(t for t in self.terms if t.name == name)

    def describe(self) -> str:
        """One line saying what was estimated."""
        extra = f", LoRA rank {self.lora_rank}" if self.workload in ("lora", "qlora") else ""
        extra += ", gradient checkpointing" if self.checkpointing else ""
        return (
            f"{self.workload} {self.precision} (compute {self.compute}, KV "
            f"{self.kv_precision}), seq_len {self.seq_len:,}, batch {self.batch}, "
            f"attention {self.attention}{extra}"
        )

    def basis(self) -> str:
        """The whole estimate as one line of text (the Memory sheet's estimate_basis)."""
        parts = [f"{t.name} {t.bytes:,} = {t.formula}" for t in (*self.terms, self.margin)]
        return (
            f"{self.shape.name}: {self.describe()}; "
            + "; ".join(parts)
            + f"; total {self.total:,} B"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: bytes as integers, keys named for the terms."""
        out: dict[str, Any] = {
            "model": self.shape.name,
            "family": self.shape.family,
            "workload": self.workload,
            "precision": self.precision,
            "compute_dtype": self.compute,
            "kv_precision": self.kv_precision,
            "seq_len": self.seq_len,
            "batch": self.batch,
            "attention": self.attention,
            "gradient_checkpointing": self.checkpointing,
            "allocator_margin_pct": self.allocator_pct,
            "parameters": self.shape.params.total,
            "parameters_formula": self.shape.params.formula,
        }
        if self.workload in ("lora", "qlora"):
            out.update(lora_rank=self.lora_rank, adapter_parameters=self.adapter_params)
        for t in self.terms:
            out[f"{t.name}_bytes"] = t.bytes
        out.update(
            subtotal_bytes=self.subtotal,
            margin_bytes=self.margin.bytes,
            total_bytes=self.total,
            kv_cache_bytes_per_sequence=self.kv_per_sequence,
            formulas={t.name: t.formula for t in (*self.terms, self.margin)},
            notes=list(self.notes),
        )
        return out


def _defaults(
    workload: str, precision: str | None, compute: str | None, kv_precision: str | None
) -> tuple[str, str, str]:
    if workload not in WORKLOADS:
        raise UsageError(f"unknown workload {workload!r}", hint=f"one of {', '.join(WORKLOADS)}")
    precision = precision or ("int4" if workload == "qlora" else "bf16")
    if precision not in PRECISIONS:
        raise UsageError(f"unknown precision {precision!r}", hint=f"one of {', '.join(PRECISIONS)}")
    if workload == "full" and precision not in FLOAT_PRECISIONS:
        raise UsageError(
            f"full fine-tuning updates every weight: {precision} weights cannot be trained",
            hint="use --precision fp32 or bf16, or --workload qlora for "
            "a quantized base with adapters",
        )
    if workload == "qlora" and precision in FLOAT_PRECISIONS:
        raise UsageError(
            f"QLoRA keeps a quantized base; {precision} is not quantized",
            hint="use --precision int4 (or int8), or --workload lora",
        )
    if workload == "lora" and precision not in FLOAT_PRECISIONS:
        raise UsageError(f"LoRA on a {precision} base is QLoRA", hint="use --workload qlora")
    compute = compute or (precision if precision in FLOAT_PRECISIONS else "bf16")
    if compute not in FLOAT_PRECISIONS:
        raise UsageError(
            f"compute dtype {compute!r} is not a float type", hint="one of fp32, bf16, fp16"
        )
    kv_precision = kv_precision or compute
    if kv_precision not in KV_PRECISIONS:
        raise UsageError(
            f"unknown KV cache precision {kv_precision!r}",
            hint=f"one of {', '.join(KV_PRECISIONS)}",
        )
    return precision, compute, kv_precision


def estimate(
    shape: Shape,
    *,
    workload: str = "inference",
    precision: str | None = None,
    seq_len: int = 2048,
    batch: int = 1,
    compute: str | None = None,
    kv_precision: str | None = None,
    attention: str = "sdpa",
    lora_rank: int = 16,
    checkpointing: bool = False,
    allocator_pct: int = FRAGMENTATION_PCT,
) -> Estimate:
    """Estimate the memory of ``shape`` for a workload; each term keeps its formula.

    ``precision`` is the storage of the weights (default bf16; int4 for QLoRA);
    ``compute`` the dtype of activations and of unquantized weights (default:
    the precision, or bf16 for a quantized one); ``kv_precision`` that of the KV
    cache (default: compute). Quantized precisions shrink the blocks' linear
    weights only: embeddings, norms, biases and lm_head stay in the compute dtype.
    ``allocator_pct`` is the allocator's fragmentation margin, in percent of the tensors.
    """
    precision, compute, kv_precision = _defaults(workload, precision, compute, kv_precision)
    _check_sizes(seq_len, batch, lora_rank, allocator_pct, attention)
    s, b, a = seq_len, batch, BYTES[compute]
    training = workload != "inference"
    weights = _weights(shape.params, precision, compute, workload)
    kv_term, kv_seq = _kv_cache(shape, s, b, kv_precision, training)
    act = (
        _training_activations(
            shape, s, b, a, compute=compute, attention=attention, checkpointing=checkpointing
        )
        if training
        else _inference_activations(shape, s, b, a, compute, attention)
    )
    adapter_params, adapters, grads, optim = _trained_terms(shape, workload, precision, lora_rank)
    terms = (weights, kv_term, act, grads, optim, adapters)
    return Estimate(
        shape=shape,
        workload=workload,
        precision=precision,
        compute=compute,
        kv_precision=kv_precision,
        seq_len=s,
        batch=b,
        attention=attention,
        lora_rank=lora_rank,
        checkpointing=checkpointing,
        terms=terms,
        margin=_margin(sum(t.bytes for t in terms), allocator_pct),
        kv_per_sequence=kv_seq,
        adapter_params=adapter_params,
        notes=_length_notes(shape, s, kv_seq),
        allocator_pct=allocator_pct,
    )


def _check_sizes(
    seq_len: int, batch: int, lora_rank: int, allocator_pct: int, attention: str
) -> None:
    """UsageError for a size that is not positive, a margin outside 0-100 %, an unknown
    attention."""
    if seq_len < 1 or batch < 1 or lora_rank < 1:
        raise UsageError(
            f"seq_len, batch and LoRA rank must be positive (got {seq_len}, {batch}, {lora_rank})",
            hint="give positive integers",
        )
    if not 0 <= allocator_pct <= 100:
        raise UsageError(
            f"allocator margin {allocator_pct}% is not between 0 and 100",
            hint="give a percentage of the tensors, e.g. 10 or 20",
        )
    if attention not in ATTENTIONS:
        raise UsageError(f"unknown attention {attention!r}", hint="sdpa or eager")


def _length_notes(shape: Shape, seq_len: int, kv_seq: int) -> tuple[str, ...]:
    """The shape's notes, and what a sequence longer than the model's positions or its
    sliding window means."""
    notes = list(shape.notes)
    if shape.max_positions and seq_len > shape.max_positions:
        notes.append(
            f"seq_len {seq_len:,} exceeds the model's max_position_embeddings "
            f"{shape.max_positions:,}"
        )
    if kv_seq and shape.sliding_window and seq_len > shape.sliding_window:
        notes.append(
            f"sliding window {shape.sliding_window:,}: the cache keeps the last "
            f"{shape.sliding_window:,} tokens per layer (a runtime without a rolling "
            "cache keeps them all)"
        )
    return tuple(notes)


def _trained_terms(
    shape: Shape, workload: str, precision: str, lora_rank: int
) -> tuple[int, Term, Term, Term]:
    """(adapter params, adapters, gradients, optimizer states) of ``workload``."""
    if workload in ("lora", "qlora"):
        return _adapter_terms(shape, lora_rank)
    adapters = Term("adapters", 0, "none: no adapters in this workload")
    if workload != "full":
        grads = Term("gradients", 0, "none: inference keeps no gradients")
        optim = Term("optimizer_states", 0, "none: inference keeps no optimizer states")
        return 0, adapters, grads, optim
    p, w = shape.params, BYTES[precision]
    grads = Term("gradients", p.total * w, f"{p.total:,} params x {w} B ({precision})")
    if precision == "fp32":
        optim = Term(
            "optimizer_states",
            p.total * 8,
            f"AdamW m and v: {p.total:,} params x 8 B (2 x fp32)",
        )
    else:
        optim = Term(
            "optimizer_states",
            p.total * 12,
            f"fp32 master weights, AdamW m and v: {p.total:,} params x 12 B "
            "(3 x fp32, mixed precision)",
        )
    return 0, adapters, grads, optim


def _adapter_terms(shape: Shape, lora_rank: int) -> tuple[int, Term, Term, Term]:
    """(adapter params, adapters, gradients, optimizer states) of LoRA adapters in fp32 on
    every linear of every block; the frozen base has no gradients."""
    dims = shape.linear_dims()
    adapter_params = shape.layers * lora_rank * sum(i + o for i, o in dims)
    sums = " + ".join(f"({i:,}+{o:,})" for i, o in dims)
    count = f"r*sum(in+out) x L = {lora_rank}*[{sums}] x {shape.layers} = {adapter_params:,} params"
    adapters = Term("adapters", adapter_params * 4, f"{count} x 4 B (fp32 adapters)")
    grads = Term(
        "gradients",
        adapter_params * 4,
        f"{adapter_params:,} adapter params x 4 B (fp32); the frozen base has none",
    )
    optim = Term(
        "optimizer_states",
        adapter_params * 8,
        f"AdamW m and v: {adapter_params:,} adapter params x 8 B (2 x fp32)",
    )
    return adapter_params, adapters, grads, optim


def _margin(subtotal: int, allocator_pct: int) -> Term:
    """The allocator's fragmentation (``allocator_pct`` of the tensors) and the runtime."""
    frag = _ceil_div(subtotal * allocator_pct, 100)
    return Term(
        "margin",
        frag + RUNTIME_BYTES,
        f"allocator {allocator_pct}% of {subtotal:,} = {frag:,} + runtime "
        f"{RUNTIME_BYTES:,} (512 MiB: CUDA context, library workspaces)",
    )


def again(est: Estimate, **changes: Any) -> Estimate:
    """``est`` estimated again with some of its settings changed (``seq_len``, ``precision``,
    ``kv_precision``, ``allocator_pct``, ...): the same shape, the same arithmetic."""
    settings: dict[str, Any] = {
        "workload": est.workload,
        "precision": est.precision,
        "seq_len": est.seq_len,
        "batch": est.batch,
        "compute": est.compute,
        "kv_precision": est.kv_precision,
        "attention": est.attention,
        "lora_rank": est.lora_rank,
        "checkpointing": est.checkpointing,
        "allocator_pct": est.allocator_pct,
    }
    return estimate(est.shape, **{**settings, **changes})


def _weights(p: Params, precision: str, compute: str, workload: str) -> Term:
    if precision in FLOAT_PRECISIONS:
        w = BYTES[precision]
        frozen = " (frozen base)" if workload == "lora" else ""
        return Term("weights", p.total * w, f"{p.total:,} params x {w} B ({precision}){frozen}")
    q, rest, c = p.block_linear, p.total - p.block_linear, BYTES[compute]
    if precision == "int4":
        blocks = _ceil_div(q, INT4_BLOCK)
        qbytes = _ceil_div(q, 2) + 4 * blocks
        qtxt = (
            f"{q:,} block linear weights x 0.5 B + 4 B x {blocks:,} blocks of "
            f"{INT4_BLOCK} (fp32 absmax, bitsandbytes NF4)"
        )
    else:
        qbytes = q
        qtxt = f"{q:,} block linear weights x 1 B ({precision}; per-channel scales omitted)"
    return Term(
        "weights",
        qbytes + rest * c,
        f"{qtxt} + {rest:,} other params (embeddings, norms, biases, lm_head) x {c} B ({compute})",
    )


def _kv_cache(shape: Shape, s: int, b: int, kv_precision: str, training: bool) -> tuple[Term, int]:
    if not shape.generative:
        return Term("kv_cache", 0, "none: an encoder keeps no KV cache"), 0
    if training:
        return Term("kv_cache", 0, "none: training runs with use_cache=False"), 0
    t = min(s, shape.sliding_window) if shape.sliding_window else s
    k = BYTES[kv_precision]
    per_seq = 2 * shape.layers * shape.kv_heads * shape.head_dim * t * k
    window = f" (sliding window {shape.sliding_window:,})" if t < s else ""
    return Term(
        "kv_cache",
        per_seq * b,
        f"2 (K,V) x {shape.layers} layers x {shape.kv_heads} KV heads x "
        f"{shape.head_dim} head dim x {t:,} tokens{window} x {b} batch x {k} B "
        f"({kv_precision})",
    ), per_seq


def _inference_activations(
    shape: Shape, s: int, b: int, a: int, compute: str, attention: str
) -> Term:
    h, i = shape.hidden, shape.intermediate
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attn = 2 * h + 2 * q + 2 * kv + (2 * shape.heads * s if attention == "eager" else 0)
    mlp = 2 * h + (3 * i if shape.gated_mlp else 2 * i)
    peak = max(attn, mlp)
    total = b * s * peak * a
    eager = f" + 2*A*s = 2*{shape.heads}*{s:,} (eager scores)" if attention == "eager" else ""
    mlp_txt = "2*H + 3*I (gated MLP)" if shape.gated_mlp else "2*H + 2*I (MLP)"
    text = (
        f"one layer at a time, peak of attention 2*H + 2*A*D + 2*KV*D{eager} = {attn:,} "
        f"and {mlp_txt} = {mlp:,} -> {b} batch x {s:,} tokens x {peak:,} x {a} B ({compute})"
    )
    if shape.generative and shape.vocab:
        logits = b * shape.vocab * (a + 4)
        total += logits
        text += f" + last-position logits {b} x {shape.vocab:,} x ({a} + 4 fp32 copy) B"
    return Term("activations", total, text)


def _training_activations(
    shape: Shape, s: int, b: int, a: int, *, compute: str, attention: str, checkpointing: bool
) -> Term:
    h, i, heads = shape.hidden, shape.intermediate, shape.heads
    q, kv = heads * shape.head_dim, shape.kv_heads * shape.head_dim
    if shape.generative:
        elems = 4 * h + 2 * q + 2 * kv + 4 * i
        layer_txt = f"(4*H + 2*A*D + 2*KV*D + 4*I) x {a} B = {elems * a:,}"
        per_tok = elems * a
        if attention == "eager":
            per_tok += heads * s * a
            layer_txt += f" + A*s x {a} B = {heads * s * a:,} (eager softmax)"
    else:
        elems = 8 * h + 2 * i
        per_tok = elems * a + 2 * h
        layer_txt = f"(8*H + 2*I) x {a} B + 2*H dropout masks x 1 B = {per_tok:,}"
        if attention == "eager":
            per_tok += heads * s * (2 * a + 1)
            layer_txt += f" + A*s x (2*{a}+1) B = {heads * s * (2 * a + 1):,} (eager scores)"
    tokens = b * s
    if checkpointing:
        stored = tokens * (shape.layers * h * a + per_tok)
        text = (
            f"checkpointed: {b} batch x {s:,} tokens x ({shape.layers} layer inputs x H x "
            f"{a} B + one layer recomputed {layer_txt}) = {stored:,}"
        )
    else:
        stored = tokens * shape.layers * per_tok
        text = (
            f"saved for backward: {b} batch x {s:,} tokens x {shape.layers} layers x "
            f"{layer_txt} per token per layer = {stored:,}"
        )
    if shape.generative and shape.vocab:
        lb = a + 4 + (0 if a == 4 else 4)
        head = tokens * (2 * h * a + shape.vocab * lb)
        stored += head
        copy = "" if a == 4 else " + 4 fp32 copy"
        text += (
            f" + final norm and lm_head inputs and logits: {tokens:,} tokens x "
            f"(2*H x {a} + V x ({a} logits{copy} + 4 log-softmax)) B = {head:,}"
        )
    text += f" ({compute}; LoRA dropout and small terms omitted)"
    return Term("activations", stored, text)
