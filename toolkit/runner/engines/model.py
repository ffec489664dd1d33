"""Resolve and load a variant's model: a classifier folder, or an encoder plus a linear head.

``model_path`` is ``package:NAME[/SUB]`` (an installed package's folder, ``SUB``
defaulting to ``model``), a local Hugging Face folder (relative to the
workbook), or a hub id (downloaded only when the machine is online and
``HF_HUB_OFFLINE`` is unset). ``head_path`` is an optional folder holding
``head.json`` (format ``iteragpu-linear-head/1``) and ``head.safetensors``
(``weight`` (classes, hidden), ``bias`` (classes,)); the logits are then
``l2norm(meanpool(last_hidden_state, attention_mask)) @ weight.T + bias``.

Revisions are file hashes (R3): the model revision covers the weight and
config files (and the head's), the tokenizer revision the tokenizer files.
The head's recorded encoder hashes must match the encoder folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn
from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

from toolkit.errors import ModelError
from toolkit.planner.models import file_hashes, resolve_model_path, tree_hash
from toolkit.runner.instruments import compilation, precision

HEAD_FORMAT = "iteragpu-linear-head/1"
TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "special_tokens_map.json",
        "added_tokens.json",
        "spiece.model",
        "sentencepiece.bpe.model",
        "tokenizer.model",
    }
)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


class ModelFiles(NamedTuple):
    """A variant's model folder and the hashes that identify it across machines."""

    folder: Path
    hashes: dict[str, str]  # relative file name -> SHA-256
    weights_revision: str  # every file but the tokenizer's
    tokenizer_revision: str


def model_files(model_path: str, base: Path) -> ModelFiles:
    """The local folder of a variant's model_path (a folder, ``package:``, or a hub id in
    the local cache) and its revisions: what is compared across machines (R4)."""
    folder, hub_id = resolve_model_path(model_path, base)
    if folder is None:
        folder = _hub_folder(str(hub_id))
    hashes = file_hashes(folder)
    tokenizer = tree_hash({k: v for k, v in hashes.items() if Path(k).name in TOKENIZER_FILES})
    weights = tree_hash({k: v for k, v in hashes.items() if Path(k).name not in TOKENIZER_FILES})
    return ModelFiles(folder, hashes, weights, tokenizer)


def _hub_folder(hub_id: str) -> Path:
    from huggingface_hub import snapshot_download

    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    try:
        return Path(snapshot_download(hub_id, local_files_only=offline))
    except Exception as exc:  # noqa: BLE001 - any hub failure is the same story for the user
        raise ModelError(
            f"model_path {hub_id!r}: not in the local cache and not downloaded "
            f"({type(exc).__name__})",
            hint="download it once online (unset HF_HUB_OFFLINE), or point "
            "model_path at a local folder",
        ) from exc


class HeadClassifier(nn.Module):
    """Encoder, mean pooling over the attention mask, L2 norm, linear head."""

    def __init__(self, encoder: nn.Module, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            self.head.weight.copy_(weight)
            self.head.bias.copy_(bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **extra: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, **extra
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        pooled = nn.functional.normalize(pooled, p=2, dim=1)
        return self.head(pooled)


class ClassifierLogits(nn.Module):
    """An AutoModelForSequenceClassification returning its logits tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**inputs).logits


@dataclass(kw_only=True)
class LoadedModel:
    """A model ready for inference and what the manifest says about it."""

    tokenizer: Any
    module: nn.Module
    labels: list[str]
    device: torch.device
    model_revision: str
    tokenizer_revision: str
    attention_backend: str
    folder: Path

    def __call__(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits for a batch already on the model's device."""
        return self.module(**inputs)


def _read_head(folder: Path) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor, str]:
    from safetensors.torch import load_file

    meta_path, tensors_path = folder / "head.json", folder / "head.safetensors"
    for needed in (meta_path, tensors_path):
        if not needed.is_file():
            raise ModelError(
                f"head_path {folder}: {needed.name} is missing",
                hint="a head folder holds head.json and head.safetensors",
            )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelError(f"{meta_path}: not JSON ({exc})", hint="restore head.json") from exc
    if meta.get("format") != HEAD_FORMAT:
        raise ModelError(
            f"{meta_path}: format {meta.get('format')!r}, expected {HEAD_FORMAT}",
            hint="this runner reads linear heads written by samples/train_head.py",
        )
    if meta.get("pooling", "mean") != "mean" or meta.get("normalize", "l2") != "l2":
        raise ModelError(
            f"{meta_path}: pooling {meta.get('pooling')!r} / normalize "
            f"{meta.get('normalize')!r}; the runner applies mean pooling and l2",
            hint="refit the head with mean pooling and L2 normalisation",
        )
    tensors = load_file(str(tensors_path))
    weight, bias = tensors.get("weight"), tensors.get("bias")
    labels = meta.get("labels") or []
    if (
        weight is None
        or bias is None
        or weight.ndim != 2
        or tuple(bias.shape) != (weight.shape[0],)
        or len(labels) != weight.shape[0]
    ):
        raise ModelError(
            f"{tensors_path}: expected weight (classes, hidden) and bias "
            f"(classes,) for {len(labels)} labels",
            hint="refit the head; labels in head.json follow the weight rows",
        )
    return meta, weight, bias, tree_hash(file_hashes(folder))


def read_head(
    head_path: str, base: Path, encoder_hashes: dict[str, str]
) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor, str]:
    """The head folder's metadata, weight, bias and revision; ModelError when a file is
    missing or wrong, or when the head was fitted on an encoder whose files (their SHA-256,
    recorded in head.json) differ from ``encoder_hashes``."""
    head_folder = Path(head_path).expanduser()
    head_folder = head_folder if head_folder.is_absolute() else base / head_folder
    if not head_folder.is_dir():
        raise ModelError(
            f"head_path {head_path!r}: no folder {head_folder}",
            hint="point head_path at the folder holding head.json and "
            "head.safetensors (relative to the workbook's folder)",
        )
    meta, weight, bias, head_hash = _read_head(head_folder)
    expected = (meta.get("encoder") or {}).get("files")
    if expected and expected != encoder_hashes:
        changed = sorted(
            k
            for k in set(expected) | set(encoder_hashes)
            if expected.get(k) != encoder_hashes.get(k)
        )
        raise ModelError(
            f"head {head_folder} was fitted on another encoder: files "
            f"differ from head.json ({', '.join(changed[:5])})",
            hint="use the encoder the head was fitted on, or refit it",
        )
    return meta, weight, bias, head_hash


