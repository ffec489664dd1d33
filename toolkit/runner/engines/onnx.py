"""Classification by onnxruntime: the variant's torch model exported once, run by a session.

Exporter: ``torch.onnx.export(..., dynamo=True)`` (torch.export + onnxscript), not
optimum-onnx and not the TorchScript exporter. The sample (and any ``head_path``
variant) is an encoder plus the toolkit's own linear head, a module optimum's
exporters do not know; torch's exporter takes the very module the torch variant
runs, so the ONNX graph and the reference compute the same function. The TorchScript
exporter is deprecated since torch 2.9 and traces Python branches on tensor
shapes as constants (transformers' masking code has one); the dynamo exporter
keeps batch and sequence dynamic. Cost: about 20 s on two cores, once per model,
precision and toolchain (the cache), inside the first attempt's load_s.

``quantization = dynamic-int8`` is onnxruntime's ``quantize_dynamic`` (int8 weights,
activations quantized per call) over the fp32 export; precision fp16 exports the
model in float16 (run it on the CUDA provider: onnxruntime's CPU kernels lack most
float16 operators, and a CPU attempt then fails with onnxruntime's own message).

The session is set up as a deployer would: all graph optimisations, intra-op
threads = the attempt's ``--threads``, one inter-op thread, sequential execution;
providers CUDA then CPU on a cuda variant, CPU alone otherwise.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch

from toolkit.errors import ModelError
from toolkit.evidence import corpus
from toolkit.plumbing import engines
from toolkit.runner.engines import cache
from toolkit.runner.engines import model as torch_model
from toolkit.runner.engines.contract import Batch, Tokenized
from toolkit.runner.instruments import flops

EXPORTED = "model.onnx"
OPSET = 18
CPU_PROVIDER = "CPUExecutionProvider"
CUDA_PROVIDER = "CUDAExecutionProvider"


class _Positional(torch.nn.Module):
    """The classifier called with the tokenizer's tensors by position: the exported graph's
    inputs are exactly the tokenizer's outputs, whatever the module's keyword arguments."""

    def __init__(self, module: Any, names: list[str]) -> None:
        super().__init__()
        self.module, self.names = module, names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return self.module(**dict(zip(self.names, tensors, strict=True)))


def providers_for(device: str, available: list[str]) -> list[str]:
    """The providers a session of ``device`` uses, best first; ModelError when onnxruntime
    here has no CUDA provider for a cuda variant."""
    if device != "cuda":
        return [CPU_PROVIDER]
    if CUDA_PROVIDER not in available:
        raise ModelError(
            f"onnxruntime here offers {', '.join(available)}: no "
            f"{CUDA_PROVIDER} for a cuda variant",
            hint="pip install onnxruntime-gpu (instead of onnxruntime) on the GPU machine",
        )
    return [CUDA_PROVIDER, CPU_PROVIDER]


@contextmanager
def _quiet() -> Iterator[None]:
    """The exporter's and quantizer's own chatter (missing torchvision ops, deprecations, a
    pre-processing hint) kept out of the campaign's output; errors still raise."""
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def _export(
    source: torch_model.LoadedModel, folder: Path, fp32_file: Path | None, quantize: bool
) -> None:
    """Write ``folder/model.onnx``: the source module exported, or ``fp32_file`` quantized."""
    with _quiet():
        _export_quietly(source, folder, fp32_file, quantize)


def _export_quietly(
    source: torch_model.LoadedModel, folder: Path, fp32_file: Path | None, quantize: bool
) -> None:
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        assert fp32_file is not None
        quantize_dynamic(str(fp32_file), str(folder / EXPORTED), weight_type=QuantType.QInt8)
        return
    batch = source.tokenizer(
        ["a short text", "a somewhat longer text for the export"], padding=True, return_tensors="pt"
    )
    names = list(batch.keys())
    rows, tokens = torch.export.Dim("batch"), torch.export.Dim("sequence")
    with torch.inference_mode(False), torch.no_grad():
        program = torch.onnx.export(
            _Positional(source.module, names),
            tuple(batch[n] for n in names),
            input_names=names,
            output_names=["logits"],
            dynamic_shapes=(tuple({0: rows, 1: tokens} for _ in names),),
            dynamo=True,
            opset_version=OPSET,
            verbose=False,
        )
        assert program is not None
        program.save(str(folder / EXPORTED))


def _settings(
    source: torch_model.LoadedModel, variant: dict[str, Any], quantized: bool
) -> dict[str, object]:
    return {
        "source": source.model_revision,
        "tokenizer": source.tokenizer_revision,
        "precision": variant["precision"],
        "quantization": "dynamic-int8" if quantized else "none",
        "opset": OPSET,
        "exporter": "torch.onnx dynamo",
        "versions": {d: engines.version(d) for d in ("torch", "onnx", "onnxscript", "onnxruntime")},
    }


