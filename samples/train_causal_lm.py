#!/usr/bin/env python3
"""Train the sample causal language model of the generation task on samples/calibration.jsonl.

Tokenizer: byte-level BPE (``tokenizers``), 2,048 entries, trained on the calibration texts
only, with ``<|endoftext|>`` as beginning, end and padding token.
Model: Llama architecture (transformers ``LlamaForCausalLM``, a family the VRAM planner
reads), 2 layers, width 128, 4 query heads sharing 2 key/value heads, gated MLP 344, context
(max_position_embeddings) 128 tokens, tied input/output embeddings: about 0.6 M
parameters, ~2.5 MB in float32.  Trained from a fixed seed with AdamW on packed 64-token
windows of the calibration texts (each paragraph followed by ``<|endoftext|>``), fp32 on the
CPU, one thread and deterministic algorithms, so a rebuild gives the same files (checked
here: identical sha256, as recorded in training.json; other torch or tokenizers versions
may differ).  The comparison corpus
(samples/corpus.jsonl) is held out: its mean token loss before and after training is recorded in
samples/causal_lm/training.json, to show the weights learned something (random weights are
not a sample model).

Writes samples/causal_lm/ as a standard Hugging Face folder (config.json,
generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json) that
``AutoModelForCausalLM.from_pretrained`` loads offline, plus training.json.

Usage:
    python samples/train_causal_lm.py            # ~4 min on 2 busy CPU cores
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "causal_lm"
SEED = 20260
VOCAB_SIZE = 2048
CONTEXT = 128
WINDOW = 64
BATCH = 32
STEPS = 600
LR = 3e-3
EOS = "<|endoftext|>"


def read_texts(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def train_tokenizer(texts: list[str]):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=[EOS], show_progress=False
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token=EOS,
        eos_token=EOS,
        unk_token=EOS,
        pad_token=EOS,
        model_max_length=CONTEXT,
    )
    return tok


def packed_windows(tok, texts: list[str]):
    """All texts joined by EOS, cut into WINDOW-token rows (the tail that does not fill one
    is dropped)."""
    import torch

    ids: list[int] = []
    for t in texts:
        ids.extend(tok(t)["input_ids"])
        ids.append(tok.eos_token_id)
    n = len(ids) // WINDOW
    return torch.tensor(ids[: n * WINDOW], dtype=torch.long).view(n, WINDOW)


def mean_loss(model, rows) -> float:
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, rows.shape[0], 64):
            batch = rows[i : i + 64]
            out = model(input_ids=batch, labels=batch)
            k = batch.numel() - batch.shape[0]  # predicted positions
            total += float(out.loss) * k
            count += k
    return total / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)

    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    random.seed(SEED)
    torch.use_deterministic_algorithms(True)

    started = time.monotonic()
    train_texts = read_texts(HERE / "calibration.jsonl")
    held_out_texts = read_texts(HERE / "corpus.jsonl")
    tok = train_tokenizer(train_texts)
    train_rows = packed_windows(tok, train_texts)
    held_rows = packed_windows(tok, held_out_texts)

    config = LlamaConfig(
        vocab_size=len(tok),
        max_position_embeddings=CONTEXT,
        hidden_size=128,
        intermediate_size=344,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    n_params = sum(p.numel() for p in model.parameters())
    loss_before = mean_loss(model, held_rows)

    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=args.steps)
    gen = torch.Generator().manual_seed(SEED)
    model.train()
    for step in range(args.steps):
        idx = torch.randint(0, train_rows.shape[0], (BATCH,), generator=gen)
        batch = train_rows[idx]
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  train loss {float(loss.detach()):.3f}", file=sys.stderr)
    loss_after = mean_loss(model, held_rows)
    model.eval()

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))

    # Reload as a user would and check the saved weights give the same held-out loss.
    from transformers import AutoModelForCausalLM

    again = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    reloaded = mean_loss(again, held_rows)
    if abs(reloaded - loss_after) > 1e-4:
        raise SystemExit(f"reloaded model gives held-out loss {reloaded}, trained {loss_after}")

    files = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.iterdir())
        if p.is_file() and p.name != "training.json"
    }
    record = {
        "format": "iteragpu-causal-lm/1",
        "architecture": "LlamaForCausalLM",
        "parameters": n_params,
        "context_tokens": CONTEXT,
        "vocab_size": len(tok),
        "seed": SEED,
        "steps": args.steps,
        "batch": BATCH,
        "window_tokens": WINDOW,
        "learning_rate": LR,
        "train": {"file": "calibration.jsonl", "windows": int(train_rows.shape[0])},
        "held_out": {"file": "corpus.jsonl", "windows": int(held_rows.shape[0])},
        "held_out_loss_before": round(loss_before, 4),
        "held_out_loss_after": round(loss_after, 4),
        "held_out_perplexity_after": round(math.exp(loss_after), 2),
        "versions": {
            "torch": version("torch"),
            "transformers": version("transformers"),
            "tokenizers": version("tokenizers"),
        },
        "files": files,
        "seconds": round(time.monotonic() - started, 1),
    }
    (out / "training.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(
        f"{n_params} parameters; held-out loss {loss_before:.3f} -> {loss_after:.3f} "
        f"(perplexity {math.exp(loss_after):.1f}); {record['seconds']} s; wrote {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
