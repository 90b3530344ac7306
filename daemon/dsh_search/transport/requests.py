"""The request table: every call in flight, its task, and how it is answered (or not).

One entry per in-flight request holds its call, its asyncio task and, once it is cancelled, why. The
answer is produced in the task's done-callback, never inside the task: a task cancelled before it ever
ran still completes (as cancelled) and still runs its callbacks, so every request is answered exactly
once — its result, its error, or the cancellation answer its reason calls for — whatever instant the
cancellation landed at. A batch is answered with one array once all its elements are done.

Cancellation reasons:
- CALLER: `$/cancelRequest` (LSP) → error -32800;
- CLIENT: MCP's `notifications/cancelled` → no answer at all, as MCP requires;
- SHUTDOWN: `exit`, a signal, a host gone → `SEARCH_ABORTED`, written best effort before exiting.

The peer's responses to the daemon's own requests (`jsonrpc.Reply`) are handed to `on_reply` and never
answered, alone or inside a batch.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from dsh_search.transport import jsonrpc

log = logging.getLogger("dsh_search.requests")

Response = dict[str, Any]


class CancelReason(enum.Enum):
    CALLER = "caller"
    CLIENT = "client"
    SHUTDOWN = "shutdown"


Dispatch = Callable[[jsonrpc.Call], Awaitable[Response | None]]
CancelledAnswer = Callable[[jsonrpc.Call, CancelReason], Response | None]
Send = Callable[[Any], None]


class _Batch:
    """Collects the answers of one batch's elements; sends them as one array when the last is in."""

    def __init__(self, size: int, send: Send) -> None:
        self._answers: list[Response | None] = [None] * size
        self._pending = size
        self._send = send

    def answer(self, index: int, response: Response | None) -> None:
        self._answers[index] = response
        self._pending -= 1
        if self._pending == 0:
            answers = [a for a in self._answers if a is not None]
            if answers:
                self._send(answers)


class _Entry:
    __slots__ = ("batch", "call", "index", "reason", "task")

    def __init__(self, call: jsonrpc.Call, batch: _Batch | None = None, index: int = 0) -> None:
        self.call = call
        self.task: asyncio.Task[Response | None]  # set once the task is made, right after
        self.reason: CancelReason | None = None
        self.batch = batch
        self.index = index


