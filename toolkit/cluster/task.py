"""One attempt on a cluster node: what the Ray task runs, in a fresh worker process.

The node never sees the workbook. It receives the attempt's spec, the corpus (from
the object store, put there once by the driver), the workbook-relative model and
head folders it needs (packed once, :mod:`toolkit.cluster.bundle`) and the
reference's predictions; it lays them out in a private staging folder as they lie
beside the workbook, checks the corpus fingerprint and, for a cuda variant, that
the GPU is the one declared; then it runs the same
:func:`toolkit.runner.attempt.run_attempt` as a local fresh worker, and returns the
record with the predictions file's bytes and SHA-256. The driver writes them; the
staging folder is removed.

A node that cannot run the attempt as declared (another toolkit version, another
corpus, no such GPU) answers ``refused`` with the reason instead of a record: that
is the node's problem, not the variant's, so it never becomes a failed row.
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import socket
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import ray

from toolkit import __version__
from toolkit.cluster import bundle
from toolkit.errors import UsageError
from toolkit.evidence import corpus
from toolkit.plumbing.atomic import write_bytes
from toolkit.runner.driver.campaign import check_devices

#: The staging folder's prefix (under the node's temporary folder).
STAGING_PREFIX = "iteralab-attempt-"


def _depth(paths: list[str]) -> int:
    """How far up the relative paths climb ('../corpus.jsonl' climbs 1): the staging base
    sits that deep, so every path stays inside the staging folder."""
    deepest = 0
    for path in paths:
        level = 0
        for part in PurePosixPath(path.replace("\\", "/")).parts:
            level += -1 if part == ".." else 0 if part == "." else 1
            deepest = max(deepest, -level)
    return deepest


def _node() -> dict[str, Any]:
    context = ray.get_runtime_context()
    return {"node_id": context.get_node_id(), "host": socket.gethostname(), "pid": os.getpid()}


def _gpu_refusal(variant: dict[str, Any]) -> str | None:
    """Why this node cannot run a cuda variant as declared (None when it can): the local
    run's own check (CUDA present, the declared card and memory)."""
    try:
        check_devices([variant])
    except UsageError as exc:
        return exc.message
    return None


def run_on_node(
    spec_json: str,
    corpus_bytes: bytes,
    folders: dict[str, Any],
    reference: bytes | None,
    driver_version: str,
) -> dict[str, Any]:
    """Run one attempt here; return ``record``, ``predictions`` (bytes or None) and
    ``predictions_sha256``, or ``refused`` with its reason; ``node`` says where it ran.

    ``folders`` maps a Variants model_path/head_path to the object-store reference of
    its packed folder; the workbook's own name is kept so paths in the record are
    those the driver writes.
    """
    node = _node()
    if driver_version != __version__:
        return {
            "refused": f"this node runs iteragpu-lab {__version__}, the driver {driver_version}",
            "node": node,
        }
    # Ray pins a task to OMP_NUM_THREADS=1; a local attempt runs with torch's default
    # threads (or --threads, which the spec carries).
    os.environ.pop("OMP_NUM_THREADS", None)
    from toolkit.runner.attempt import AttemptSpec, InterruptGuard, run_attempt  # torch

    spec = AttemptSpec.from_json(spec_json)
    protocol = spec.protocol
    book = Path(spec.workbook).name
    relative = [str(protocol["corpus_path"]), *folders]
    if spec.reference:
        relative.append(str(spec.reference["predictions_path"]))
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX))
    try:
        base = staging.joinpath("book", *(["up"] * _depth(relative)))
        base.mkdir(parents=True)
        corpus_file = base / str(protocol["corpus_path"])
        corpus_file.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(corpus_file, corpus_bytes)
        found = corpus.fingerprint(corpus.read_corpus(corpus_file))
        if found != spec.corpus_sha256:
            return {
                "refused": f"the corpus that reached this node has fingerprint "
                f"{found[:12]}, the campaign's is {spec.corpus_sha256[:12]}",
                "node": node,
            }
        for name, ref in folders.items():
            bundle.unpack(ray.get(ref), base / name)
        if spec.reference and reference is not None:
            ref_file = base / str(spec.reference["predictions_path"])
            ref_file.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(ref_file, reference)
        if spec.variant.get("device") == "cuda":
            refusal = _gpu_refusal(spec.variant)
            if refusal:
                return {"refused": refusal, "node": node}
        spec.workbook = str(base / book)
        with InterruptGuard() as guard:  # ray.cancel arrives as a KeyboardInterrupt
            record = run_attempt(spec, lambda event: None, guard)
        data = None
        if record["attempt"].get("predictions_path"):
            data = (base / str(record["attempt"]["predictions_path"])).read_bytes()
        return {
            "record": record,
            "predictions": data,
            "predictions_sha256": hashlib.sha256(data).hexdigest() if data else None,
            "node": node,
            "staged_in": str(staging),
        }
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        # The worker ends after this task (max_calls=1), and Python's exit would first
        # garbage-collect torch's whole object graph: about 1 CPU-second per attempt, taken
        # from the attempt beside it on a shared machine or from the next one's start. Frozen
        # objects are skipped (the local fresh worker leaves with os._exit for the same
        # reason); nothing here is used once the result is returned.
        gc.freeze()
