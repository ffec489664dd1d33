"""The Protocol's task and decoding rule, read without torch (the campaign checks them up front).

``task``: ``classification`` (blank: every workbook older than layout 3), ``generation`` or
``serving`` (its scenario: :mod:`toolkit.evidence.scenario`).
A generation Protocol fixes, for every variant and before timing (R1, R8): greedy decoding,
``max_new_tokens``, ``stop_rule`` and what becomes of a prompt past the variant's
``max_length`` (``long_prompts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.errors import ProtocolError
from toolkit.evidence import scenario

TASKS = ("classification", "generation", "serving")
#: The Attempts columns only a generation attempt measures (a classification's are empty,
#: with the reason of :func:`toolkit.runner.tasks.columns.absent_reason`).
GENERATION_COLUMNS = (
    "prompt_tokens",
    "generated_tokens",
    "ttft_s",
    "decode_tokens_per_s",
    "kv_cache_peak_bytes",
    "exact_agreement",
    "token_agreement",
    "bandwidth_ceiling_tokens_per_s",
    "decode_ceiling_fraction",
)
#: The Attempts columns only a serving attempt measures: the endpoint's figures under load.
SERVING_COLUMNS = (
    "requests_sent",
    "requests_completed",
    "requests_failed",
    "ttft_p50_ms",
    "ttft_p90_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "itl_p99_ms",
    "output_tokens_per_s",
    "goodput_rps",
    "good_output_tokens",
    "targets_met",
    "client_lag_p99_ms",
)
STOP_RULES = ("eos", "max_new_tokens")
LONG_PROMPT_RULES = ("truncate", "refuse")


def task_of(protocol: dict[str, Any]) -> str:
    """The Protocol's task; blank is ``classification`` (workbooks before layout 3)."""
    value = str(protocol.get("task") or "").strip().lower()
    if not value:
        return "classification"
    if value not in TASKS:
        raise ProtocolError(
            f"Protocol field task is {value!r}",
            hint=f"write one of {', '.join(TASKS)} (blank is classification)",
        )
    return value


@dataclass(frozen=True)
class DecodingRule:
    """How every variant decodes (the Protocol's; the same for all, R8)."""

    max_new_tokens: int
    #: ``eos``: an output ends at the end-of-sequence token or at max_new_tokens;
    #: ``max_new_tokens``: every output runs to max_new_tokens (eos ignored).
    stop: str = "eos"
    #: ``truncate``: keep the prompt's last max_length tokens and count it (R3); ``refuse``:
    #: the attempt fails naming the prompt.
    long_prompts: str = "refuse"

    def text(self) -> str:
        """The rule in words, for the Manifest and notes."""
        stop = (
            "end-of-sequence token or max_new_tokens"
            if self.stop == "eos"
            else "always max_new_tokens"
        )
        return (
            f"greedy, max_new_tokens {self.max_new_tokens}, stop at {stop}, "
            f"long prompts: {self.long_prompts}"
        )


def decoding_rule(protocol: dict[str, Any]) -> DecodingRule:
    """The Protocol's decoding rule; ProtocolError naming the field when one is wrong."""
    raw = protocol.get("max_new_tokens")
    try:
        count = int(str(raw).strip())
    except ValueError:
        count = 0
    if raw in (None, "") or count < 1:
        raise ProtocolError(
            f"Protocol field max_new_tokens is {raw!r}: a generation protocol "
            "fixes how many new tokens an output may have",
            hint="write a whole number >= 1 in Protocol max_new_tokens",
        )
    stop = str(protocol.get("stop_rule") or "eos").strip().lower()
    if stop not in STOP_RULES:
        raise ProtocolError(
            f"Protocol field stop_rule is {stop!r}",
            hint=f"write one of {', '.join(STOP_RULES)} (blank is eos)",
        )
    long = str(protocol.get("long_prompts") or "refuse").strip().lower()
    if long not in LONG_PROMPT_RULES:
        raise ProtocolError(
            f"Protocol field long_prompts is {long!r}",
            hint=f"write one of {', '.join(LONG_PROMPT_RULES)} (blank is refuse)",
        )
    return DecodingRule(count, stop, long)


def check_protocol(protocol: dict[str, Any]) -> None:
    """Raise ProtocolError when the task, a generation Protocol's rule or a serving
    Protocol's scenario is unusable."""
    task = task_of(protocol)
    if task in ("generation", "serving"):
        if task == "generation":
            decoding_rule(protocol)
        else:
            scenario.read_scenario(protocol)
        if str(protocol.get("metric")) not in ("chrf",):
            raise ProtocolError(
                f"Protocol metric {protocol.get('metric')!r} is a classification "
                f"metric, but task is {task}",
                hint="declare metric chrf (against the prompts' reference "
                "field) with `iteralab amend`",
            )
    elif str(protocol.get("metric")) == "chrf":
        raise ProtocolError(
            "Protocol metric chrf scores generated text, but task is classification",
            hint="declare accuracy or macro_f1, or task generation or serving, with "
            "`iteralab amend`",
        )
