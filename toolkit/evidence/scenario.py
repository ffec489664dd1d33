"""The serving scenario a Protocol declares, and each variant's load on its endpoint.

Protocol task ``serving`` sends the prompts of ``corpus_path`` to each variant's endpoint:
``arrival`` (``poisson``: at random times averaging the variant's ``request_rate`` per
second, open loop; ``concurrency``: ``request_rate`` requests always in flight), a
``request_count`` or a ``request_duration_s``, ``warmup_requests`` first (never measured),
at most ``max_new_tokens`` tokens each, judged by ``latency_targets`` (``METRIC_pNN_ms<=LIMIT``
separated by ``;``) and by ``agreement_measure`` against the reference variant's outputs,
every request sent to the route ``api`` names (:data:`ROUTES`; blank, and every workbook older
than layout 11, is ``completions``).

Read here without httpx or torch, so that ``validate`` and ``lock`` find a wrong cell before
the campaign (:func:`findings`) and the runner reads the same declaration
(:func:`read_scenario`, :func:`load_of`). The target grammar is the one ``serve-bench``
takes on its command line (:func:`parse_target`), and so is the route vocabulary (its
``--api``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from toolkit import layout
from toolkit.errors import ProtocolError, UsageError
from toolkit.findings import Finding
from toolkit.workbook.model import WorkbookData

SERVING = "serving"
ARRIVALS = layout.SERVING_ARRIVALS
AGREEMENTS = layout.SERVING_AGREEMENTS
#: Each Protocol ``api`` (and ``serve-bench --api``) and the OpenAI route it sends to.
ROUTES = dict(zip(layout.SERVING_APIS, ("/v1/completions", "/v1/chat/completions"), strict=True))
#: The route a blank Protocol ``api`` (and every workbook older than layout 11) means.
DEFAULT_API = layout.SERVING_APIS[0]
#: What a blank Protocol ``arrival`` and ``agreement_measure`` mean.
DEFAULT_ARRIVAL, DEFAULT_AGREEMENT = ARRIVALS[0], AGREEMENTS[0]
METRIC_NAMES = ("ttft", "tpot", "itl", "e2e")
#: Client lag (actual minus due send) above which, at p99, an attempt is named lagged: the
#: server then saw a slower arrival than declared.
LAG_LIMIT_MS = 10.0
_TARGET = re.compile(r"^(ttft|tpot|itl|e2e)_p(\d{1,2}(?:\.\d+)?|100)_ms$")


@dataclass(frozen=True)
class LatencyTarget:
    """A declared target: the ``percentile`` of ``metric`` at most ``limit_ms``."""

    metric: str
    percentile: float
    limit_ms: float

    @property
    def name(self) -> str:
        """``ttft_p99_ms``: how it is written on the command line."""
        return f"{self.metric}_p{self.percentile:g}_ms"

    def text(self) -> str:
        """``ttft_p99_ms<=500``: how the Protocol writes it."""
        return f"{self.name}<={self.limit_ms:g}"


def parse_target(text: str) -> LatencyTarget:
    """``ttft_p99_ms=500`` (or ``<=500``) -> LatencyTarget("ttft", 99, 500.0); UsageError
    otherwise."""
    name, _, value = text.replace("<=", "=", 1).partition("=")
    match = _TARGET.match(name.strip())
    try:
        limit = float(value)
    except ValueError:
        limit = math.nan
    if not match or not limit > 0 or math.isinf(limit):
        raise UsageError(
            f"target {text.strip()!r} is not METRIC_pNN_ms=LIMIT",
            hint=f"METRIC is one of {', '.join(METRIC_NAMES)}; e.g. ttft_p99_ms=500 "
            "or tpot_p99_ms=50 (a limit in milliseconds above 0; the Protocol may write <=)",
        )
    return LatencyTarget(match[1], float(match[2]), limit)


def parse_targets(text: str | None) -> tuple[LatencyTarget, ...]:
    """Every target of a ``;``-separated list (blank: none); UsageError naming the first
    unreadable one or a target declared twice."""
    targets = tuple(parse_target(part) for part in str(text or "").split(";") if part.strip())
    names = [t.name for t in targets]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(
            f"target {twice[0]} is declared twice", hint="keep one limit per metric and percentile"
        )
    return targets


@dataclass(frozen=True)
class Scenario:
    """A serving Protocol's declaration, the same for every variant."""

    arrival: str
    max_new_tokens: int
    requests: int | None
    duration_s: float | None
    warmup: int
    targets: tuple[LatencyTarget, ...]
    agreement: str
    api: str = DEFAULT_API

    @property
    def route(self) -> str:
        """The path every request is sent to, e.g. ``/v1/completions``."""
        return ROUTES[self.api]

    def text(self) -> str:
        """The scenario in words, for the notes."""
        amount = (
            f"{self.requests} requests"
            if self.requests is not None
            else f"{self.duration_s:g} s of requests"
        )
        targets = "; ".join(t.text() for t in self.targets) or "no latency target"
        return (
            f"{self.arrival} arrivals to {self.route}, {amount} after {self.warmup} warm-up, "
            f"max_new_tokens {self.max_new_tokens}, targets {targets}"
        )


