"""Send one streamed request to an OpenAI-compatible endpoint and record its life.

Every way a request can go wrong ends as a :class:`Record` with ``ok`` False and a reason in
words, never as an exception: the endpoint unreachable, an HTTP error (a wrong model name is
one), an answer that is not a stream, a stream cut before its end, a piece that is not JSON,
no byte for longer than the read timeout, the run interrupted.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from toolkit.evidence.scenario import ROUTES
from toolkit.serving.records import FROM_STREAM, FROM_USAGE, Record
from toolkit.serving.sse import DONE, EventParser

#: Characters of an error body kept in a reason.
REASON_BODY_CHARS = 300


@dataclass(frozen=True)
class Request:
    """What every request of a run asks: the served model's name, the route
    (``completions`` or ``chat``, :data:`toolkit.evidence.scenario.ROUTES`; the sample model
    has no chat template, so it answers only ``completions``), the most tokens to generate."""

    model: str
    api: str
    max_tokens: int

    @property
    def route(self) -> str:
        """The path the request goes to, e.g. ``/v1/completions``."""
        return ROUTES[self.api]

    def body(self, prompt: str) -> dict[str, Any]:
        """The JSON body for ``prompt``: streamed, greedy, with usage asked for."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body


class _Failed(Exception):
    """A request went wrong in a way the server's answer shows; the message is the reason."""


async def send(
    client: httpx.AsyncClient,
    request: Request,
    prompt: str,
    record: Record,
    clock: Callable[[], float],
) -> Record:
    """Send ``prompt`` now, fill ``record`` from the stream as it arrives and return it.

    ``clock`` gives seconds from the run's origin. An interruption (task cancelled) is
    recorded as a failure before it goes on up."""
    record.sent_s = clock()
    try:
        url = request.route
        hooks = {"trace": _headers_written(record, clock)}
        async with client.stream(
            "POST", url, json=request.body(prompt), extensions=hooks
        ) as response:
            record.http_status = response.status_code
            await _check_response(response, url)
            await _read_stream(response, record, clock)
        record.ok = record.reason is None
    except _Failed as exc:
        record.reason = str(exc)
    except httpx.ConnectError as exc:
        record.reason = f"endpoint unreachable: {client.base_url} ({exc})"
    except httpx.TimeoutException as exc:
        record.reason = f"timed out: no answer within the read timeout ({type(exc).__name__})"
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        if record.http_status is None:  # the server went away before it answered
            record.reason = f"connection lost: before any answer ({exc!r})"
        else:
            record.reason = f"stream cut: after {len(record.token_s)} pieces ({exc!r})"
    except httpx.HTTPError as exc:
        record.reason = f"transport error: after {len(record.token_s)} pieces, {exc!r}"
    except asyncio.CancelledError:
        record.reason = "interrupted: the run stopped before this request ended"
        record.end_s = clock()
        raise
    record.end_s = clock()
    return record


def _headers_written(
    record: Record, clock: Callable[[], float]
) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    """An httpx trace hook noting when the request's first header write began (its
    ``headers_s``): what the client spent before the wire, told apart from the server's time."""

    async def trace(event: str, info: dict[str, Any]) -> None:
        if record.headers_s is None and event.endswith(".send_request_headers.started"):
            record.headers_s = clock()

    return trace


async def _check_response(response: httpx.Response, url: str) -> None:
    if response.status_code != 200:
        body = (await response.aread()).decode("utf-8", "replace")
        raise _Failed(f"HTTP {response.status_code} from {url}: {_detail(body)}")
    kind = response.headers.get("content-type", "")
    if not kind.startswith("text/event-stream"):
        body = (await response.aread()).decode("utf-8", "replace")
        raise _Failed(
            f"not a stream: {url} answered {kind or 'no content type'} instead of "
            f"text/event-stream ({body[:REASON_BODY_CHARS]!r})"
        )


def _detail(body: str) -> str:
    """An error body's message: OpenAI's ``error.message``, FastAPI's ``detail``, or the
    text itself, cut short."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:REASON_BODY_CHARS]
    if isinstance(data, dict):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else data.get("detail")
        if message:
            return str(message)[:REASON_BODY_CHARS]
    return body[:REASON_BODY_CHARS]


async def _read_stream(
    response: httpx.Response, record: Record, clock: Callable[[], float]
) -> None:
    parser = EventParser()
    done = False
    async for piece in response.aiter_text():
        now = clock()
        for data in parser.feed(piece):
            done = _take(data, record, now) or done
    for data in parser.close():
        done = _take(data, record, clock()) or done
    if not done and record.reason is None:
        record.reason = (
            f"stream ended early: after {len(record.token_s)} pieces, with no finish "
            f"reason nor {DONE}"
        )
    if record.output_tokens is None:
        record.output_tokens = len(record.token_s)
        record.output_tokens_from = FROM_STREAM


def _take(data: str, record: Record, now: float) -> bool:
    """Fold one event into ``record``; True when it ends the stream."""
    if data == DONE:
        return True
    try:
        chunk = json.loads(data)
    except ValueError:
        record.reason = record.reason or f"bad piece: not JSON, {data[:80]!r}"
        return False
    if not isinstance(chunk, dict):
        return False
    if "error" in chunk:
        record.reason = (
            record.reason or f"server error mid-stream: {str(chunk)[:REASON_BODY_CHARS]}"
        )
        return False
    ended = False
    for choice in chunk.get("choices") or []:
        text = choice_text(choice)
        if text:
            record.text += text
            record.token_s.append(now)
            if record.first_token_s is None:
                record.first_token_s = now
        if choice.get("finish_reason"):
            record.finish_reason = str(choice["finish_reason"])
            ended = True
    usage = chunk.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        record.output_tokens = usage["completion_tokens"]
        record.output_tokens_from = FROM_USAGE
        record.prompt_tokens = usage.get("prompt_tokens")
    return ended


def choice_text(choice: Any) -> str:
    """The text a streamed choice carries: a chat delta's content or a completion's text."""
    if not isinstance(choice, dict):
        return ""
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or "")
    return str(choice.get("text") or "")


def monotonic_from(origin: float) -> Callable[[], float]:
    """A clock of seconds since ``origin`` on ``time.perf_counter``."""
    return lambda: time.perf_counter() - origin
