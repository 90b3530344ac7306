"""Requests the daemon sends to its peer (MCP's `roots/list`), and the table their answers come back to.

JSON-RPC lets each side number its own requests, so the peer's ids and ours live in separate spaces;
ours are strings with a prefix of their own (`dsh-search:1`, `dsh-search:2`, …) so that even a
confused peer echoing one of its own ids cannot resolve one of ours. A `Reply` (see jsonrpc.py) whose
id is pending resolves it; any other reply is dropped without an answer. Every request has a timeout,
and all pending ones fail at once when the daemon goes away, so nothing waits on a peer forever.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

from dsh_search.transport import jsonrpc

log = logging.getLogger("dsh_search.outgoing")

ID_PREFIX = "dsh-search:"


class PeerError(Exception):
    """The peer answered our request with an error (or could not be asked)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message
        self.data = data


class OutgoingRequests:
    def __init__(self, send: Callable[[Any], None]) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._pending: dict[tuple[str, Any], asyncio.Future[Any]] = {}
        self._closed = False

    async def request(self, method: str, params: Any, wait_s: float) -> Any:
        """Send `method` to the peer and wait (at most `wait_s` seconds) for its result.

        Raises `PeerError` for an error answer (or once the daemon is closing) and `TimeoutError`.
        """
        if self._closed:
            raise PeerError(jsonrpc.INTERNAL_ERROR, "the connection is closing")
        id_ = f"{ID_PREFIX}{next(self._ids)}"
        key = jsonrpc.id_key(id_)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._send(message)
            async with asyncio.timeout(wait_s):
                return await future
        finally:
            self._pending.pop(key, None)

    def on_reply(self, reply: jsonrpc.Reply) -> None:
        future = self._pending.pop(jsonrpc.id_key(reply.id), None) if jsonrpc.valid_id(reply.id) else None
        if future is None or future.done():
            log.debug("dropped a response to no request of ours (id %r)", reply.id)
            return
        if reply.error is None:
            future.set_result(reply.result)
            return
        code = reply.error.get("code")
        message = reply.error.get("message")
        future.set_exception(
            PeerError(
                code if isinstance(code, int) else jsonrpc.INTERNAL_ERROR,
                message if isinstance(message, str) else "",
                reply.error.get("data"),
            )
        )

    def close(self) -> None:
        """Fail every pending request: the daemon is going away."""
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PeerError(jsonrpc.INTERNAL_ERROR, "the connection is closing"))
        self._pending.clear()

    def __len__(self) -> int:
        return len(self._pending)
