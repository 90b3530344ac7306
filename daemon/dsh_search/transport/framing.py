"""Message framing on a byte stream, sans IO: bytes in, events out.

Two framings share one decoder. The first byte of input picks one unless it is forced: `C` or `c`
starts an LSP header (`Content-Length: N\\r\\n\\r\\n` then N bytes), anything else is newline-delimited
JSON (one message per line, blank lines ignored, a trailing CR dropped). A message larger than
`max_message_bytes` becomes an `Oversized` event and is skipped without being buffered: NDJSON up to
the next newline, LSP by its declared length. Malformed LSP headers become `BadFrame` events and the
decoder resynchronises at the next `Content-Length` header, wherever it starts (so the leftover of a
body whose declared length was too short costs one error, never the next intact frame). Nothing here
raises on hostile input.
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class Framing(enum.Enum):
    NDJSON = "ndjson"
    LSP = "lsp"


class Message(NamedTuple):
    body: bytes


class Oversized(NamedTuple):
    size: int | None  # the declared or seen size; None when the line was cut off unseen


class BadFrame(NamedTuple):
    reason: str


Event = Message | Oversized | BadFrame

_HEADER_END = b"\r\n\r\n"
_MAX_HEADER_BYTES = 8192
_CONTENT_LENGTH = b"content-length"


def encode(framing: Framing, body: bytes) -> bytes:
    if framing is Framing.LSP:
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return body + b"\n"


class Decoder:
    def __init__(self, max_message_bytes: int, framing: Framing | None = None) -> None:
        self._max = max_message_bytes
        self._framing = framing
        self._buf = bytearray()
        self._scan = 0  # NDJSON: buffer bytes before this offset hold no newline
        self._discarding = False  # NDJSON: skipping the rest of an oversized line
        self._body_len: int | None = None  # LSP: length of the body being read
        self._skip = 0  # LSP: bytes of an oversized body still to skip

    @property
    def framing(self) -> Framing | None:
        return self._framing

    def feed(self, data: bytes) -> list[Event]:
        if not data:
            return []
        if self._framing is None:
            self._framing = Framing.LSP if data[:1] in (b"C", b"c") else Framing.NDJSON
        if self._framing is Framing.LSP:
            return self._feed_lsp(data)
        return self._feed_ndjson(data)

    def feed_eof(self) -> list[Event]:
        """The input ended: a last NDJSON line without its newline still counts."""
        events: list[Event] = []
        if self._framing is Framing.NDJSON and not self._discarding and self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            events.extend(self._ndjson_line(line))
        elif self._framing is Framing.LSP and (self._buf.strip() or self._body_len is not None or self._skip):
            events.append(BadFrame("input ended inside a message"))
            self._buf.clear()
        return events

    # -- NDJSON --------------------------------------------------------------------------------------

    def _ndjson_line(self, line: bytes | bytearray) -> list[Event]:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self._max:
            return [Oversized(len(line))]
        if not line.strip():
            return []
        return [Message(bytes(line))]

    def _feed_ndjson(self, data: bytes) -> list[Event]:
        events: list[Event] = []
        view = memoryview(data)
        if self._discarding:
            newline = data.find(b"\n")
            if newline < 0:
                return events
            view = view[newline + 1 :]
            self._discarding = False
        buf = self._buf
        buf += view
        start = 0
        scan = self._scan
        while (newline := buf.find(b"\n", scan)) >= 0:
            events.extend(self._ndjson_line(buf[start:newline]))
            start = scan = newline + 1
        del buf[:start]
        self._scan = len(buf)
        if len(buf) > self._max + 1:  # no newline yet and already too long to be a message
            events.append(Oversized(None))
            buf.clear()
            self._scan = 0
            self._discarding = True
        return events

    # -- LSP -----------------------------------------------------------------------------------------

    def _feed_lsp(self, data: bytes) -> list[Event]:
        events: list[Event] = []
        view = memoryview(data)
        if self._skip:
            taken = min(self._skip, len(view))
            self._skip -= taken
            view = view[taken:]
        buf = self._buf
        buf += view
        while True:
            if self._skip:
                taken = min(self._skip, len(buf))
                del buf[:taken]
                self._skip -= taken
                if self._skip:
                    break
            if self._body_len is None:
                if not self._read_header(events):
                    break
                continue
            if len(buf) < self._body_len:
                break
            events.append(Message(bytes(buf[: self._body_len])))
            del buf[: self._body_len]
            self._body_len = None
        return events

    def _read_header(self, events: list[Event]) -> bool:
        """Consume one header block if complete; False when more input is needed."""
        buf = self._buf
        # Tolerate blank lines between messages.
        lead = len(buf) - len(buf.lstrip(b"\r\n"))
        if lead:
            del buf[:lead]
        end = buf.find(_HEADER_END)
        if end < 0:
            if len(buf) > _MAX_HEADER_BYTES:
                events.append(BadFrame("header block too long"))
                self._resync(1)
                return True
            return False
        length: int | None = None
        problem = None
        for line in bytes(buf[:end]).split(b"\r\n"):
            name, sep, value = line.partition(b":")
            if not sep:
                problem = "malformed header line"
                break
            if name.strip().lower() == _CONTENT_LENGTH:
                text = value.strip()
                if not text.isdigit():
                    problem = "Content-Length is not a non-negative integer"
                    break
                length = int(text)
        if problem is None and length is None:
            problem = "missing Content-Length header"
        if problem is not None or length is None:
            events.append(BadFrame(problem or "missing Content-Length header"))
            # The next frame's header may sit inside this block (after the leftover of a body whose
            # Content-Length was too short, say): look for it from the second byte on.
            self._resync(1)
            return True
        del buf[: end + len(_HEADER_END)]
        if length > self._max:
            events.append(Oversized(length))
            self._skip = length
        else:
            self._body_len = length
        return True

    def _resync(self, past: int) -> None:
        """Drop bytes up to the next header that names Content-Length (searched from `past`)."""
        lowered = bytes(self._buf).lower()
        nxt = lowered.find(_CONTENT_LENGTH, past)
        if nxt < 0:
            # Keep only a tail that could be the start of a header name split across reads.
            keep = next(
                (n for n in range(len(_CONTENT_LENGTH) - 1, 0, -1) if lowered.endswith(_CONTENT_LENGTH[:n])),
                0,
            )
            del self._buf[: len(self._buf) - keep]
        else:
            del self._buf[:nxt]
