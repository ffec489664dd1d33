"""What an endpoint says about itself: its models, its ``server`` header, its version.

OpenAI's API names the served models (``/v1/models``); the rest depends on the server:
vLLM answers ``/version``, TGI ``/info``, SGLang ``/get_server_info`` (``/server_info`` in
newer releases), llama.cpp ``/props``. Each is asked once; what answers is kept as it came,
cut short. Nothing is assumed from a name: an endpoint that answers none of them says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

#: Routes where a server may tell its version or build, by the servers that answer them.
VERSION_ROUTES = ("/version", "/info", "/get_server_info", "/server_info", "/props")
#: Characters of a version answer kept.
KEEP_CHARS = 2000


@dataclass
class Identity:
    """An endpoint's answers: ``models`` listed (None when /v1/models did not answer, with
    ``reason``), its ``server`` header, and each version route that answered 200."""

    base_url: str
    models: list[str] | None = None
    server: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    reason: str | None = None

    def lists(self, model: str) -> bool | None:
        """Whether ``model`` is among the listed models (None: no list to look in)."""
        return None if self.models is None else model in self.models


def identify(base_url: str, timeout_s: float = 5.0) -> Identity:
    """Ask the endpoint at ``base_url`` who it is; never raises for an endpoint that is
    down or odd (the reason says what happened)."""
    identity = Identity(base_url)
    with httpx.Client(base_url=base_url, timeout=timeout_s) as client:
        try:
            answer = client.get("/v1/models")
        except httpx.HTTPError as exc:
            identity.reason = f"endpoint unreachable: {base_url} ({exc})"
            return identity
        identity.server = answer.headers.get("server")
        identity.models, identity.reason = _models(answer)
        for route in VERSION_ROUTES:
            try:
                reply = client.get(route)
            except httpx.HTTPError:
                continue
            if reply.status_code == 200:
                identity.versions[route] = reply.text[:KEEP_CHARS]
    return identity


def _models(answer: httpx.Response) -> tuple[list[str] | None, str | None]:
    if answer.status_code != 200:
        return None, f"/v1/models answered HTTP {answer.status_code}"
    try:
        data: Any = answer.json()
        return [str(entry["id"]) for entry in data["data"]], None
    except (ValueError, KeyError, TypeError):
        return None, f"/v1/models answered no list of models: {answer.text[:200]!r}"
