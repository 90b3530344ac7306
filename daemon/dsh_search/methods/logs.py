"""MCP logging: `logging/setLevel`, and the daemon's warnings sent to the client as `notifications/message`.

What the daemon logs (to stderr, at `--log-level`) it also tells the client at or above the client's
level: an MCP client gets `notice` and worse until it sets a level of its own; a host that is not an
MCP client gets nothing until it calls `logging/setLevel`. Among the notices: the workspace index's build
starting, ready, failed or paused. Among the warnings: ripgrep could not read
some paths of a search that still found results, a spill artifact could not be saved, the client's
roots could not be fetched. Transport loggers are left out (they speak about the connection itself).

A record logged on the event loop is sent at once, so one logged while a request runs is written before
that request's answer; one logged on another thread is handed to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

from dsh_search.engine.failures import INVALID_ARGS, invalid_args
from dsh_search.methods.context import Context
from dsh_search.methods.era import LOG_LEVELS
from dsh_search.methods.errors import openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec

_PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_TRANSPORT = ("dsh_search.server", "dsh_search.requests", "dsh_search.outgoing")


def mcp_level(levelno: int) -> str:
    if levelno < logging.INFO:
        return "debug"
    if levelno < 25:
        return "info"
    if levelno < logging.WARNING:
        return "notice"
    if levelno < logging.ERROR:
        return "warning"
    if levelno < logging.CRITICAL:
        return "error"
    return "critical"


class ClientLogHandler(logging.Handler):
    def __init__(self, ctx: Context, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.DEBUG)
        self._ctx = ctx
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(_TRANSPORT):
            return
        threshold = self._ctx.session.log_threshold()
        level = mcp_level(record.levelno)
        if threshold is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        try:
            params = {"level": level, "logger": record.name.removeprefix("dsh_search.") or "dsh-search"}
            params["data"] = record.getMessage()
        except Exception:
            self.handleError(record)
            return
        if threading.get_ident() == self._loop_thread:
            self._ctx.notify("notifications/message", params)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: we are exiting
                self._loop.call_soon_threadsafe(self._ctx.notify, "notifications/message", params)


def install(ctx: Context) -> ClientLogHandler:
    """Attach the client handler to the daemon's logger (call on the running loop). The level stderr
    logs at (--log-level) is remembered first: logging/setLevel may lower the logger's own level so that
    the client gets more, and stderr's handler keeps its own."""
    handler = ClientLogHandler(ctx, asyncio.get_running_loop())
    logger = logging.getLogger("dsh_search")
    ctx.stderr_level = logger.getEffectiveLevel()
    logger.addHandler(handler)
    return handler


def uninstall(handler: ClientLogHandler) -> None:
    logging.getLogger("dsh_search").removeHandler(handler)


async def set_level(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    level = params["level"]
    if level not in LOG_LEVELS:
        raise invalid_args(f"level must be one of {', '.join(LOG_LEVELS)}")
    ctx.session.log_level = level
    if ctx.stderr_level is not None:
        # Records below --log-level must now reach the client handler; stderr's handler keeps its own level.
        logging.getLogger("dsh_search").setLevel(min(ctx.stderr_level, _PYTHON_LEVELS[level]))
    return {}


SPEC = MethodSpec(
    "logging/setLevel",
    summary="MCP: the least severe log level to send as `notifications/message` (notice by default for MCP "
    "clients; nothing for other hosts until they call this).",
    params=object_schema({"level": {"type": "string", "enum": list(LOG_LEVELS)}}, ["level"]),
    result={"type": "object"},
    errors=openrpc_errors(INVALID_ARGS),
    handler=set_level,
)