class RequestTable:
    def __init__(self, dispatch: Dispatch, cancelled_answer: CancelledAnswer, send: Send) -> None:
        self._dispatch = dispatch
        self._cancelled_answer = cancelled_answer
        self._send = send
        self._by_id: dict[tuple[str, Any], list[_Entry]] = {}
        self._entries: set[_Entry] = set()  # notifications included; an entry leaves once answered
        self._idle = asyncio.Event()
        self._idle.set()
        self.on_exit: Callable[[], None] = lambda: None  # the `exit` notification
        self.on_idle: Callable[[], None] = lambda: None  # every call taken in has been answered
        self.on_reply: Callable[[jsonrpc.Reply], None] = lambda _reply: None  # answers to our requests

    @property
    def idle(self) -> bool:
        """Whether every call taken in has been answered."""
        return not self._entries

    # -- intake --------------------------------------------------------------------------------------

    def submit(self, incoming: jsonrpc.Incoming) -> None:
        """Start every call of one message; invalid elements are answered at once."""
        if not incoming.is_batch:
            item = incoming.items[0]
            if isinstance(item, jsonrpc.Reply):
                self.on_reply(item)
            elif isinstance(item, jsonrpc.Invalid):
                self._send(_invalid(item))
            elif not self._handled_inline(item):
                self._start(item, None, 0)
            return
        batch = _Batch(len(incoming.items), self._send)
        for index, item in enumerate(incoming.items):
            if isinstance(item, jsonrpc.Reply):
                self.on_reply(item)
                batch.answer(index, None)
            elif isinstance(item, jsonrpc.Invalid):
                batch.answer(index, _invalid(item))
            elif self._handled_inline(item):
                batch.answer(index, None)
            else:
                self._start(item, batch, index)

    def _handled_inline(self, call: jsonrpc.Call) -> bool:
        """Transport notifications take effect at once, in arrival order: cancellations and `exit`."""
        if not call.is_notification:
            return False
        params = call.params if isinstance(call.params, dict) else {}
        if call.method == "$/cancelRequest":
            self.cancel(params.get("id"), CancelReason.CALLER)
        elif call.method == "notifications/cancelled":
            self.cancel(params.get("requestId"), CancelReason.CLIENT)
        elif call.method == "exit":
            self.on_exit()
        elif call.method.startswith("$/"):
            pass  # other LSP protocol notifications are optional to support
        else:
            return False
        return True

    def _start(self, call: jsonrpc.Call, batch: _Batch | None, index: int) -> None:
        entry = _Entry(call, batch=batch, index=index)
        entry.task = asyncio.ensure_future(self._dispatch(call))
        self._entries.add(entry)
        self._idle.clear()
        if not call.is_notification:
            self._by_id.setdefault(jsonrpc.id_key(call.id), []).append(entry)
        entry.task.add_done_callback(lambda _task: self._finished(entry))

    # -- answers -------------------------------------------------------------------------------------

    def _finished(self, entry: _Entry) -> None:
        self._entries.discard(entry)
        if not self._entries:
            self._idle.set()
        call = entry.call
        if not call.is_notification:
            key = jsonrpc.id_key(call.id)
            same_id = self._by_id.get(key, [])
            if entry in same_id:
                same_id.remove(entry)
            if not same_id:
                self._by_id.pop(key, None)
        response = self._answer_of(entry)
        if entry.batch is not None:
            entry.batch.answer(entry.index, response)
        elif response is not None:
            self._send(response)
        if not self._entries:
            self.on_idle()

    def _answer_of(self, entry: _Entry) -> Response | None:
        call, task = entry.call, entry.task
        if task.cancelled():
            if call.is_notification:
                return None
            return self._cancelled_answer(call, entry.reason or CancelReason.SHUTDOWN)
        error = task.exception()
        if error is not None:
            log.error("internal error in %s", call.method, exc_info=error)
            return None if call.is_notification else jsonrpc.error(call.id, jsonrpc.INTERNAL_ERROR, "Internal error")
        return None if call.is_notification else task.result()

    # -- cancellation ----------------------------------------------------------------------------------

    def cancel(self, id_: Any, reason: CancelReason) -> None:
        """Cancel the request(s) in flight with this id; an unknown or finished id is ignored."""
        if id_ is None or not jsonrpc.valid_id(id_):
            return
        for entry in self._by_id.get(jsonrpc.id_key(id_), ()):
            if not entry.task.done():
                entry.reason = entry.reason or reason
                entry.task.cancel()

    def abort_all(self) -> None:
        """Cancel everything in flight (exit, a signal, the host gone)."""
        for entry in list(self._entries):
            if not entry.task.done():
                entry.reason = entry.reason or CancelReason.SHUTDOWN
                entry.task.cancel()

    # -- inspection --------------------------------------------------------------------------------------

    async def drained(self) -> None:
        """Wait until every call taken in so far has been answered."""
        await self._idle.wait()

    def running_requests(self, exclude: asyncio.Task[Any] | None = None) -> list[asyncio.Task[Response | None]]:
        """Requests (not notifications) still running, other than `exclude`."""
        return [
            e.task for e in self._entries if not e.call.is_notification and e.task is not exclude and not e.task.done()
        ]

    def __len__(self) -> int:
        return len(self._entries)


def _invalid(item: jsonrpc.Invalid) -> Response:
    return jsonrpc.error(item.id, jsonrpc.INVALID_REQUEST, f"Invalid request: {item.reason}")
