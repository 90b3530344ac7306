"""Progress of a running request, reported to the client that asked for it.

A call asks with `_meta.progressToken` (MCP, in `tools/call` or a native glob/grep/terminal_search) and
gets `notifications/progress {progressToken, progress, message}`; or with `workDoneToken` in its params
(LSP) and gets `$/progress {token, value: {kind: "begin" | "report" | "end", …}}`. Both at once get both.

- None for fast calls: the first report goes out `FIRST_AFTER_S` after the call started, then one every
  `EVERY_S` — at most two a second.
- Never after the response: the dispatcher (methods/dispatch.py) starts the reporter in the request's
  own task and closes it in that task's `finally`, before the request table writes the answer; every
  report is sent from the event loop after checking it is still open, and sends are written in order.
- What is counted: the engine keeps a `Tally` current while ripgrep's stream arrives (files listed for
  glob; matching lines and the files holding them for grep) — only for a call that reports progress, so
  the hot path is untouched otherwise — and the tool's declaration words it (`Tool.progress`).
- `progress` is the seconds the call has been running (one decimal), strictly increasing from one
  report to the next as MCP requires — the counts themselves can stand still for seconds while a slow
  regex finds nothing — and the counts are in `message`. There is no `total` (and no LSP `percentage`):
  nothing knows in advance how much ripgrep will search.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from dsh_search.engine.searcher import Tally

FIRST_AFTER_S = 0.5
EVERY_S = 0.5

Notify = Callable[[str, Any], None]


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
    """Reports one call's progress until closed; `tally` is what the engine keeps current."""

    def __init__(
        self, notify: Notify, tool: str, words: Callable[[Tally], str], mcp_token: Any, lsp_token: Any
    ) -> None:
        self._notify = notify
        self.tool = tool
        self._words = words
        self._mcp_token = mcp_token
        self._lsp_token = lsp_token
        self.tally = Tally()
        self._started = time.monotonic()
        self._last = 0.0
        self._begun = False  # LSP: `begin` was sent, so `end` must be
        self._closed = False
        self._timer: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(FIRST_AFTER_S, self._tick)

    def message(self) -> str:
        if not self.tally.searching:
            return f"{self.tool}: waiting for a free search slot"
        words = self._words(self.tally)
        note = self.tally.note
        return f"{words} (walking the tree: {note})" if note else words

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


def begin(notify: Notify, tool: str, words: Callable[[Tally], str], params: Any) -> Reporter | None:
    """A reporter for a tool call that asked for progress (a token in its params), else None."""
    mcp_token, lsp_token = tokens_of(params)
    if mcp_token is None and lsp_token is None:
        return None
    return Reporter(notify, tool, words, mcp_token, lsp_token)
