"""Terminal scrollback, sans IO: sanitising, retention, terminal_read coordinates and pages
(docs/terminal.md); the search over a snapshot is the engine's (engine/terminal.py).

A host streams a terminal's output in chunks (`scrollback/append`). Each chunk goes through three
incremental stages, each keeping the state a chunk boundary can cut through:

1. decoding — `data` (a JSON string) may end in the high half of a UTF-16 surrogate pair whose low
   half starts the next chunk; `dataBase64` (raw PTY bytes) may end inside a UTF-8 sequence. Both
   are joined with the next chunk; what can never be joined becomes U+FFFD.
2. sanitising (`Sanitiser`) — escape sequences and BEL are dropped, CR and CRLF become `\n`.
3. retention (`Scrollback`) — the newest `scrollbackLines` lines, then the newest `scrollbackMaxBytes`
   UTF-8 bytes on whole code points; a sticky `truncated` flag remembers that anything was dropped.

Every stage does work proportional to the chunk, never to the whole buffer: the retained text is a
list of UTF-8 chunks plus the stream positions of its line breaks, so dropping old output only moves
a start position. A search or read takes a `Snapshot` (one join, cached until the next append).

Coordinates are terminal_read's: `totalLines` is the number of `\n`-separated segments (0 for empty
text, so a trailing newline makes an empty newest line); offset 0 is the newest line.
"""

from __future__ import annotations

import bisect
import codecs
import re
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, NamedTuple

# --- sanitising ------------------------------------------------------------------------------------------

_NORMAL, _ESC, _ESC_INTERMEDIATE, _CSI, _STRING = range(5)

_SPECIAL = re.compile(r"[\x07\x1b\r]")  # what plain text stops at
_STRING_STOP = re.compile(r"[\x07\x1b\r\n]")  # what ends (or abandons) an OSC/DCS/SOS/PM/APC string
_CSI_BODY = re.compile(r"[\x20-\x3f]*")  # parameter and intermediate bytes
_INTERMEDIATES = re.compile(r"[\x20-\x2f]*")
_STRING_INTRODUCERS = "]PX^_"  # OSC, DCS, SOS, PM, APC


class Sanitiser:
    """Streaming terminal-output cleaner; `feed` returns the clean text of one chunk.

    - CSI (`ESC [ params intermediates final`) is removed.
    - OSC, DCS, SOS, PM and APC strings (`ESC ] … `, `ESC P …`, …) are removed up to their terminator,
      BEL or ST (`ESC \\`). A line break inside one abandons it (and is kept), so a stray `ESC ]` cannot
      swallow the rest of the output.
    - Other escape sequences (`ESC (B`, `ESC =`, `ESC 7`, …: ESC, intermediates 0x20–0x2F, a final
      0x30–0x7E) are removed. An ESC followed by anything else is dropped alone.
    - BEL is removed. CRLF and lone CR become `\n`; the LF of a CRLF is recognised across chunk
      boundaries and across removed sequences (`\r\x1b[K\n` is one break).
    - A sequence interrupted by a character it cannot contain ends there; the character is kept.
    - Everything else (tab, backspace, other C0 controls, 8-bit C1 code points) is kept as it is.
    """

    def __init__(self) -> None:
        self._state = _NORMAL
        self._after_cr = False  # the last line break came from a CR: an LF right after it is its partner

    def feed(self, text: str) -> str:
        out: list[str] = []
        state = self._state
        i, n = 0, len(text)
        while i < n:
            if state == _NORMAL:
                if self._after_cr and text[i] == "\n":
                    self._after_cr = False
                    i += 1
                    continue
                found = _SPECIAL.search(text, i)
                stop = found.start() if found else n
                if stop > i:
                    out.append(text[i:stop])
                    self._after_cr = False
                if found is None:
                    break
                char = text[stop]
                i = stop + 1
                if char == "\r":
                    out.append("\n")
                    self._after_cr = True
                elif char == "\x1b":
                    state = _ESC
            elif state == _ESC:
                char = text[i]
                if char == "[":
                    state, i = _CSI, i + 1
                elif char in _STRING_INTRODUCERS:
                    state, i = _STRING, i + 1
                elif "\x20" <= char <= "\x2f":
                    state, i = _ESC_INTERMEDIATE, i + 1
                elif "\x30" <= char <= "\x7e":
                    state, i = _NORMAL, i + 1
                elif char == "\x1b":
                    i += 1
                else:
                    state = _NORMAL  # a lone ESC: dropped, the character is kept
            elif state in (_CSI, _ESC_INTERMEDIATE):
                i = _skip(_CSI_BODY if state == _CSI else _INTERMEDIATES, text, i)
                if i < n:
                    if ("\x40" if state == _CSI else "\x30") <= text[i] <= "\x7e":
                        i += 1  # the final byte
                    state = _NORMAL
            else:  # _STRING
                found = _STRING_STOP.search(text, i)
                if found is None:
                    break
                char = text[found.start()]
                if char in "\r\n":
                    state, i = _NORMAL, found.start()
                else:
                    state, i = (_NORMAL if char == "\x07" else _ESC), found.start() + 1
        self._state = state
        return "".join(out)


