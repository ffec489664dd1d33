"""An endpoint that misbehaves gives failed request records with their reason, never a
traceback: each case is a real HTTP server on 127.0.0.1 (the standard library's) that
answers the way a broken or foreign server does."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.builders import ENV
from tests.support.paths import SAMPLES
from toolkit import serving
from toolkit.serving.records import FROM_STREAM

PROMPTS = SAMPLES / "prompts.jsonl"


def _event(text: str | None = None, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"


class _Handler(BaseHTTPRequestHandler):
    """Answers POST /MODE/v1/...; MODE says how it misbehaves (or not)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep the test output quiet
        pass

    def do_GET(self) -> None:
        self._send(404, "application/json", b'{"detail": "Not Found"}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        mode = self.path.split("/")[1]
        if mode == "json":
            body = {"choices": [{"index": 0, "text": "whole", "finish_reason": "length"}]}
            self._send(200, "application/json", json.dumps(body).encode())
        elif mode in ("slow", "hang"):
            time.sleep(1.5 if mode == "slow" else 10)
            with contextlib.suppress(OSError):  # the client gave up long ago
                self._send(200, "text/event-stream", _event("late", "stop"))
        else:
            self._stream(mode)

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, mode: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [_event("one"), _event(" two")]
        if mode == "notjson":
            events.append(b"data: hello\n\n")
        if mode == "chat":
            events += [_event(None, "stop"), b"data: [DONE]\n\n"]
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            time.sleep(0.01)
        if mode == "cut":  # the connection drops without the chunked body's end
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _run(port: int, mode: str, tmp_path: Path, timeout_s: float = 30) -> list[serving.Record]:
    scenario = serving.Scenario(
        prompts=PROMPTS,
        max_tokens=4,
        base_url=f"http://127.0.0.1:{port}/{mode}",
        model="m",
        api="chat",
        timeout_s=timeout_s,
    )
    (result,) = serving.sweep(scenario, [serving.Arrivals(rate=20, requests=2)], tmp_path)
    return serving.read_records(result.requests)


def test_a_complete_chat_stream_is_read_with_its_tokens_counted_from_the_stream(
    port: int, tmp_path: Path
) -> None:
    records = _run(port, "chat", tmp_path)
    assert [(r.ok, r.text, r.finish_reason) for r in records] == [(True, "one two", "stop")] * 2
    assert {(r.output_tokens, r.output_tokens_from) for r in records} == {(2, FROM_STREAM)}
    assert all(len(r.token_s) == 2 and r.first_token_s == r.token_s[0] for r in records)
    # The first header write falls between the send and the first token (httpx's trace).
    assert all(
        r.sent_s is not None
        and r.headers_s is not None
        and r.first_token_s is not None
        and r.sent_s <= r.headers_s <= r.first_token_s
        for r in records
    )


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        (
            "json",
            "not a stream: /v1/chat/completions answered application/json instead of "
            "text/event-stream",
        ),
        ("cut", "stream cut: after 2 pieces (RemoteProtocolError("),
        ("nofinish", "stream ended early: after 2 pieces, with no finish reason nor [DONE]"),
        ("notjson", "bad piece: not JSON, 'hello'"),
    ],
)
def test_a_misbehaving_stream_gives_failed_records_with_the_reason(
    port: int, tmp_path: Path, mode: str, reason: str
) -> None:
    records = _run(port, mode, tmp_path)
    assert len(records) == 2
    assert not any(r.ok for r in records)
    assert all(str(r.reason).startswith(reason) for r in records), records[0].reason


def test_a_server_silent_past_the_read_timeout_gives_a_timed_out_record(
    port: int, tmp_path: Path
) -> None:
    records = _run(port, "slow", tmp_path, timeout_s=0.3)
    assert [str(r.reason).split(":")[0] for r in records] == ["timed out", "timed out"]
    assert all(r.end_s is not None and r.end_s - (r.sent_s or 0) < 1.4 for r in records)


def test_the_identity_of_a_server_without_the_openai_routes_says_so(port: int) -> None:
    identity = serving.identify(f"http://127.0.0.1:{port}")
    assert identity.models is None
    assert identity.reason == "/v1/models answered HTTP 404"
    assert identity.server is not None and identity.server.startswith("BaseHTTP")
    assert identity.versions == {}


@pytest.mark.campaign  # a subprocess
def test_ctrl_c_records_the_requests_in_flight_before_the_command_stops(
    port: int, tmp_path: Path
) -> None:
    requests = tmp_path / "rate-20" / "requests.jsonl"
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolkit",
            "serve-bench",
            "--endpoint",
            f"http://127.0.0.1:{port}/hang",
            "--model",
            "m",
            "--rate",
            "20",
            "--requests",
            "3",
            "--warmup",
            "0",
            "--out",
            str(tmp_path),
        ],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not requests.is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the three requests are sent within 0.2 s and hang for 10
    run.send_signal(signal.SIGINT)
    output, _ = run.communicate(timeout=30)
    assert run.returncode != 0 and "Traceback" not in output, output
    records = serving.read_records(requests)
    assert sorted(r.index for r in records) == [0, 1, 2]
    assert all(
        r.reason == "interrupted: the run stopped before this request ended" for r in records
    )
