"""Model FLOPs of the work an attempt did, from the model's config.

What is counted is what torch's FLOP counter (``torch.utils.flop_counter``) counts for one
forward pass: matrix products, each multiply-add as 2 FLOPs. Elementwise work (softmax,
GELU, LayerNorm, the mean pooling, embedding look-ups) is left out: under 1 % of a BERT
encoder's FLOPs at the lengths the runner sees.

For an encoder of ``N`` layers, hidden size ``H``, ``A`` heads of size ``D`` (``A*D = H``)
and MLP width ``I`` (read from ``config.json`` by :mod:`toolkit.planner.memory`), one
sequence of ``L`` tokens costs::

    F(L) = L * T  +  L**2 * S  +  Q
    T = 2 * N * (4*H*H + 2*H*I)      per token: Q, K, V and output projections, the MLP
    S = 4 * N * A * D                attention: Q @ K^T and weights @ V, each 2*L*L*D per head
    Q = sum of 2 * in * out          per sequence: the layers outside the blocks (pooler,
                                     classifier, the runner's linear head)

A batch of ``B`` rows padded to ``W`` tokens computes ``B * F(W)`` (padding positions go
through every product; the attention kernels compute all ``W*W`` scores). So:

* **real-token FLOPs** = ``sum over inputs of F(L_i)`` with ``L_i`` the input's tokens
  after truncation: the work the inputs need;
* **padded FLOPs** = ``sum over batches of B * F(W)``: the work the model did.

Their difference is the padding waste. The achieved rates are these over the measured
window's seconds (``measured_s``): tokenizing and the host work between batches are inside
that window, so a rate is what the whole runner achieved, not the matrix units alone.

**Generation** (the decoders :mod:`toolkit.planner.memory` knows: Llama, Mistral, Qwen2).
One forward pass of ``q`` new tokens over ``c`` keys (the cache and themselves) costs
``q * T + q * c * S + Q`` with::

    T = 2 * N * (H*A*D + 2*H*K*D + A*D*H + 3*H*I)   per token: Q, K, V (K heads of size D,
                                                     narrower under grouped-query attention)
                                                     and output projections, the gated MLP
    S = 4 * N * A * D                               attention per query-key pair: Q @ K^T and
                                                     weights @ V over all A query heads (the
                                                     K/V heads are shared, not fewer products)
    Q = 2 * H * V                                   the lm_head, on one position per pass:
                                                     ``generate`` asks for the last position's
                                                     logits only (``logits_to_keep=1``)

A prompt of ``P`` tokens generating ``G`` tokens runs a prefill (``q = c = P``, which gives
the first token) and ``G - 1`` decode steps (``q = 1``, ``c = P + j`` at step ``j``)::

    F(P, G) = (P + G - 1) * T  +  (P**2 + sum_{j=1}^{G-1} (P + j)) * S  +  G * Q

The prefill counts the whole ``P * P`` square, not the causal half: that is what the kernels
are asked (a padding mask makes the attention a masked full one; torch's counter counts
flash and memory-efficient SDPA as full squares too). So:

* **real-token FLOPs** = ``sum over outputs of F(P_i, G_i)``, ``P_i`` the prompt's tokens
  after truncation, ``G_i`` the output's tokens (up to its end-of-sequence token);
* **padded FLOPs** = ``sum over batches of B * F(W, G)``, ``W`` the batch's padded width and
  ``G`` the tokens ``generate`` produced for the batch: a row that ended early keeps decoding
  until the batch's last does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolkit.errors import UsageError
from toolkit.planner.memory import DECODERS, ENCODERS, shape_from_mapping

#: A module inside a repeated block (``encoder.layer.3.attention...``): counted per token.
_IN_BLOCK = re.compile(r"(^|\.)\d+(\.|$)")


@dataclass(frozen=True)
class Cost:
    """FLOPs of one forward pass: ``per_token * L + per_square * L**2 + per_sequence``."""

    per_token: int
    per_square: int
    per_sequence: int
    formula: str

    def sequence(self, length: int) -> int:
        """FLOPs of one sequence of ``length`` tokens."""
        return self.per_token * length + self.per_square * length * length + self.per_sequence

    def total(self, sequences: int, tokens: int, squares: int) -> int:
        """FLOPs of ``sequences`` sequences holding ``tokens`` tokens in all, the sum of their
        squared lengths being ``squares``."""
        return self.per_token * tokens + self.per_square * squares + self.per_sequence * sequences


def cost_from_config(
    config: Mapping[str, Any], head: list[tuple[int, int]], *, generating: bool = False
) -> Cost:
    """The :class:`Cost` of a model whose ``config.json`` is ``config``, with the linear
    layers outside its blocks ``head`` as (in, out) pairs: an encoder's forward pass, or with
    ``generating`` a decoder's pass during generation (``per_square`` then per query-key pair,
    ``per_sequence`` per pass: see the module's formula).

    Raises UsageError for a model type without a formula here (a decoder outside
    generation: its causal attention and per-token heads are not counted; an encoder asked
    to generate) or a config missing sizes.
    """
    kind = config.get("model_type")
    if generating and kind not in DECODERS:
        raise UsageError(
            f"model_type {kind!r}: generation FLOPs are counted for decoders only "
            f"({', '.join(sorted(DECODERS))})",
            hint="utilisation stays empty",
        )
    if not generating and kind not in ENCODERS:
        raise UsageError(
            f"model_type {kind!r}: FLOPs are counted for encoders only "
            f"({', '.join(sorted(ENCODERS))})",
            hint="utilisation stays empty",
        )
    shape = shape_from_mapping(config)
    h, i, a, d, n = shape.hidden, shape.intermediate, shape.heads, shape.head_dim, shape.layers
    per_token = 2 * n * sum(fan_in * fan_out for fan_in, fan_out in shape.linear_dims())
    per_square = 4 * n * a * d
    per_sequence = sum(2 * fan_in * fan_out for fan_in, fan_out in head)
    heads = " + ".join(f"2*{fan_in}*{fan_out}" for fan_in, fan_out in head) or "0"
    if generating:
        return Cost(
            per_token,
            per_square,
            per_sequence,
            (
                f"F(P, G) = {per_token:,}*(P+G-1) + {per_square:,}*(P^2 + sum_j (P+j)) + "
                f"{per_sequence:,}*G: per token 2*N*(H*A*D + 2*H*K*D + A*D*H + 3*H*I) with N={n}, "
                f"H={h}, A={a}, K={shape.kv_heads}, D={d}, I={i}; attention 4*N*A*D per "
                f"query-key pair; per pass {heads}"
            ),
        )
    formula = (
        f"F(L) = {per_token:,}*L + {per_square:,}*L^2 + {per_sequence:,}: per token "
        f"2*N*(4*H*H + 2*H*I) with N={n}, H={h}, I={i}; attention 4*N*A*D with A={a}, "
        f"D={d}; per sequence {heads}"
    )
    return Cost(per_token, per_square, per_sequence, formula)


@dataclass(frozen=True)
class Passes:
    """What one row's generation runs: forward passes, new tokens over them, and query-key
    pairs (the ``tokens``, ``squares`` and ``sequences`` of :meth:`Cost.total`)."""

    forwards: int
    tokens: int
    pairs: int


def generation_passes(prompt: int, generated: int) -> Passes:
    """The passes of a ``prompt``-token row that generates ``generated`` tokens: a prefill,
    then a decode step per token after the first (none is run after the last)."""
    steps = max(generated, 1) - 1
    return Passes(
        forwards=steps + 1,
        tokens=prompt + steps,
        pairs=prompt * prompt + steps * prompt + steps * (steps + 1) // 2,
    )


def _config_of(module: Any) -> Any:
    """The transformers config inside the runner's module (compiled or not), or None."""
    for sub in module.modules():
        config = getattr(sub, "config", None)
        if config is not None and hasattr(config, "to_dict"):
            return config
    return None


def head_linears(module: Any) -> list[tuple[int, int]]:
    """(in, out) of every linear layer outside the repeated blocks: pooler, classifier,
    head. Dynamic-int8 linears count too (their products are still computed)."""
    found = []
    for name, sub in module.named_modules():
        fan_in, fan_out = getattr(sub, "in_features", None), getattr(sub, "out_features", None)
        if isinstance(fan_in, int) and isinstance(fan_out, int) and not _IN_BLOCK.search(name):
            found.append((fan_in, fan_out))
    return found


def cost_of(module: Any, *, generating: bool = False) -> tuple[Cost | None, str | None]:
    """The loaded module's :class:`Cost` (a decoder's generation with ``generating``), or
    None with the reason it cannot be counted."""
    config = _config_of(module)
    if config is None:
        return None, "no transformers config in the model: FLOPs unknown"
    try:
        return cost_from_config(config.to_dict(), head_linears(module), generating=generating), None
    except UsageError as exc:
        return None, f"FLOPs unknown: {exc.message}"