def is_serving(protocol: dict[str, Any]) -> bool:
    """Whether the Protocol's task is serving."""
    return str(protocol.get("task") or "").strip().lower() == SERVING


def read_scenario(protocol: dict[str, Any]) -> Scenario:
    """The Protocol's serving scenario; ProtocolError naming the first wrong field."""
    problems = _problems(protocol)
    if problems:
        name, message, hint = problems[0]
        raise ProtocolError(f"Protocol field {name}: {message}", hint=hint)
    requests = _number(protocol.get("request_count"))
    duration = _number(protocol.get("request_duration_s"))
    return Scenario(
        arrival=_word(protocol.get("arrival")) or DEFAULT_ARRIVAL,
        max_new_tokens=int(_number(protocol.get("max_new_tokens")) or 0),
        requests=None if requests is None else int(requests),
        duration_s=duration,
        warmup=int(_number(protocol.get("warmup_requests")) or 0),
        targets=parse_targets(protocol.get("latency_targets")),
        agreement=_word(protocol.get("agreement_measure")) or DEFAULT_AGREEMENT,
        api=_word(protocol.get("api")) or DEFAULT_API,
    )


def load_text(protocol: dict[str, Any], variants: Sequence[dict[str, Any]]) -> str:
    """What each attempt of a serving run sends, in words: ``6 requests each after 1 warm-up
    (Poisson arrivals at 1, 4 requests/s to /v1/completions)`` for ``variants``' rates; the
    Protocol and rates are those validate and lock accepted (ProtocolError otherwise)."""
    declared = read_scenario(protocol)
    loads = sorted({load_of(v, declared.arrival) for v in variants})
    shown = ", ".join(f"{load:g}" for load in loads)
    amount = (
        f"{declared.requests} requests"
        if declared.requests is not None
        else f"{declared.duration_s:g} s of requests"
    )
    arrival = (
        f"{shown} requests in flight"
        if declared.arrival == "concurrency"
        else f"Poisson arrivals at {shown} requests/s"
    )
    return f"{amount} each after {declared.warmup} warm-up ({arrival} to {declared.route})"


def load_of(variant: dict[str, Any], arrival: str) -> float | int:
    """The variant's ``request_rate``: requests per second (poisson), or a whole number in
    flight (concurrency); ProtocolError naming the variant when it is neither."""
    problem = _load_problem(variant.get("request_rate"), arrival)
    if problem is not None:
        raise ProtocolError(
            f"Variants {variant.get('variant_id')}: request_rate {problem[0]}", hint=problem[1]
        )
    value = float(variant["request_rate"])
    return int(value) if arrival == "concurrency" else value


def split_endpoint(model_path: Any) -> tuple[str, str | None]:
    """A serving variant's ``model_path``, ``URL#MODEL``: the endpoint's base URL and the
    served model's name (None without ``#``: the one model the endpoint lists). ProtocolError
    when it is no http(s) URL."""
    text = str(model_path or "").strip()
    url, _, model = text.partition("#")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ProtocolError(
            f"model_path {text!r} is no endpoint",
            hint="a serving variant's model_path is the endpoint's base URL and the served "
            "model's name after '#', e.g. http://10.0.0.5:8000#Qwen/Qwen2.5-7B-Instruct",
        )
    return url.rstrip("/"), model.strip() or None


def protocol_findings(data: WorkbookData) -> list[Finding]:
    """A serving Protocol's wrong fields (nothing for another task)."""
    form = data.forms["Protocol"]
    if not is_serving(form):
        return []
    rows = layout.PROTOCOL.names.index
    return [
        Finding("Protocol", rows(name) + 2, name, "serving", f"{message}: {hint}")
        for name, message, hint in _problems(form)
    ]


