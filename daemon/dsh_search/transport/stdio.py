"""The IO loop: stdin → framing → envelope → request table → stdout, plus lifetime.

One thread reads stdin and one writes stdout (blocking IO on whatever fds the host gave us, pipe, file
or tty); everything else runs on one asyncio loop. Each request is a task, so requests run
concurrently and answer in any order; `$/cancelRequest` (LSP) and `notifications/cancelled` (MCP)
cancel the task; the task's own cancellation stops whatever it started (the engine terminates its rg
process group).

Lifetime (docs/hosts.md, "Stopping it"): stdin EOF lets the requests already running finish, then exits 0
(an MCP client's session, which ends with its input, allows them a short window instead: `eof_window`); `exit` and
SIGTERM/SIGINT/SIGHUP abort running requests (their rg groups terminated: SIGTERM, SIGKILL after
graceMs) and exit 0 within graceMs + 1 s. If the host stops reading our stdout (its end of the pipe is
closed), nobody can hear the answers, so the daemon aborts and exits the same way.

Through a channel (ssh, docker exec, kubectl exec: `relayed`), the reader of our stdout is the channel,
which learns that its own reader, the host, is gone only when it next writes to it: at stdin EOF, while
requests still run, the daemon writes it a notification (`DRAINING`) at once and then once a second, so that
a channel whose host has died closes our stdout, and the daemon aborts as above instead of finishing
searches nobody will read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import select
import threading
from collections.abc import Callable
from typing import Any

from dsh_search import osdep
from dsh_search.transport import jsonrpc
from dsh_search.transport.framing import BadFrame, Decoder, Framing, Message, Oversized, encode
from dsh_search.transport.outgoing import OutgoingRequests
from dsh_search.transport.requests import CancelledAnswer, Dispatch, RequestTable

log = logging.getLogger("dsh_search.server")

_READ_SIZE = 1 << 20
# Input read but not yet taken apart by the loop. Past it, the reader stops reading until the loop
# catches up, so a host that writes faster than the daemon works (a flood of scrollback appends on a
# busy machine) fills the pipe, not the daemon's memory.
_MAX_UNREAD_BYTES = 8 << 20
# The notification a relayed daemon writes while it answers what runs after stdin EOF, and how often.
DRAINING = "$/dsh-search/draining"
_DRAINING_EVERY_S = 1.0


class Server:
    """The stdio pumps and the daemon's lifetime; requests themselves live in a `RequestTable`."""

    def __init__(
        self,
        *,
        dispatch: Dispatch,
        cancelled_answer: CancelledAnswer,
        max_message_bytes: int,
        grace_s: float,
        framing: Framing | None = None,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        on_exit: Callable[[], None] | None = None,
        handle_signals: bool = True,
        eof_window: Callable[[], float | None] | None = None,
        relayed: bool = False,
    ) -> None:
        self._grace_s = grace_s
        # At stdin EOF: how long the requests still running may take to finish before they are aborted
        # (None: as long as each takes, within its own bounds). Asked when the EOF arrives.
        self._eof_window = eof_window
        self._relayed = relayed  # stdout is read by a channel to the host (see the module docstring)
        self._relay_task: asyncio.Task[None] | None = None
        self._decoder = Decoder(max_message_bytes, framing)
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        self._on_exit = on_exit
        self._handle_signals = handle_signals  # False: a server inside another program (tests)
        self._out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.requests = RequestTable(dispatch, cancelled_answer, self.send)
        self.requests.on_exit = self.request_exit
        self.outgoing = OutgoingRequests(self.send)  # the daemon's own requests to the peer
        self.requests.on_reply = self.outgoing.on_reply
        self._finish: asyncio.Future[str] | None = None
        self._abort = asyncio.Event()  # set by any ending that must not wait for running requests
        self._ending = asyncio.Event()  # set by every ending: stdin EOF, exit, a signal, stdout gone
        self._input_closed = False
        self._unread = 0  # bytes handed to the loop and not yet fed to the decoder (see _MAX_UNREAD_BYTES)
        self._unread_lock = threading.Condition()

    # -- lifecycle ---------------------------------------------------------------------------------

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._finish = loop.create_future()
        if self._handle_signals:
            osdep.on_stop_signals(loop, self._end)
        self._writer = threading.Thread(target=self._write_loop, name="stdout", daemon=True)
        self._writer.start()
        threading.Thread(target=self._read_loop, name="stdin", daemon=True).start()
        # The host stops reading our stdout (where that can be noticed before a write fails): abort.
        stop_watch = osdep.watch_reader_gone(self._stdout_fd, lambda: self._from_thread(self._end, "stdout closed"))

        reason = await self._finish
        log.info("exiting: %s", reason)
        self.outgoing.close()  # nothing waits on a peer that is going away
        drained = asyncio.ensure_future(self.requests.drained())
        if reason == "eof":
            # The host closed its end of stdin: answer what is running, then go (unless told otherwise) —
            # or, when the session says its client has gone with its input (an MCP client), within the
            # window it allows.
            window = self._eof_window() if self._eof_window is not None else None
            aborted = asyncio.ensure_future(self._abort.wait())
            await asyncio.wait({drained, aborted}, timeout=window, return_when=asyncio.FIRST_COMPLETED)
            aborted.cancel()
            if not drained.done():
                log.info("input closed: aborting the requests still running")
        self.requests.abort_all()
        await asyncio.wait({drained}, timeout=self._grace_s + 0.5)
        drained.cancel()
        if self._on_exit is not None:
            self._on_exit()
        if self._handle_signals:
            osdep.stopped()
        self._out.put(None)
        self._writer.join(timeout=1.0)
        if stop_watch is not None:
            stop_watch()
        return 0

    def _end(self, reason: str) -> None:
        self._ending.set()
        if reason != "eof":
            self._abort.set()
        elif self._relayed and self._loop is not None and self._relay_task is None:
            self._relay_task = self._loop.create_task(self._tell_relay())
        if self._finish is not None and not self._finish.done():
            self._finish.set_result(reason)

    async def _tell_relay(self) -> None:
        """After stdin EOF, while requests run: a write for the channel to fail on if the host is gone."""
        while not self._abort.is_set() and (running := len(self.running_requests())):
            self.notify(DRAINING, {"running": running})
            await asyncio.sleep(_DRAINING_EVERY_S)

    def request_exit(self) -> None:
        self._end("exit")

    async def input_closed(self) -> None:
        """Return once the server is ending: its input is closed, or it is exiting. Requests that would
        otherwise run forever (MCP's subscriptions/listen) end with it, so stdin EOF still exits."""
        await self._ending.wait()

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification to the peer."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    async def ask(self, method: str, params: Any, wait_s: float) -> Any:
        """Send a request to the peer and wait for its result (see outgoing.py)."""
        return await self.outgoing.request(method, params, wait_s)

    def running_requests(self, exclude: asyncio.Task[Any] | None = None) -> list[asyncio.Task[Any]]:
        return list(self.requests.running_requests(exclude))

    # -- input ---------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        assert self._loop is not None
        while True:
            with self._unread_lock:
                while self._unread > _MAX_UNREAD_BYTES and not self._input_closed:
                    self._unread_lock.wait(0.5)  # woken by _on_input; the timeout rechecks a closing server
            try:
                data = os.read(self._stdin_fd, _READ_SIZE)
            except BlockingIOError:
                select.select([self._stdin_fd], [], [])
                continue
            except OSError:
                data = b""
            with self._unread_lock:
                self._unread += len(data)
            try:
                self._loop.call_soon_threadsafe(self._on_input, data)
            except RuntimeError:  # the loop is closed: we are exiting
                return
            if not data:
                return

    def _on_input(self, data: bytes) -> None:
        with self._unread_lock:
            self._unread -= len(data)
            self._unread_lock.notify()
        if self._input_closed:
            return
        events = self._decoder.feed(data) if data else self._decoder.feed_eof()
        for event in events:
            if isinstance(event, Message):
                parsed = jsonrpc.parse(event.body)
                if isinstance(parsed, jsonrpc.EnvelopeError):
                    self.send(jsonrpc.error(None, parsed.code, parsed.message))
                else:
                    self.requests.submit(parsed)
            elif isinstance(event, Oversized):
                self.send(
                    jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "Invalid request: message exceeds maxMessageBytes")
                )
            elif isinstance(event, BadFrame):
                self.send(jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"Parse error: {event.reason}"))
        if not data:
            self._input_closed = True
            self._end("eof")

    # -- output --------------------------------------------------------------------------------------

    def send(self, message: Any) -> None:
        framing = self._decoder.framing or Framing.NDJSON
        self._out.put(encode(framing, jsonrpc.dumps(message)))

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

    def _from_thread(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(fn, *args)
