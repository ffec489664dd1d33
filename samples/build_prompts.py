#!/usr/bin/env python3
"""Build samples/prompts.jsonl, the generation task's prompts, from samples/corpus.jsonl.

Each prompt is the opening words of one paragraph of the comparison corpus (held out from the
training of samples/causal_lm/, see train_causal_lm.py); its ``reference`` is how the
paragraph goes on (up to REFERENCE_WORDS words), for chrF. Paragraphs are picked by the
SHA-256 of their id (no randomness to seed), and prompt lengths cycle through
PROMPT_WORDS so that every length stratum holds prompts (R5): the runner cuts strata by
prompt tokens with the Protocol's stratum_bounds.

Fields: id (the paragraph's id), text (the prompt: the field every corpus has), reference,
source (the paragraph's label, a novel, usable as a subgroup).

Usage:
    python samples/build_prompts.py          # rewrites samples/prompts.jsonl
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COUNT = 200
PROMPT_WORDS = (4, 6, 9, 14, 20, 30)
REFERENCE_WORDS = 16


def build(source: Path) -> list[dict[str, str]]:
    with source.open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    ranked = sorted(records, key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
    out: list[dict[str, str]] = []
    for record in ranked:
        words = record["text"].split()
        k = PROMPT_WORDS[len(out) % len(PROMPT_WORDS)]
        if len(words) < k + 4:  # keep at least a few words of reference
            continue
        out.append(
            {
                "id": record["id"],
                "text": " ".join(words[:k]),
                "reference": " ".join(words[k : k + REFERENCE_WORDS]),
                "source": record["label"],
            }
        )
        if len(out) == COUNT:
            break
    return out


def main() -> int:
    rows = build(HERE / "corpus.jsonl")
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (HERE / "prompts.jsonl").write_text(text, encoding="utf-8")
    print(f"wrote {len(rows)} prompts to {HERE / 'prompts.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