def variant_findings(data: WorkbookData) -> list[Finding]:
    """Under a serving Protocol, each variant whose request_rate is no load its arrival
    reads (nothing for another task)."""
    form = data.forms["Protocol"]
    if not is_serving(form):
        return []
    arrival = _word(form.get("arrival")) or DEFAULT_ARRIVAL
    found = []
    for i, variant in enumerate(data.tables["Variants"]):
        excel, vid = data.excel_row("Variants", i), variant.get("variant_id")
        problem = _load_problem(variant.get("request_rate"), arrival)
        if problem is not None:
            found.append(
                Finding(
                    "Variants",
                    excel,
                    "request_rate",
                    "serving",
                    f"{vid}: request_rate {problem[0]}: {problem[1]}",
                )
            )
        try:
            split_endpoint(variant.get("model_path"))
        except ProtocolError as exc:
            found.append(
                Finding(
                    "Variants", excel, "model_path", "serving", f"{vid}: {exc.message}: {exc.hint}"
                )
            )
    return found


def _problems(form: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, what is wrong, what to do) for each wrong field of a serving Protocol."""
    found = []
    arrival = _word(form.get("arrival")) or DEFAULT_ARRIVAL
    if arrival not in ARRIVALS:
        found.append(("arrival", f"{arrival!r} is no arrival", f"write {' or '.join(ARRIVALS)}"))
    tokens = _number(form.get("max_new_tokens"))
    if tokens is None or tokens < 1 or not tokens.is_integer():
        found.append(
            (
                "max_new_tokens",
                f"{form.get('max_new_tokens')!r} is no token count",
                "write the most tokens a request may generate, a whole number >= 1",
            )
        )
    found += _amount_problems(form)
    if _word(form.get("warmup_rule")) not in ("", "none"):
        found.append(
            (
                "warmup_rule",
                f"{form.get('warmup_rule')!r} warms a model on corpus items",
                "write none: a serving attempt's warm-up is its warmup_requests",
            )
        )
    warmup = _number(form.get("warmup_requests"))
    if form.get("warmup_requests") not in (None, "") and (
        warmup is None or warmup < 0 or not warmup.is_integer()
    ):
        found.append(
            (
                "warmup_requests",
                f"{form.get('warmup_requests')!r} is no request count",
                "write a whole number >= 0 (blank is 0)",
            )
        )
    try:
        parse_targets(form.get("latency_targets"))
    except UsageError as exc:
        found.append(("latency_targets", exc.message, exc.hint or ""))
    agreement = _word(form.get("agreement_measure")) or DEFAULT_AGREEMENT
    if agreement not in AGREEMENTS:
        found.append(
            (
                "agreement_measure",
                f"{agreement!r} is no agreement measure",
                f"write {' or '.join(AGREEMENTS)} (blank is token)",
            )
        )
    api = _word(form.get("api")) or DEFAULT_API
    if api not in ROUTES:
        routes = ", ".join(f"{name} ({route})" for name, route in ROUTES.items())
        found.append(("api", f"{api!r} is no route", f"write {routes}; blank is completions"))
    return found


def _amount_problems(form: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Exactly one of request_count (a whole number >= 1) and request_duration_s (> 0)."""
    count, duration = form.get("request_count"), form.get("request_duration_s")
    if (count in (None, "")) == (duration in (None, "")):
        return [
            (
                "request_count",
                "declare how many requests each attempt sends, or for how long",
                "fill request_count (e.g. 100) or request_duration_s (e.g. 60), not both",
            )
        ]
    if count not in (None, ""):
        value = _number(count)
        if value is None or value < 1 or not value.is_integer():
            return [
                ("request_count", f"{count!r} is no request count", "write a whole number >= 1")
            ]
        return []
    value = _number(duration)
    if value is None or not value > 0 or math.isinf(value):
        return [("request_duration_s", f"{duration!r} is no duration", "write seconds above 0")]
    return []


def _load_problem(value: Any, arrival: str) -> tuple[str, str] | None:
    """(what is wrong, what to do) with a variant's request_rate; None when it is right."""
    number = _number(value)
    if arrival == "concurrency":
        if number is None or number < 1 or not number.is_integer():
            return (
                f"is {value!r}",
                "under Protocol arrival concurrency it is the requests kept in flight, a whole "
                "number >= 1",
            )
        return None
    if number is None or not number > 0 or math.isinf(number):
        return (
            f"is {value!r}",
            "it is the requests per second sent to the endpoint (Poisson arrivals), above 0",
        )
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value in (None, ""):
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return None if math.isnan(number) else number


def _word(value: Any) -> str:
    return str(value or "").strip().lower()
