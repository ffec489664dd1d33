"""The loopback wire as TTFT's referee: when each request's first byte and its response's
first text-bearing event crossed 127.0.0.1, by the kernel's packet timestamps.

Two clients that take turns on one server meet two servers: its TTFT drifts from one run to
the next by more than the clients differ. A client's TTFT over the wire's for the same
request leaves the server out and keeps what the client adds itself (from its header write
to the wire, and from the wire to its reading of the event), so two clients are compared on
what they measure, not on the minutes they happened to run in.

A capture runs in a process of its own (``python wire.py capture PORT FILE``, started and
stopped by :class:`Capture`), keeping TCP segments to and from the server's port that carry
bytes or open a connection; :func:`exchanges` reassembles each connection afterwards,
requests by their ``Content-Length`` and responses with h11 (chunked or not), their events
with the toolkit's own SSE parser. Linux only, with a raw packet socket (CAP_NET_RAW, as
root): :func:`unavailable` says why not otherwise.

    python benchmarks/wire.py capture 8000 /tmp/wire.bin   # until Ctrl-C
"""

from __future__ import annotations

import codecs
import json
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import h11

from toolkit.serving.client import choice_text
from toolkit.serving.sse import DONE, EventParser

ETH_P_ALL, PACKET_OUTGOING = 0x0003, 4  # loopback shows every packet twice: kept as sent
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
ETHERNET_HEADER, TCP, SYN = 14, 6, 0x02
RECEIVE_BUFFER = 64 * 1024 * 1024  # a burst of segments must not overflow it between reads
#: As root the buffer may pass the system's rmem_max (which SO_RCVBUF is capped at).
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
#: Larger than any loopback frame (its MTU is 64 KiB, plus the headers).
LARGEST_FRAME = 256 * 1024
#: One kept segment in the capture file: timestamp (s), source port, destination port,
#: sequence number, TCP flags, payload length; the payload follows.
RECORD = struct.Struct("<dHHIBI")
READY = "ready"


@dataclass(frozen=True)
class Exchange:
    """One request as the wire saw it: its prompt (None: a request without one, such as a
    ``GET /v1/models``), its first byte's time and the time of the segment that completed
    its response's first event carrying text (None: none came)."""

    prompt: str | None
    sent_s: float
    first_text_s: float | None

    @property
    def ttft_ms(self) -> float | None:
        if self.first_text_s is None:
            return None
        return (self.first_text_s - self.sent_s) * 1000


def unavailable() -> str | None:
    """Why no capture can run here, or None when one can."""
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)).close()
    except (AttributeError, OSError) as error:  # no AF_PACKET off Linux; EPERM without the cap
        return f"no raw packet socket on the loopback ({error}); run as root to have one"
    return None