def exported(
    source: torch_model.LoadedModel, variant: dict[str, Any], base: Path
) -> tuple[Path, list[str], float]:
    """The cached ONNX file of the variant (exported, then quantized when asked), the
    notes saying whether each step was built now or reused, and the seconds of building."""
    fp32 = cache.cached(
        base,
        "onnxruntime",
        _settings(source, variant, False),
        lambda folder: _export(source, folder, None, False),
    )
    notes = [fp32.note(f"onnx export ({variant['precision']})")]
    if variant.get("quantization") != "dynamic-int8":
        return fp32.folder / EXPORTED, notes, fp32.seconds
    int8 = cache.cached(
        base,
        "onnxruntime",
        _settings(source, variant, True),
        lambda folder: _export(source, folder, fp32.folder / EXPORTED, True),
    )
    return (
        int8.folder / EXPORTED,
        notes + [int8.note("onnxruntime dynamic-int8 quantization")],
        fp32.seconds + int8.seconds,
    )


class OnnxClassifier(Tokenized):
    """The onnxruntime engine of classification (a :class:`engines.contract.Predictor`): the
    torch runner's tokenisation, padding and truncation, the session in place of the module.
    """

    tokens_reason: str | None = None
    attention_backend = "onnxruntime graph"
    #: Seconds this load spent building the export (0 when the cache had it).
    conversion_s = 0.0

    def __init__(
        self,
        variant: dict[str, Any],
        session: Any,
        source: torch_model.LoadedModel,
        engine: str,
        artifact: str,
        notes: list[str],
    ) -> None:
        self.session = session
        self.inputs = [i.name for i in session.get_inputs()]
        self.tokenizer, self.labels = source.tokenizer, source.labels
        self.model_revision = source.model_revision
        self.tokenizer_revision = source.tokenizer_revision
        # The graph computes the source module's function: the same products (runner.flops).
        self.cost = flops.cost_of(source.module)
        self.device = torch.device(str(variant["device"]))
        self.set_padding(variant)
        self.engine: str = engine
        self.engine_artifact: str | None = artifact
        self.engine_notes: list[str] = notes

    def predict(
        self, items: Sequence[corpus.Item], timer: AbstractContextManager[Any] | None = None
    ) -> Batch:
        inputs = self.encode([i.text for i in items], "np")
        mask = inputs["attention_mask"]
        feed = {name: inputs[name] for name in self.inputs}
        with timer if timer is not None else nullcontext():
            logits = self.session.run(None, feed)[0]
        best = np.asarray(logits).argmax(axis=-1).tolist()
        return Batch(
            [self.labels[b] for b in best], [int(n) for n in mask.sum(axis=1)], int(mask.shape[1])
        )

    def warm(self, rows: int, width: int) -> None:
        """Run the graph once on a synthetic ``rows`` x ``width`` batch (no corpus text)."""
        inputs = self.synthetic(rows, width, "np")
        self.session.run(None, {name: inputs[name] for name in self.inputs})

    def flop_cost(self) -> tuple[flops.Cost | None, str | None]:
        return self.cost

    def synchronize(self) -> None:
        """Nothing to wait for: ``session.run`` returns host arrays."""

    def close(self) -> None:
        self.session = None


def load(variant: dict[str, Any], base: Path) -> OnnxClassifier:
    """The variant's classifier as an onnxruntime session (ModelError when it cannot run);
    intra-op threads = the attempt's (``--threads``, already torch's in this process)."""
    import onnxruntime as ort

    threads = torch.get_num_threads()
    if variant["precision"] == "bf16":
        raise ModelError(
            f"variant {variant['variant_id']}: onnxruntime has no bf16 classification path here",
            hint="declare fp32 (or fp16 on cuda)",
        )
    providers = providers_for(str(variant["device"]), ort.get_available_providers())
    # The export starts from the torch model on the CPU, fp32 (or fp16), never quantized:
    # onnxruntime quantizes the exported graph itself.
    source_variant = {**variant, "device": "cpu", "quantization": "none", "compile": "no"}
    source = torch_model.load(source_variant, base)
    path, notes, built_s = exported(source, variant, base)
    notes.append(
        "load phase: the torch model is loaded once (the export's source, its "
        "labels and FLOP count), then dropped; host_rss_peak_bytes includes it"
    )
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise ModelError(
            f"onnxruntime cannot open {path.name} for variant {variant['variant_id']}: {exc}",
            hint="fp16 runs on the CUDA provider; on the CPU declare fp32",
        ) from exc
    used = session.get_providers()
    artifact = (
        f"onnx sha256 {cache.sha256_of(path)}; providers {', '.join(used)}; "
        f"graph optimisation all, intra-op threads {threads}"
    )
    # The classifier keeps the tokenizer and labels; the torch weights leave with ``source``.
    loaded = OnnxClassifier(
        variant, session, source, f"onnxruntime {ort.__version__}", artifact, notes
    )
    loaded.conversion_s = built_s
    return loaded
