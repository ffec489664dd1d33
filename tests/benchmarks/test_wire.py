"""The loopback wire as TTFT's referee (benchmarks/wire.py): connections reassembled from
their segments, requests told apart by their length, responses read through h11 and the
toolkit's SSE parser, the first text-bearing event timed by the segment that completed it.
The capture itself runs against a real streaming server where a raw socket can be opened."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from tests.support.benchmarks import import_benchmark

SERVER, CLIENT = 8000, 50_000
SYN, ACK = 0x02, 0x10


@pytest.fixture(scope="module")
def wire() -> ModuleType:
    return import_benchmark("wire")


class _Segments:
    """A capture file written segment by segment, each direction's sequence kept."""

    def __init__(self, wire: ModuleType) -> None:
        self.wire, self.data = wire, bytearray()
        self.next = {"out": 0, "back": 0}

    def syn(self, stamp: float, client: int, start: int) -> None:
        self.next = {"out": start + 1, "back": start + 1001}
        self._add(stamp, client, "out", start, SYN, b"")
        self._add(stamp, client, "back", start + 1000, SYN | ACK, b"")

    def send(self, stamp: float, client: int, way: str, payload: bytes, again: bool = False):
        if again:  # a retransmission: the same bytes at the same sequence
            self.next[way] -= len(payload)
        self._add(stamp, client, way, self.next[way], ACK, payload)
        self.next[way] += len(payload)

    def _add(self, stamp: float, client: int, way: str, seq: int, flags: int, payload: bytes):
        ports = (client, SERVER) if way == "out" else (SERVER, client)
        self.data += self.wire.RECORD.pack(stamp, *ports, seq, flags, len(payload)) + payload

    def write(self, path: Path) -> Path:
        path.write_bytes(bytes(self.data))
        return path


def _post(prompt: str) -> tuple[bytes, bytes]:
    body = json.dumps({"model": "m", "prompt": prompt, "stream": True}).encode()
    head = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
    return head + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode(), body


def _chunk(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _event(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "text": text}]}) + "\n\n"


STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


def test_a_connection_is_read_request_by_request(wire: ModuleType, tmp_path: Path) -> None:
    """A GET with no prompt, then a streamed completion whose head and body come in two
    segments (the body sent twice), whose first event carries no text and whose first text
    event is cut across two chunks: its TTFT runs from the head's segment to the segment
    that completed that event."""
    segments = _Segments(wire)
    segments.syn(1.0, CLIENT, 7)
    segments.send(1.001, CLIENT, "out", b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    segments.send(1.002, CLIENT, "back", b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
    head, body = _post("It is a truth")
    segments.send(2.000, CLIENT, "out", head)
    segments.send(2.001, CLIENT, "out", body)
    segments.send(2.002, CLIENT, "out", body, again=True)
    segments.send(2.010, CLIENT, "back", STREAM_HEAD + _chunk(_event("")))
    first = _event(" universally")
    segments.send(2.030, CLIENT, "back", _chunk(first[:20]))
    segments.send(2.050, CLIENT, "back", _chunk(first[20:]) + _chunk(_event(" known")))
    segments.send(2.060, CLIENT, "back", _chunk("data: [DONE]\n\n") + b"0\r\n\r\n")
    found = wire.exchanges(segments.write(tmp_path / "one.wire"), SERVER)
    assert [(e.prompt, e.sent_s) for e in found] == [(None, 1.001), ("It is a truth", 2.0)]
    assert found[0].ttft_ms is None
    assert found[1].ttft_ms == pytest.approx(50.0)


def test_a_reused_port_starts_a_new_connection_and_a_cut_stream_ends_one(
    wire: ModuleType, tmp_path: Path
) -> None:
    """The client port comes back with a new SYN at another sequence. The second response is
    cut after its first text: its TTFT stands, and nothing after it on that connection can
    be read (a request sent there is left out, not paired with a wrong response)."""
    segments = _Segments(wire)
    for number, start in ((0, 100), (1, 9_000_000)):
        segments.syn(10.0 * number, CLIENT, start)
        head, body = _post(f"prompt {number}")
        segments.send(10.0 * number + 1, CLIENT, "out", head + body)
        segments.send(10.0 * number + 1.02, CLIENT, "back", STREAM_HEAD + _chunk(_event("x")))
        if number == 0:
            segments.send(1.03, CLIENT, "back", _chunk("data: [DONE]\n\n") + b"0\r\n\r\n")
    head, body = _post("after the cut")
    segments.send(12.0, CLIENT, "out", head + body)
    found = wire.exchanges(segments.write(tmp_path / "two.wire"), SERVER)
    assert [(e.prompt, e.ttft_ms) for e in found] == [
        ("prompt 0", pytest.approx(20.0)),
        ("prompt 1", pytest.approx(20.0)),
    ]


def test_bytes_the_capture_missed_are_named(wire: ModuleType, tmp_path: Path) -> None:
    segments = _Segments(wire)
    segments.syn(1.0, CLIENT, 7)
    segments.next["out"] += 40  # 40 bytes never captured
    segments.send(1.1, CLIENT, "out", b"GET / HTTP/1.1\r\n\r\n")
    with pytest.raises(ValueError, match="40 bytes of a connection were not captured"):
        wire.exchanges(segments.write(tmp_path / "gap.wire"), SERVER)


DELAY_S = 0.03


class _Streaming(http.server.BaseHTTPRequestHandler):
    """A completion streamed in chunks: an event without text at once, the first text after
    DELAY_S, then the end."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece, pause in ((_event(""), DELAY_S), (_event("Yes"), 0.0), ("data: [DONE]\n\n", 0)):
            self.wfile.write(_chunk(piece))
            self.wfile.flush()
            time.sleep(pause)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def streaming_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Streaming)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_wire_sees_a_real_stream_no_later_than_its_client(
    wire: ModuleType, streaming_server: int, tmp_path: Path
) -> None:
    """Captured for real: each request's wire TTFT holds the server's pause and lies inside
    the client's own (the client starts its clock before the wire and stops it after)."""
    why = wire.unavailable()
    if why:
        pytest.skip(why)
    base, client_ms = f"http://127.0.0.1:{streaming_server}", {}
    with wire.Capture(streaming_server, tmp_path / "real.wire") as capture, httpx.Client() as http:
        for number in range(3):
            prompt = f"request {number}"
            started = time.perf_counter()
            body = {"model": "m", "prompt": prompt, "stream": True}
            with http.stream("POST", f"{base}/v1/completions", json=body) as response:
                for line in response.iter_lines():
                    if "Yes" in line and prompt not in client_ms:
                        client_ms[prompt] = (time.perf_counter() - started) * 1000
    found = {e.prompt: e.ttft_ms for e in capture.exchanges()}
    assert set(found) == set(client_ms)
    for prompt, ttft in found.items():
        assert DELAY_S * 1000 <= ttft <= client_ms[prompt]
