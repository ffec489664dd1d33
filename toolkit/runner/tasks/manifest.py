"""The Manifest row's columns every kind of attempt fills alike, and its id."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from toolkit import layout
from toolkit.plumbing.clock import now_text
from toolkit.runner.engines.contract import ManifestFacts
from toolkit.runner.spec import AttemptSpec


def manifest_content(
    spec: AttemptSpec, loaded: ManifestFacts | None, seed: int | None
) -> dict[str, Any]:
    """The Manifest columns every kind of attempt fills alike: the variant's settings, the
    model's revisions (None when it was not loaded), the seeds and the process policy."""
    variant, protocol = spec.variant, spec.protocol
    return {
        "variant_id": variant["variant_id"],
        "corpus_path": protocol["corpus_path"],
        "model_revision": loaded.model_revision if loaded else None,
        "tokenizer_revision": loaded.tokenizer_revision if loaded else None,
        "precision": variant["precision"],
        "quantization": variant["quantization"],
        "compile": variant["compile"],
        "attention_backend": loaded.attention_backend if loaded else variant["attention_backend"],
        "padding": variant["padding"],
        "max_length": int(variant["max_length"]),
        "seeds": (
            f"torch.manual_seed({seed}); protocol seeds {protocol.get('seeds')}"
            if seed is not None
            else f"none set (protocol seeds {protocol.get('seeds')!r})"
        ),
        "process_policy": protocol.get("process_policy"),
    }


def manifest_id(content: dict[str, Any]) -> str:
    """The Manifest row's id: a hash of its content."""
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return "m-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def manifest_row(content: dict[str, Any], measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """Complete a Manifest row: ``manifest_id`` from its content and the ``measured``
    columns, ``recorded_at`` now.

    The peak probe varies from run to run, and an attempt's utilisation divides by the peak
    it measured (or reused): hashing it gives attempts that probed apart, or not at all,
    rows of their own, so each row shows the peak its attempts divided by.
    """
    hashed = dict(content)
    if measured:
        hashed["measured"] = measured
    row = {"manifest_id": manifest_id(hashed), "recorded_at": now_text()}
    row.update(content)
    row.update(measured or {})
    return {name: row.get(name) for name in layout.MANIFEST.names}
