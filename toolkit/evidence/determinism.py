"""The Protocol's determinism choices against the state each Manifest recorded (R17).

The Protocol's ``deterministic_algorithms`` and ``cudnn_benchmark`` (yes or no; blank leaves
torch as it is, as before layout 3) are applied by the runner at each attempt's start. The
Manifest's ``determinism`` cell records the state torch reports back, in the words
:func:`state_text` writes and :func:`recorded` reads. An attempt whose recorded state is not
the one its protocol asks for is a finding: its outputs are not evidence of that protocol.
Attempts measured before an amendment are left out (they ran under another protocol).
Stdlib only: the runner writes the text, validation reads it without torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolkit import layout
from toolkit.findings import Finding
from toolkit.workbook.model import WorkbookData

#: Protocol field -> the flag, as the Manifest text names it, that the field sets.
FLAGS = {
    "deterministic_algorithms": "torch.use_deterministic_algorithms",
    "cudnn_benchmark": "cudnn.benchmark",
}
_READ = {
    "deterministic_algorithms": re.compile(r"torch\.use_deterministic_algorithms\((True|False)\)"),
    "cudnn_benchmark": re.compile(r"cudnn\.benchmark=(True|False)"),
}
#: How a Manifest row whose attempt's state could not be read begins its determinism cell.
NOT_READ = "not read"
#: The cuBLAS setting that makes its float reductions repeatable on CUDA (NVIDIA's docs).
CUBLAS_DETERMINISTIC = ":4096:8"


def wanted(form: Mapping[str, Any]) -> dict[str, bool]:
    """The choices a Protocol makes: each field set to yes or no, as True or False."""
    found = {}
    for name in FLAGS:
        value = str(form.get(name) or "").strip().lower()
        if value in (layout.YES, layout.NO):
            found[name] = value == layout.YES
    return found


def choices_text(form: Mapping[str, Any]) -> str:
    """The Protocol's choices in words: ``deterministic_algorithms yes, cudnn_benchmark not
    set``."""
    chosen = wanted(form)
    words = {True: layout.YES, False: layout.NO}
    return ", ".join(
        f"{name} {words[chosen[name]] if name in chosen else 'not set'}" for name in FLAGS
    )


def state_text(
    *,
    deterministic: bool,
    cudnn_benchmark: bool,
    cudnn_deterministic: bool,
    cublas_workspace: str | None,
    threads: int,
    choices: str,
) -> str:
    """The Manifest's ``determinism`` cell: torch's state as read back, then the choices."""
    return (
        f"torch.use_deterministic_algorithms({deterministic}); "
        f"cudnn.benchmark={cudnn_benchmark}; cudnn.deterministic={cudnn_deterministic}; "
        f"CUBLAS_WORKSPACE_CONFIG={cublas_workspace or 'unset'}; torch threads {threads}; "
        f"inference only (eval mode, no sampling); protocol: {choices}"
    )


def recorded(text: Any) -> dict[str, bool]:
    """The flags a Manifest ``determinism`` cell records, by Protocol field (absent: not
    recorded)."""
    found = {}
    for name, pattern in _READ.items():
        match = pattern.search(str(text or ""))
        if match:
            found[name] = match[1] == "True"
    return found


def findings(data: WorkbookData) -> list[Finding]:
    """A finding per Manifest row whose recorded determinism differs from the Protocol's
    choices, for the attempts measured under the protocol in force (not pre-amendment)."""
    chosen = wanted(data.forms["Protocol"])
    if not chosen:
        return []
    users: dict[Any, list[str]] = {}
    for a in data.tables["Attempts"]:
        if str(a.get("pre_amendment") or "").strip().lower() != layout.YES:
            users.setdefault(a.get("manifest_id"), []).append(str(a.get("attempt_id")))
    found = []
    for index, m in enumerate(data.tables["Manifest"]):
        ids = users.get(m.get("manifest_id"))
        if not ids:
            continue
        if str(m.get("determinism") or "").startswith(NOT_READ):
            continue  # a worker that died before recording: nothing to compare
        state = recorded(m.get("determinism"))
        for name, value in chosen.items():
            if state.get(name) == value:
                continue
            seen = (
                (
                    f"{FLAGS[name]}({state[name]})"
                    if name == "deterministic_algorithms"
                    else f"{FLAGS[name]}={state[name]}"
                )
                if name in state
                else f"no {FLAGS[name]} state"
            )
            asked = layout.YES if value else layout.NO
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            found.append(
                Finding(
                    "Manifest",
                    data.excel_row("Manifest", index),
                    "determinism",
                    "determinism",
                    f"attempt(s) {shown} recorded {seen}, but the Protocol's {name} (row "
                    f"{layout.PROTOCOL.names.index(name) + 2}) is {asked}: they did not run "
                    f"under the locked protocol's determinism; run them again with an iteralab "
                    f"that applies it, or amend the Protocol to the state they ran under "
                    "(`iteralab amend`)",
                )
            )
    return found