def _skip(run: re.Pattern[str], text: str, i: int) -> int:
    """The end of the run of `run`'s characters that starts at i."""
    found = run.match(text, i)
    return found.end() if found else i


# --- decoding ---------------------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


class _Decoder:
    """Turns chunks of either kind into text, joining what a chunk boundary split."""

    def __init__(self) -> None:
        self._high = ""  # a trailing high surrogate waiting for its low half
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    def text(self, data: str) -> str:
        flushed = self._utf8.decode(b"", final=True)  # bytes of a character the stream switched away from
        self._utf8.reset()
        data = self._high + data
        self._high = ""
        if data and "\ud800" <= data[-1] <= "\udbff":
            data, self._high = data[:-1], data[-1]
        if not data.isascii() and _SURROGATE.search(data):
            # Pairs become one character; lone halves become U+FFFD.
            data = data.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return flushed + data

    def bytes(self, data: bytes) -> str:
        flushed = "\ufffd" if self._high else ""  # a high surrogate the stream switched away from
        self._high = ""
        return flushed + self._utf8.decode(data)


# --- the buffer -------------------------------------------------------------------------------------------

_CHUNK = 1 << 16  # retained bytes are stored in pieces of this size, so dropping old output is cheap
_SESSION_OVERHEAD = 4096  # the objects of an empty session, counted so that many tiny ones are bounded too


class Snapshot(NamedTuple):
    """The retained text at one moment, as UTF-8, with the positions of its line breaks."""

    data: bytes
    breaks: array[int]  # offsets of b"\n" in data, ascending
    truncated: bool  # retention has dropped output

    @property
    def total_lines(self) -> int:
        return len(self.breaks) + 1 if self.data else 0

    def span(self, first: int, stop: int) -> tuple[int, int]:
        """Byte range of lines first..stop-1 (chronological indices), without the final line break."""
        begin = self.breaks[first - 1] + 1 if first > 0 else 0
        end = self.breaks[stop - 1] if stop - 1 < len(self.breaks) else len(self.data)
        return begin, end

    def text(self, first: int, stop: int) -> str:
        begin, end = self.span(first, stop)
        return self.data[begin:end].decode("utf-8", "replace")

    def line(self, index: int) -> str:
        return self.text(index, index + 1)

    def line_at(self, position: int) -> int:
        """The chronological index of the line holding byte `position` (not a line break)."""
        return bisect.bisect_right(self.breaks, position)


class Scrollback:
    """One terminal session's retained output."""

    def __init__(self, max_lines: int, max_bytes: int) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.truncated = False
        self._decoder = _Decoder()
        self._sanitiser = Sanitiser()
        # Positions are offsets in the stream of sanitised UTF-8 bytes since the session began.
        self._chunks: deque[bytearray] = deque()
        self._chunks_at = 0  # stream position of _chunks[0][0]
        self._start = 0  # first retained byte
        self._end = 0  # one past the last byte
        self._breaks = array("q")  # stream positions of b"\n"; those before _first_break are gone
        self._first_break = 0
        self._snapshot: Snapshot | None = None

    # -- appending -----------------------------------------------------------------------------------

    def append_text(self, data: str) -> None:
        self._append(self._decoder.text(data))

    def append_bytes(self, data: bytes) -> None:
        self._append(self._decoder.bytes(data))

    @property
    def total_lines(self) -> int:
        return len(self._breaks) - self._first_break + 1 if self._end > self._start else 0

    def _append(self, text: str) -> None:
        clean = self._sanitiser.feed(text).encode("utf-8")
        if not clean:
            return
        self._snapshot = None
        base = self._end
        at = clean.find(b"\n")
        while at != -1:
            self._breaks.append(base + at)
            at = clean.find(b"\n", at + 1)
        view = memoryview(clean)
        while view:
            if not self._chunks or len(self._chunks[-1]) >= _CHUNK:
                self._chunks.append(bytearray())
            last = self._chunks[-1]
            room = _CHUNK - len(last)
            last += view[:room]
            view = view[room:]
        self._end += len(clean)
        self._retain()

    def _retain(self) -> None:
        excess_lines = self.total_lines - self.max_lines
        if excess_lines > 0:
            self._drop_to(self._breaks[self._first_break + excess_lines - 1] + 1)
        if self._end - self._start > self.max_bytes:
            position = self._end - self.max_bytes
            self._drop_to(position)
            while position < self._end and 0x80 <= self._byte_at(position) < 0xC0:  # inside a character
                position += 1
                self._drop_to(position)

    def _drop_to(self, position: int) -> None:
        self.truncated = True
        self._start = position
        while self._chunks and self._chunks_at + len(self._chunks[0]) <= position:
            self._chunks_at += len(self._chunks.popleft())
        breaks = self._breaks
        while self._first_break < len(breaks) and breaks[self._first_break] < position:
            self._first_break += 1
        if self._first_break > 1024 and self._first_break * 2 > len(breaks):
            del breaks[: self._first_break]
            self._first_break = 0

    def _byte_at(self, position: int) -> int:
        return self._chunks[0][position - self._chunks_at]

    # -- reading -------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            skip = self._start - self._chunks_at
            pieces: list[Any] = list(self._chunks)
            if pieces and skip:
                pieces[0] = memoryview(pieces[0])[skip:]
            start = self._start
            breaks = self._breaks[self._first_break :]
            if start:
                breaks = array("q", [p - start for p in breaks])
            self._snapshot = Snapshot(data=b"".join(pieces), breaks=breaks, truncated=self.truncated)
        return self._snapshot

    @property
    def memory_bytes(self) -> int:
        """What this buffer holds in memory, roughly: its chunks, its line index, its cached snapshot."""
        size = _SESSION_OVERHEAD + sum(len(c) for c in self._chunks) + 8 * len(self._breaks)
        if self._snapshot is not None:
            size += len(self._snapshot.data) + 8 * len(self._snapshot.breaks)
        return size


