"""The IO loop reads no further ahead of the daemon than a bound: a host that writes faster than the
daemon works fills the pipe, not the daemon's memory (transport/stdio.py, _MAX_UNREAD_BYTES)."""

from __future__ import annotations

import asyncio
import os
import select
import threading

from dsh_search.transport import jsonrpc, stdio
from dsh_search.transport.requests import Response
from tests.support.processes import wait_until


def test_the_reader_stops_while_the_loop_is_busy() -> None:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stalled = threading.Event()
    blocked = threading.Event()  # the writer found the pipe full: the reader stopped reading
    release = threading.Event()

    async def dispatch(call: jsonrpc.Call) -> Response | None:
        if call.method == "stall":
            stalled.set()
            release.wait(30)  # the loop itself is blocked: nothing read is taken apart meanwhile
        if call.is_notification:
            return None
        return {"jsonrpc": "2.0", "result": {}, "id": call.id}

    server = stdio.Server(
        dispatch=dispatch,
        cancelled_answer=lambda call, reason: None,
        max_message_bytes=64 << 20,
        grace_s=1.0,
        stdin_fd=stdin_r,
        stdout_fd=stdout_w,
        handle_signals=False,
    )
    done = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    done.start()
    filler = b'{"jsonrpc":"2.0","method":"note","params":{"data":"' + b"x" * (1 << 20) + b'"}}\n'
    written = 0

    def write() -> None:
        nonlocal written
        os.write(stdin_w, b'{"jsonrpc":"2.0","method":"stall"}\n')
        stalled.wait(5)
        os.set_blocking(stdin_w, False)
        for _ in range(64):  # 64 MiB, far past the bound
            view = memoryview(filler)
            while view:
                try:
                    view = view[os.write(stdin_w, view) :]
                except BlockingIOError:  # full: the reader has stopped (or not caught up yet)
                    if not release.is_set():
                        blocked.set()
                    select.select([], [stdin_w], [])
            written += len(filler)
        os.close(stdin_w)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert stalled.wait(5)
    # The reader stopped at its bound, and the writer got as far as the pipe lets it, while the loop stalls.
    assert wait_until(lambda: server._unread > stdio._MAX_UNREAD_BYTES and blocked.is_set(), 30)
    during_stall = written
    release.set()
    writer.join(30)
    done.join(30)
    os.close(stdout_w)
    os.close(stdout_r)
    os.close(stdin_r)
    # The bound, one read past it, and what the pipe itself holds.
    assert during_stall <= stdio._MAX_UNREAD_BYTES + stdio._READ_SIZE + (2 << 20), during_stall
    assert during_stall < 16 * len(filler)  # (of the 64 MiB written in all)
    assert written == 64 * len(filler)  # and everything was read once the loop caught up
