"""The IO loop: stdin → framing → envelope → jsonrpcserver dispatch → stdout, plus lifetime.

One thread reads stdin and one writes stdout (blocking IO on whatever fds the host gave us, pipe, file
or tty); everything else runs on one asyncio loop. Each request is a task, so requests run
concurrently and answer in any order; `$/cancelRequest` (LSP) and `notifications/cancelled` (MCP)
cancel the task, and cancellation reaches the rg process group through `ripgrep.run`.

Lifetime (SPEC §1): stdin EOF lets the requests already running finish, then exits 0; `exit` and
SIGTERM/SIGINT/SIGHUP abort running requests (their rg groups terminated: SIGTERM, SIGKILL after
graceMs) and exit 0 within graceMs + 1 s. If the host stops reading our stdout (its end of the pipe is
closed), nobody can hear the answers, so the daemon aborts and exits the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import select
import signal
import stat
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from jsonrpcserver.async_dispatcher import dispatch_request
from jsonrpcserver.dispatcher import to_response
from jsonrpcserver.request import Request
from jsonrpcserver.response import to_serializable_one
from jsonrpcserver.sentinels import NOID

from . import rpc
from .framing import BadFrame, Decoder, Framing, Message, Oversized, encode

log = logging.getLogger("dsh_search.server")

Method = Callable[..., Awaitable[Any]]

# Why a request was cancelled decides how (and whether) it is answered.
CANCEL_LSP = "lsp"  # $/cancelRequest → -32800
CANCEL_MCP = "mcp"  # notifications/cancelled → no response
CANCEL_SHUTDOWN = "shutdown"  # exit, signal, lost host → SEARCH_ABORTED

_READ_SIZE = 1 << 20


class Hooks:
    """What the method layer supplies to the transport: the methods and how to word cancellations."""

    def __init__(
        self,
        methods: dict[str, Method],
        cancelled_response: Callable[[rpc.Call, str], dict[str, Any] | None],
    ) -> None:
        self.methods = methods
        self.cancelled_response = cancelled_response


class Server:
    def __init__(
        self,
        *,
        context: Any,
        hooks: Hooks,
        max_message_bytes: int,
        grace_s: float,
        framing: Framing | None = None,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        self._context = context
        self._hooks = hooks
        self._grace_s = grace_s
        self._decoder = Decoder(max_message_bytes, framing)
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        self._on_exit = on_exit
        self._out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._inflight: dict[tuple[str, Any], asyncio.Task[Any]] = {}
        self._cancel_reasons: dict[tuple[str, Any], str] = {}
        self._finish: asyncio.Future[str] | None = None
        self._abort = asyncio.Event()  # set by any ending that must not wait for running requests
        self._input_closed = False
        self.shutting_down = False  # after `shutdown`: only `exit` is served

    # -- lifecycle ---------------------------------------------------------------------------------

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._finish = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self._end, f"signal {signal.Signals(sig).name}")
        self._writer = threading.Thread(target=self._write_loop, name="stdout", daemon=True)
        self._writer.start()
        threading.Thread(target=self._read_loop, name="stdin", daemon=True).start()
        if _is_pipe_or_socket(self._stdout_fd):
            threading.Thread(target=self._watch_stdout, name="stdout-watch", daemon=True).start()

        reason = await self._finish
        log.info("exiting: %s", reason)
        if reason == "eof":
            # The host closed its end of stdin: answer what is running, then go (unless told otherwise).
            aborted = asyncio.ensure_future(self._abort.wait())
            while self._tasks and not self._abort.is_set():
                await asyncio.wait({*self._tasks, aborted}, return_when=asyncio.FIRST_COMPLETED)
            aborted.cancel()
        self._abort_all()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self._grace_s + 0.5)
        if self._on_exit is not None:
            self._on_exit()
        self._out.put(None)
        self._writer.join(timeout=1.0)
        return 0

    def _end(self, reason: str) -> None:
        if reason != "eof":
            self._abort.set()
        if self._finish is not None and not self._finish.done():
            self._finish.set_result(reason)

    def _abort_all(self) -> None:
        tracked = set()
        for key, task in list(self._inflight.items()):
            tracked.add(task)
            if not task.done():
                self._cancel_reasons.setdefault(key, CANCEL_SHUTDOWN)
                task.cancel()
        for task in list(self._tasks):
            if task not in tracked and not task.done():
                task.cancel()

    def running_requests(self, exclude: asyncio.Task[Any] | None = None) -> list[asyncio.Task[Any]]:
        return [t for t in self._inflight.values() if t is not exclude and not t.done()]

    def request_exit(self) -> None:
        self._end("exit")

    # -- input ---------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        assert self._loop is not None
        while True:
            try:
                data = os.read(self._stdin_fd, _READ_SIZE)
            except BlockingIOError:
                select.select([self._stdin_fd], [], [])
                continue
            except OSError:
                data = b""
            try:
                self._loop.call_soon_threadsafe(self._on_input, data)
            except RuntimeError:  # the loop is closed: we are exiting
                return
            if not data:
                return

    def _on_input(self, data: bytes) -> None:
        if self._input_closed:
            return
        events = self._decoder.feed(data) if data else self._decoder.feed_eof()
        for event in events:
            if isinstance(event, Message):
                self._on_message(event.body)
            elif isinstance(event, Oversized):
                self._send(rpc.error(None, rpc.INVALID_REQUEST, "Invalid request: message exceeds maxMessageBytes"))
            elif isinstance(event, BadFrame):
                self._send(rpc.error(None, rpc.PARSE_ERROR, f"Parse error: {event.reason}"))
        if not data:
            self._input_closed = True
            self._end("eof")

    def _on_message(self, body: bytes) -> None:
        parsed = rpc.parse(body)
        if isinstance(parsed, rpc.EnvelopeError):
            self._send(rpc.error(None, parsed.code, parsed.message))
            return
        if parsed.is_batch:
            self._spawn(self._run_batch(parsed.items))
            return
        item = parsed.items[0]
        if isinstance(item, rpc.Invalid):
            self._send(rpc.error(item.id, rpc.INVALID_REQUEST, f"Invalid request: {item.reason}"))
            return
        if self._handled_inline(item):
            return
        task = self._spawn(self._answer(item))
        self._track(item, task)

    def _handled_inline(self, call: rpc.Call) -> bool:
        """Transport-level notifications: cancellation and exit; other `$/` notifications are ignored."""
        if not call.is_notification:
            return False
        params = call.params if isinstance(call.params, dict) else {}
        if call.method == "$/cancelRequest":
            self._cancel(params.get("id"), CANCEL_LSP)
        elif call.method == "notifications/cancelled":
            self._cancel(params.get("requestId"), CANCEL_MCP)
        elif call.method == "exit":
            self.request_exit()
        elif call.method.startswith("$/") or call.method.startswith("notifications/"):
            pass
        else:
            return False
        return True

    def _cancel(self, id_: Any, reason: str) -> None:
        if id_ is None or not rpc.valid_id(id_):
            return
        key = rpc.id_key(id_)
        task = self._inflight.get(key)
        if task is not None and not task.done():
            self._cancel_reasons[key] = reason
            task.cancel()

    # -- dispatch ------------------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _track(self, call: rpc.Call, task: asyncio.Task[Any]) -> None:
        if call.is_notification:
            return
        key = rpc.id_key(call.id)
        self._inflight[key] = task

        def forget(_: asyncio.Task[Any]) -> None:
            if self._inflight.get(key) is task:
                del self._inflight[key]
            self._cancel_reasons.pop(key, None)

        task.add_done_callback(forget)

    async def _answer(self, call: rpc.Call) -> None:
        response = await self._run_call(call)
        if response is not None:
            self._send(response)

    async def _run_call(self, call: rpc.Call) -> dict[str, Any] | None:
        """Dispatch one call; returns the response object, or None for a notification."""
        if self.shutting_down and call.method != "exit":
            if call.is_notification:
                return None
            return rpc.error(call.id, rpc.INVALID_REQUEST, "server is shutting down")
        started = time.perf_counter()
        try:
            return await self._dispatch(call)
        except Exception:
            log.exception("internal error in %s", call.method)
            return None if call.is_notification else rpc.error(call.id, rpc.INTERNAL_ERROR, "Internal error")
        except asyncio.CancelledError:
            key = rpc.id_key(call.id) if not call.is_notification else None
            reason = self._cancel_reasons.get(key, CANCEL_SHUTDOWN) if key else CANCEL_SHUTDOWN
            if call.is_notification or reason == CANCEL_MCP:
                return None
            return self._hooks.cancelled_response(call, reason)
        finally:
            log.debug("%s %r took %.1f ms", call.method, call.id, (time.perf_counter() - started) * 1000)

    async def _dispatch(self, call: rpc.Call) -> dict[str, Any] | None:
        params: Any = [] if call.params is None else call.params
        request = Request(call.method, params, NOID if call.is_notification else call.id)
        _, outcome = await dispatch_request(self._hooks.methods, self._context, request)
        if call.is_notification:
            return None
        response = to_serializable_one(to_response(request, outcome))
        assert isinstance(response, dict)
        return response

    async def _run_batch(self, items: list[rpc.Call | rpc.Invalid]) -> None:
        waiting: list[asyncio.Task[Any] | dict[str, Any]] = []
        for item in items:
            if isinstance(item, rpc.Invalid):
                waiting.append(rpc.error(item.id, rpc.INVALID_REQUEST, f"Invalid request: {item.reason}"))
            elif not self._handled_inline(item):
                task = self._spawn(self._run_call(item))
                self._track(item, task)
                waiting.append(task)
        responses: list[dict[str, Any]] = []
        for entry in waiting:
            if isinstance(entry, dict):
                responses.append(entry)
                continue
            try:
                answer = await asyncio.shield(entry)
            except asyncio.CancelledError:
                if not entry.done():
                    entry.cancel()
                answer = await asyncio.gather(entry, return_exceptions=True)
                answer = answer[0] if isinstance(answer[0], dict) else None
            if isinstance(answer, dict):
                responses.append(answer)
        if responses:
            self._send(responses)

    # -- output --------------------------------------------------------------------------------------

    def _send(self, message: Any) -> None:
        framing = self._decoder.framing or Framing.NDJSON
        self._out.put(encode(framing, rpc.dumps(message)))

    def _write_loop(self) -> None:
        broken = False
        while (data := self._out.get()) is not None:
            if broken:
                continue
            view = memoryview(data)
            try:
                while view:
                    try:
                        written = os.write(self._stdout_fd, view)
                    except BlockingIOError:
                        select.select([], [self._stdout_fd], [])
                        continue
                    view = view[written:]
            except OSError as exc:
                broken = True
                log.warning("stdout is gone (%s); aborting", exc)
                self._from_thread(self._end, "stdout closed")

    def _watch_stdout(self) -> None:
        # poll() always reports POLLERR/POLLHUP, even with no events requested: on a pipe's write end
        # that happens exactly when the reader has closed its end.
        poller = select.poll()
        poller.register(self._stdout_fd, 0)
        while True:
            ready = poller.poll()
            if any(ev & (select.POLLERR | select.POLLHUP) for _, ev in ready):
                self._from_thread(self._end, "stdout closed")
                return

    def _from_thread(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(fn, *args)


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