class Capture:
    """A capture of the loopback's traffic with ``port`` into ``path`` while the block runs;
    :meth:`exchanges` reads it once the block has ended."""

    def __init__(self, port: int, path: Path) -> None:
        self.port, self.path = port, path
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Capture:
        command = [sys.executable, __file__, "capture", str(self.port), str(self.path)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if line != READY:
            self._process.kill()
            self._process.communicate()
            raise RuntimeError(f"the wire capture did not start: {line or 'it said nothing'}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGINT)
        self._process.communicate(timeout=30)
        if self._process.returncode != 0:
            raise RuntimeError(f"the wire capture exited with {self._process.returncode}")

    def exchanges(self) -> list[Exchange]:
        return exchanges(self.path, self.port)


def capture(port: int, path: Path) -> None:
    """Keep every loopback TCP segment to or from ``port`` that carries bytes or opens a
    connection, with the kernel's receive timestamp, until SIGINT; then write them."""
    stopped = False

    def stop(number: int, frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGINT, stop)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECEIVE_BUFFER)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind(("lo", 0))
    sock.settimeout(0.1)  # how soon a stop is noticed
    kept: list[bytes] = []
    print(READY, flush=True)
    while not stopped:
        try:
            frame, ancillary, _, address = sock.recvmsg(LARGEST_FRAME, socket.CMSG_SPACE(16))
        except (TimeoutError, InterruptedError):
            continue
        if address[2] != PACKET_OUTGOING:
            continue
        segment = _segment(frame, port)
        if segment is not None:
            seconds, nanoseconds = struct.unpack("qq", ancillary[0][2][:16])
            kept.append(RECORD.pack(seconds + nanoseconds / 1e9, *segment[:4], len(segment[4])))
            kept.append(segment[4])
    path.write_bytes(b"".join(kept))


def _segment(frame: bytes, port: int) -> tuple[int, int, int, int, bytes] | None:
    """(source port, destination port, sequence, flags, payload) of an IPv4 TCP segment to
    or from ``port`` that carries bytes or a SYN; None for anything else."""
    ip = frame[ETHERNET_HEADER:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != TCP:
        return None
    ip_header, total = (ip[0] & 0x0F) * 4, struct.unpack("!H", ip[2:4])[0]
    tcp = ip[ip_header:total]
    source, destination, sequence = struct.unpack("!HHI", tcp[:8])
    if port not in (source, destination):
        return None
    flags, payload = tcp[13], tcp[(tcp[12] >> 4) * 4 :]
    if not payload and not flags & SYN:
        return None
    return source, destination, sequence, flags, payload


def _records(path: Path) -> Iterator[tuple[float, int, int, int, int, bytes]]:
    data, at = path.read_bytes(), 0
    while at < len(data):
        stamp, source, destination, sequence, flags, length = RECORD.unpack_from(data, at)
        at += RECORD.size
        yield stamp, source, destination, sequence, flags, data[at : at + length]
        at += length


@dataclass
class _Stream:
    """One direction of one connection, reassembled: its bytes in order, each piece with the
    time of the segment that brought it."""

    pieces: list[tuple[float, bytes]] = field(default_factory=list)
    next_sequence: int | None = None

    def add(self, stamp: float, sequence: int, flags: int, payload: bytes) -> None:
        if flags & SYN:
            self.next_sequence = (sequence + 1) % 2**32
        if not payload:
            return
        if self.next_sequence is None:  # the capture began inside this connection
            self.next_sequence = sequence
        ahead = (sequence - self.next_sequence) % 2**32
        if ahead and ahead < 2**31:
            raise ValueError(f"{ahead} bytes of a connection were not captured")
        skip = (self.next_sequence - sequence) % 2**32  # bytes already had (a retransmission)
        if skip < len(payload):
            self.pieces.append((stamp, payload[skip:]))
            self.next_sequence = (sequence + len(payload)) % 2**32


def exchanges(path: Path, port: int) -> list[Exchange]:
    """Every request the capture in ``path`` saw sent to ``port``, in the order they were
    sent."""
    connections: list[tuple[_Stream, _Stream]] = []
    by_client: dict[int, tuple[_Stream, _Stream]] = {}
    for stamp, source, destination, sequence, flags, payload in _records(path):
        client = source if destination == port else destination
        if (flags & SYN and destination == port) or client not in by_client:
            by_client[client] = (_Stream(), _Stream())  # a client port may be used again
            connections.append(by_client[client])
        outgoing, incoming = by_client[client]
        stream = outgoing if destination == port else incoming
        stream.add(stamp, sequence, flags, payload)
    found = [exchange for out, back in connections for exchange in _connection(out, back)]
    return sorted(found, key=lambda exchange: exchange.sent_s)


def _connection(outgoing: _Stream, incoming: _Stream) -> list[Exchange]:
    """A connection's requests (one after another: HTTP/1.1 without pipelining, as httpx
    sends) paired with its responses."""
    requests = list(_requests(outgoing.pieces))
    parser = h11.Connection(h11.CLIENT)
    pieces = iter(incoming.pieces)
    found = []
    for sent_s, head, body in requests:
        method, target = head.split(b" ", 2)[:2]
        headers = [("Host", "wire"), ("Content-Length", str(len(body)))]
        parser.send(h11.Request(method=method, target=target, headers=headers))
        parser.send(h11.Data(data=body))
        parser.send(h11.EndOfMessage())
        try:
            first_text_s = _first_text(parser, pieces)
        except h11.RemoteProtocolError:  # not HTTP from here on: what came before stands
            first_text_s = None
        found.append(Exchange(_prompt(body), sent_s, first_text_s))
        if parser.our_state is h11.DONE and parser.their_state is h11.DONE:
            parser.start_next_cycle()
        else:  # the response was cut: nothing after it on this connection can be read
            break
    return found


def _requests(pieces: list[tuple[float, bytes]]) -> Iterator[tuple[float, bytes, bytes]]:
    """(time of its first byte, head, body) of each request, by its ``Content-Length``."""
    buffer, started = b"", 0.0
    for stamp, piece in pieces:
        if not buffer:
            started = stamp
        buffer += piece
        while b"\r\n\r\n" in buffer:
            head, _, rest = buffer.partition(b"\r\n\r\n")
            length = int(_fields(head).get(b"content-length", b"0"))
            if len(rest) < length:
                break
            body, buffer = rest[:length], rest[length:]
            yield started, head, body
            started = stamp


def _fields(head: bytes) -> dict[bytes, bytes]:
    lines = head.split(b"\r\n")[1:]
    pairs = (line.split(b":", 1) for line in lines if b":" in line)
    return {name.strip().lower(): value.strip() for name, value in pairs}


def _prompt(body: bytes) -> str | None:
    try:
        request = json.loads(body)
    except ValueError:
        return None
    prompt = request.get("prompt") if isinstance(request, dict) else None
    return prompt if isinstance(prompt, str) else None


def _first_text(parser: h11.Connection, pieces: Iterator[tuple[float, bytes]]) -> float | None:
    """Feed the response's segments to ``parser`` until its end; the time of the segment
    that completed its first event carrying text (None: no such event)."""
    events, text = EventParser(), codecs.getincrementaldecoder("utf-8")()
    first, stamp = None, 0.0
    while True:
        event = parser.next_event()
        if event is h11.NEED_DATA:
            piece = next(pieces, None)
            if piece is None:
                return first
            stamp = piece[0]
            parser.receive_data(piece[1])
            continue
        if isinstance(event, h11.Data) and first is None:
            for data in events.feed(text.decode(event.data)):
                if first is None and data != DONE and _carries_text(data):
                    first = stamp
        if isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            return first


def _carries_text(data: str) -> bool:
    try:
        chunk = json.loads(data)
    except ValueError:
        return False
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    return any(choice_text(choice) for choice in choices or [])


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "capture":
        sys.exit(__doc__.rsplit("\n\n", 1)[-1])
    capture(int(sys.argv[2]), Path(sys.argv[3]))
