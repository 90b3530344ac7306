"""Progress of a running request, reported to the client that asked for it.

A call asks with `_meta.progressToken` (MCP, in `tools/call` or a native glob/grep/terminal_search) and
gets `notifications/progress {progressToken, progress, message}`; or with `workDoneToken` in its params
(LSP) and gets `$/progress {token, value: {kind: "begin" | "report" | "end", …}}`. Both at once get both.

- None for fast calls: the first report goes out `FIRST_AFTER_S` after the call started, then one every
  `EVERY_S` — at most two a second.
- Never after the response: the reporter lives in the request's own task (a context variable) and is
  closed in that task's `finally`, before the request table writes the answer; every report is sent
  from the event loop after checking it is still open, and sends are written in order.
- What is counted: ripgrep's stream, as it arrives (files listed for glob; matching lines and the files
  holding them for grep), through `counting_sink`, which wraps the sink of `core.run_rg` only when the
  current call reports progress — the parsing on the hot path is untouched otherwise.
- `progress` is the seconds the call has been running (one decimal), strictly increasing from one
  report to the next as MCP requires — the counts themselves can stand still for seconds while a slow
  regex finds nothing — and the counts are in `message`. There is no `total` (and no LSP `percentage`):
  nothing knows in advance how much ripgrep will search.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

FIRST_AFTER_S = 0.5
EVERY_S = 0.5

Notify = Callable[[str, Any], None]
Sink = Callable[[bytes], None]

# What each tool counts in ripgrep's stdout: (needle for `items`, needle for `files` or None).
_NEEDLES: dict[str, tuple[bytes, bytes | None]] = {
    "glob": (b"\0", None),  # one NUL after each path (--null)
    "grep": (b'{"type":"match"', b'{"type":"begin"'),  # --json: one begin record per file with matches
}


def _valid_token(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def tokens_of(params: Any) -> tuple[Any, Any]:
    """(MCP progressToken, LSP workDoneToken) of a call's params; None where absent or malformed."""
    if not isinstance(params, dict):
        return None, None
    meta = params.get("_meta")
    mcp = meta.get("progressToken") if isinstance(meta, dict) else None
    lsp = params.get("workDoneToken")
    return (mcp if _valid_token(mcp) else None), (lsp if _valid_token(lsp) else None)


class Reporter:
    def __init__(self, notify: Notify, tool: str, mcp_token: Any, lsp_token: Any) -> None:
        self._notify = notify
        self.tool = tool
        self._mcp_token = mcp_token
        self._lsp_token = lsp_token
        self._started = time.monotonic()
        self._last = 0.0
        self._begun = False  # LSP: `begin` was sent, so `end` must be
        self._closed = False
        self.searching = False  # ripgrep has started (the call is no longer waiting for a slot)
        self.items = 0  # written by ripgrep's reading thread only
        self.files = 0
        self._timer: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(FIRST_AFTER_S, self._tick)

    def message(self) -> str:
        if not self.searching:
            return f"{self.tool}: waiting for a free search slot"
        if self.tool == "glob":
            return f"glob: {self.items} files found so far"
        if self.tool == "grep":
            return f"grep: {self.items} matches in {self.files} files so far"
        return f"{self.tool}: searching"

    def _tick(self) -> None:
        if self._closed:
            return
        progress = max(round(time.monotonic() - self._started, 1), round(self._last + 0.1, 1))
        self._last = progress
        message = self.message()
        if self._mcp_token is not None:
            self._notify(
                "notifications/progress",
                {"progressToken": self._mcp_token, "progress": progress, "message": message},
            )
        if self._lsp_token is not None:
            if self._begun:
                value: dict[str, Any] = {"kind": "report", "message": message}
            else:
                self._begun = True
                value = {"kind": "begin", "title": f"dsh-search {self.tool}", "cancellable": True, "message": message}
            self._notify("$/progress", {"token": self._lsp_token, "value": value})
        self._timer = asyncio.get_running_loop().call_later(EVERY_S, self._tick)

    def close(self) -> None:
        """The call is over: no report from now on (an LSP `end` if a `begin` went out)."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._begun:
            self._notify("$/progress", {"token": self._lsp_token, "value": {"kind": "end", "message": self.message()}})

    # -- counting (ripgrep's reading thread) -------------------------------------------------------------

    def counting(self, sink: Sink) -> Sink:
        """`sink`, counting what the tool counts in each chunk on its way through."""
        self.searching = True
        needles = _NEEDLES.get(self.tool)
        if needles is None:
            return sink
        item_needle, file_needle = needles
        item_count = _Counter(item_needle)
        file_count = _Counter(file_needle) if file_needle is not None else None

        def counted(chunk: bytes) -> None:
            self.items += item_count.feed(chunk)
            if file_count is not None:
                self.files += file_count.feed(chunk)
            sink(chunk)

        return counted


class _Counter:
    """Occurrences of a needle in a stream of chunks, those that straddle two chunks included."""

    def __init__(self, needle: bytes) -> None:
        self._needle = needle
        self._keep = len(needle) - 1
        self._tail = b""

    def feed(self, chunk: bytes) -> int:
        found = chunk.count(self._needle)
        if self._keep:
            # Shorter than the needle on both sides, so every hit here straddles the boundary.
            found += (self._tail + chunk[: self._keep]).count(self._needle)
            self._tail = (self._tail + chunk)[-self._keep :] if len(chunk) < self._keep else chunk[-self._keep :]
        return found


_CURRENT: ContextVar[Reporter | None] = ContextVar("dsh_search_progress", default=None)


def begin(notify: Notify, tool: str | None, params: Any) -> Reporter | None:
    """Start reporting for the call running in this task, if it asked for progress."""
    mcp_token, lsp_token = tokens_of(params)
    if tool is None or (mcp_token is None and lsp_token is None):
        return None
    reporter = Reporter(notify, tool, mcp_token, lsp_token)
    _CURRENT.set(reporter)
    return reporter


def counting_sink(sink: Sink | None) -> Sink | None:
    """The hook `core.run_rg` calls: `sink` unchanged unless the current call reports progress."""
    reporter = _CURRENT.get()
    if reporter is None:
        return sink
    if sink is None:
        reporter.searching = True
        return None
    return reporter.counting(sink)
