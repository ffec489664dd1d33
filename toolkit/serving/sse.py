"""Server-sent events, as OpenAI-compatible servers stream them: lines in, events out.

An event is one or more ``data:`` lines ended by a blank line; ``:`` starts a comment (a
keep-alive); ``event:``, ``id:`` and ``retry:`` are read and set aside. Lines may end in LF,
CRLF or CR. The parser holds no I/O: the client feeds it the text of the stream as it
arrives, in pieces cut anywhere.
"""

from __future__ import annotations

#: The payload OpenAI's API sends as its last event.
DONE = "[DONE]"


class EventParser:
    """Turns pieces of an SSE stream into the data of complete events, in order."""

    def __init__(self) -> None:
        self._pending = ""
        self._data: list[str] = []

    def feed(self, piece: str) -> list[str]:
        """The data of every event that ``piece`` completes (multi-line data joined by
        newlines); what is left of an unfinished line or event waits for the next piece."""
        self._pending += piece
        events: list[str] = []
        while True:
            cut = _line_end(self._pending)
            if cut is None:
                return events
            line, self._pending = self._pending[: cut[0]], self._pending[cut[1] :]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def close(self) -> list[str]:
        """The data of an event the stream ended without its blank line (servers that
        close right after the last ``data:`` line)."""
        events = self.feed("\n") if self._pending else []
        if self._data:
            events.append("\n".join(self._data))
            self._data = []
        return events

    def _line(self, line: str) -> str | None:
        if line == "":
            if not self._data:
                return None
            event, self._data = "\n".join(self._data), []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None


def _line_end(text: str) -> tuple[int, int] | None:
    """(where the first line ends, where the next begins), or None without a full line. A
    CR at the very end may be the first half of a CRLF: wait for the next piece."""
    for index, char in enumerate(text):
        if char == "\n":
            return index, index + 1
        if char == "\r":
            if index + 1 == len(text):
                return None
            return index, index + (2 if text[index + 1] == "\n" else 1)
    return None
