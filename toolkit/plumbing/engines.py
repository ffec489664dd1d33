"""The engines a variant can name, and whether this machine has them (stdlib only).

A Variants row's ``engine`` is ``torch`` (blank reads as torch: every workbook of
layout 1-4 was measured by torch), ``onnxruntime``, ``ctranslate2``, or
``python:MODULE:CALLABLE`` (a user's own predictor), or ``openai-http`` (an endpoint
measured as it is served, Protocol task ``serving``). Nothing here imports an
engine: ``validate`` and ``iteralab env`` ask the installed distributions'
metadata, so a missing engine is a finding with its pip command, never an
ImportError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from typing import Any

TORCH = "torch"
ONNXRUNTIME = "onnxruntime"
CTRANSLATE2 = "ctranslate2"
#: An OpenAI-compatible HTTP endpoint (vLLM, SGLang, TGI, llama.cpp, transformers serve):
#: the variant's model_path is its base URL, the served model's name after a "#".
OPENAI_HTTP = "openai-http"
PYTHON_PREFIX = "python:"


@dataclass(frozen=True)
class Engine:
    """A named engine: the distributions it needs and how to install them."""

    name: str
    #: Distributions whose versions say what ran (the first is the engine itself).
    distributions: tuple[str, ...]
    #: The Protocol tasks it runs.
    tasks: tuple[str, ...]
    install: str


ENGINES = {
    TORCH: Engine(
        TORCH,
        ("torch", "transformers"),
        ("classification", "generation"),
        "pip install torch==2.13.0 'iteragpu-lab[runner]'",
    ),
    ONNXRUNTIME: Engine(
        ONNXRUNTIME,
        ("onnxruntime", "onnx", "onnxscript"),
        ("classification",),
        "pip install 'iteragpu-lab[onnx]'",
    ),
    CTRANSLATE2: Engine(
        CTRANSLATE2, ("ctranslate2",), ("generation",), "pip install 'iteragpu-lab[ctranslate2]'"
    ),
    OPENAI_HTTP: Engine(
        OPENAI_HTTP, ("httpx",), ("serving",), "pip install 'iteragpu-lab[serving]'"
    ),
}
_PYTHON = re.compile(r"^python:([A-Za-z_][\w.]*):([A-Za-z_]\w*)$")


def engine_of(variant: dict[str, Any]) -> str:
    """The variant's engine as the runner reads it: blank is ``torch``."""
    value = variant.get("engine")
    text = str(value).strip() if value is not None else ""
    return text or TORCH


def python_target(engine: str) -> tuple[str, str] | None:
    """``(module, callable)`` of a ``python:MODULE:CALLABLE`` engine, None for a named one."""
    found = _PYTHON.match(engine)
    return (found.group(1), found.group(2)) if found else None


def version(distribution: str) -> str | None:
    """The installed version of ``distribution``, None when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def missing(name: str) -> list[str]:
    """The distributions engine ``name`` needs that are not installed (empty: ready)."""
    return [d for d in ENGINES[name].distributions if version(d) is None]


def problem(variant: dict[str, Any], task: str) -> tuple[str, str] | None:
    """Why this machine cannot run the variant's engine, as (message, what to do); None
    when it can (a ``python:`` module is looked for where the runner looks: on sys.path,
    then beside the workbook, so only its spelling is checked here)."""
    engine = engine_of(variant)
    if engine.startswith(PYTHON_PREFIX):
        if python_target(engine) is None:
            return (
                f"engine {engine!r} is not python:MODULE:CALLABLE",
                "write e.g. python:austen_tfidf:Predictor (docs/engines.md)",
            )
        if task != "classification":
            return (
                f"a python: predictor runs the classification task, not {task}",
                "use torch or ctranslate2 for generation",
            )
        return None
    known = ENGINES.get(engine)
    if known is None:
        names = ", ".join(ENGINES)
        return (
            f"engine {engine!r} is not one the runner knows",
            f"use one of {names} (blank is torch), or python:MODULE:CALLABLE",
        )
    if task not in known.tasks:
        return (
            f"engine {engine} does not run the {task} task",
            f"{engine} runs {', '.join(known.tasks)}; use "
            f"{OPENAI_HTTP if task == 'serving' else TORCH} for {task}",
        )
    absent = missing(engine)
    if absent:
        return (
            f"engine {engine} is not installed here ({', '.join(absent)} missing)",
            known.install,
        )
    return None


def installed() -> list[tuple[str, str]]:
    """Each named engine with its versions, or how to install it (for ``iteralab env``)."""
    rows = []
    for name, engine in ENGINES.items():
        absent = missing(name)
        if absent:
            rows.append((name, f"not installed ({engine.install})"))
        else:
            rows.append((name, ", ".join(f"{d} {version(d)}" for d in engine.distributions)))
    rows.append(("python:", "a predictor of your own: python:MODULE:CALLABLE (docs/engines.md)"))
    return rows