class Terminals:
    """The scrollback of every open terminal session, within one memory budget across them all.

    Each session keeps its own newest lines and bytes (`max_lines`, `max_bytes`); all sessions together
    keep at most `total_max_bytes` (as `Scrollback.memory_bytes` counts it). Past that, the least
    recently used sessions — appended to, read or searched longest ago — are evicted whole; the session
    in use is never evicted by its own append. An evicted session's id is remembered (the newest
    `_EVICTED_IDS` of them), so that a later read or search can say what happened; an append to it
    starts a fresh buffer marked truncated. `on_release` runs after sessions were dropped, so that the
    process can hand the freed memory back to the system.
    """

    _EVICTED_IDS = 4096

    def __init__(
        self, max_lines: int, max_bytes: int, total_max_bytes: int, on_release: Callable[[], None] = lambda: None
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.total_max_bytes = total_max_bytes
        self._on_release = on_release
        self._sessions: OrderedDict[str, Scrollback] = OrderedDict()  # least recently used first
        self._memory: dict[str, int] = {}
        self._total = 0
        self._evicted: OrderedDict[str, None] = OrderedDict()

    @property
    def total_bytes(self) -> int:
        return self._total

    def __len__(self) -> int:
        return len(self._sessions)

    def append_text(self, session_id: str, data: str) -> Scrollback:
        buffer = self._open(session_id)
        buffer.append_text(data)
        self._settle(session_id, buffer)
        return buffer

    def append_bytes(self, session_id: str, data: bytes) -> Scrollback:
        buffer = self._open(session_id)
        buffer.append_bytes(data)
        self._settle(session_id, buffer)
        return buffer

    def snapshot(self, session_id: str) -> Snapshot | None:
        """The session's retained text (None for an unknown session); the session counts as used."""
        buffer = self._sessions.get(session_id)
        if buffer is None:
            return None
        snap = buffer.snapshot()
        self._settle(session_id, buffer)
        return snap

    def was_evicted(self, session_id: str) -> bool:
        return session_id in self._evicted

    def close(self, session_id: str) -> bool:
        buffer = self._sessions.pop(session_id, None)
        self._evicted.pop(session_id, None)
        if buffer is None:
            return False
        self._total -= self._memory.pop(session_id)
        self._on_release()
        return True

    def _open(self, session_id: str) -> Scrollback:
        buffer = self._sessions.get(session_id)
        if buffer is None:
            buffer = self._sessions[session_id] = Scrollback(self.max_lines, self.max_bytes)
            self._memory[session_id] = 0
            if session_id in self._evicted:
                del self._evicted[session_id]
                buffer.truncated = True  # its earlier output was evicted
        return buffer

    def _settle(self, session_id: str, buffer: Scrollback) -> None:
        """Account for the session's new size, mark it most recently used, evict others past the budget."""
        self._sessions.move_to_end(session_id)
        size = buffer.memory_bytes
        self._total += size - self._memory[session_id]
        self._memory[session_id] = size
        evicted = False
        while self._total > self.total_max_bytes and len(self._sessions) > 1:
            victim, _ = self._sessions.popitem(last=False)
            self._total -= self._memory.pop(victim)
            self._evicted[victim] = None
            if len(self._evicted) > self._EVICTED_IDS:
                self._evicted.popitem(last=False)
            evicted = True
        if evicted:
            self._on_release()


# --- reading and searching ----------------------------------------------------------------------------------


def read_page(snap: Snapshot, offset: int, count: int) -> dict[str, Any]:
    """A page in terminal_read's coordinates: the `count` lines ending `offset` lines before the newest."""
    total = snap.total_lines
    if offset >= total:
        return {"text": "", "lineBegin": offset, "lineEnd": offset, "totalLines": total, "truncated": snap.truncated}
    end = total - offset
    start = max(0, end - count)
    return {
        "text": snap.text(start, end),
        "lineBegin": offset,
        "lineEnd": offset + (end - start),
        "totalLines": total,
        "truncated": snap.truncated,
    }