def load(variant: dict[str, Any], base: Path) -> LoadedModel:
    """Load the variant's tokenizer and model on its device, precision and backend.

    Raises ModelError for a missing or inconsistent model or head, a CUDA
    variant without CUDA, an fp32 CUDA variant the environment forces into TF32,
    or a quantization the device does not support.
    """
    _quiet_transformers()
    device_name = variant["device"]
    if device_name == "cuda" and not torch.cuda.is_available():
        raise ModelError(
            f"variant {variant['variant_id']} runs on cuda, but torch sees no CUDA device",
            hint="run it on a GPU machine (`iteralab env` says what this one has)",
        )
    forced = precision.tf32_forced(os.environ)
    if device_name == "cuda" and variant["precision"] == "fp32" and forced:
        raise ModelError(
            f"variant {variant['variant_id']} is fp32, but {forced}",
            hint=f"unset {precision.FORCE_TF32} (torch reads it once per process) and run again",
        )
    device = torch.device(device_name)
    folder, hashes, model_hash, tokenizer_revision = model_files(str(variant["model_path"]), base)
    dtype = DTYPES[variant["precision"]]
    common = {
        "dtype": dtype,
        "attn_implementation": variant["attention_backend"],
        "local_files_only": True,
    }
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        if variant.get("head_path"):
            meta, weight, bias, head_hash = read_head(str(variant["head_path"]), base, hashes)
            encoder, info = AutoModel.from_pretrained(
                str(folder), output_loading_info=True, **common
            )
            # The pooler is never used (mean pooling): a checkpoint without one is whole.
            _refuse_new_weights(variant, folder, info, unused=("pooler.",))
            module: nn.Module = HeadClassifier(encoder, weight, bias).to(dtype)
            labels = [str(label) for label in meta["labels"]]
            model_revision = f"encoder {model_hash}; head {head_hash}"
        else:
            model, info = AutoModelForSequenceClassification.from_pretrained(
                str(folder), output_loading_info=True, **common
            )
            _refuse_new_weights(variant, folder, info)
            module = ClassifierLogits(model)
            id2label = model.config.id2label
            labels = [str(id2label[i]) for i in range(len(id2label))]
            model_revision = model_hash
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"model {folder}: cannot load ({type(exc).__name__}: {exc})",
            hint="check model_path/head_path; the folder needs config, weights and tokenizer files",
        ) from exc
    module.eval()
    if variant.get("quantization") == "dynamic-int8":
        if device.type != "cpu":
            raise ModelError(
                "dynamic-int8 quantization runs on the CPU only",
                hint="declare quantization none for a cuda variant",
            )
        from torch.ao.quantization import quantize_dynamic

        module = quantize_dynamic(module, {nn.Linear}, dtype=torch.qint8)
    module.to(device)
    backend = _attention_backend(module, variant["attention_backend"])
    if variant.get("compile") == "yes":
        module = compilation.compile_module(module)
    return LoadedModel(
        tokenizer=tokenizer,
        module=module,
        labels=labels,
        device=device,
        model_revision=model_revision,
        tokenizer_revision=tokenizer_revision,
        attention_backend=backend,
        folder=folder,
    )


def _refuse_new_weights(
    variant: dict[str, Any], folder: Path, info: dict[str, Any], unused: tuple[str, ...] = ()
) -> None:
    """ModelError when transformers initialised weights the checkpoint lacks (a classifier
    head on a bare encoder, a layer of another shape): its predictions would be random, and
    an accuracy of 0 would be measured as if it were the model's."""
    new = sorted(
        {str(k) for k in info.get("missing_keys") or ()}
        | {str(k[0] if isinstance(k, tuple) else k) for k in info.get("mismatched_keys") or ()}
    )
    new = [k for k in new if not k.startswith(unused)]
    if new:
        shown = ", ".join(new[:4]) + (f" and {len(new) - 4} more" if len(new) > 4 else "")
        raise ModelError(
            f"variant {variant['variant_id']}: model {folder} lacks trained weights for "
            f"{shown}: transformers initialised them at random, so its predictions "
            "would be noise",
            hint="point model_path at a classifier fine-tuned on your labels, or keep this "
            "encoder and give head_path a linear head fitted on your labels "
            "(`iteralab head fit`)",
        )


def _attention_backend(module: nn.Module, asked: str) -> str:
    """The attention implementation transformers really set (it can fall back)."""
    for sub in module.modules():
        config = getattr(sub, "config", None)
        actual = getattr(config, "_attn_implementation", None)
        if actual:
            return str(actual) if actual == asked else f"{actual} (asked {asked})"
    return asked
