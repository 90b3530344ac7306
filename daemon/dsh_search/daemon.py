"""Wire the parts together and run the server until it ends."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from jsonrpcserver.async_dispatcher import dispatch_request
from jsonrpcserver.dispatcher import to_response
from jsonrpcserver.request import Request
from jsonrpcserver.response import to_serializable_one
from jsonrpcserver.sentinels import NOID

from . import __version__, glob, grep, lifecycle, mcp, memory, rpc, spill_methods, terminal, texts
from .app import App
from .config import Config
from .errors import SEARCH_ABORTED, ToolError
from .framing import Framing
from .paths import DenyGlobs
from .registry import REGISTRY, dispatch_table
from .requests import CancelReason
from .ripgrep import child_environment
from .server import Server
from .sidecar import Ripgrep, is_frozen
from .spill import SpillStore

log = logging.getLogger("dsh_search")

# Importing a method module registers its methods.
_METHOD_MODULES = (lifecycle, mcp, glob, grep, spill_methods, terminal)


def tool_of(call: rpc.Call) -> str | None:
    """The model-facing tool a call runs, if any (its name words cancellation texts)."""
    spec = REGISTRY.get(call.method)
    if spec is None:
        return None
    if spec.tool == "*" and isinstance(call.params, dict):  # tools/call: the tool is in the params
        name = call.params.get("name")
        return name if isinstance(name, str) and REGISTRY.get(name, spec).tool == name else None
    return spec.tool


def cancelled_answer(call: rpc.Call, reason: CancelReason) -> dict[str, Any] | None:
    """How a cancelled call is answered: -32800 for the caller's own cancellation, nothing for MCP's,
    SEARCH_ABORTED (an MCP error result for tools/call) when the daemon is going away."""
    if reason is CancelReason.CLIENT:
        return None
    tool = tool_of(call)
    if reason is CancelReason.CALLER:
        data = ToolError(SEARCH_ABORTED, texts.aborted(tool)).data() if tool else rpc.NO_ID
        return rpc.error(call.id, rpc.REQUEST_CANCELLED, "Request cancelled", data)
    if tool is None:
        return rpc.error(call.id, rpc.REQUEST_CANCELLED, "Request cancelled: the server is exiting")
    err = ToolError(SEARCH_ABORTED, texts.aborted(tool))
    if call.method == "tools/call":
        return rpc.result(call.id, mcp.error_result(err))
    return rpc.error(call.id, err.jsonrpc_code, err.message, err.data())


def make_app(config: Config, rg: Ripgrep, workdir: str) -> App:
    return App(
        config=config,
        rg=rg,
        rg_env=child_environment(os.environ, frozen=is_frozen()),
        workdir=workdir,
        version=__version__,
        spill=SpillStore(
            config.spill_dir,
            max_bytes=config.spill_max_bytes,
            max_age_s=config.spill_max_age_seconds,
            hint=config.spill_retrieval_hint,
        ),
        deny_globs=DenyGlobs(config.deny_globs),
    )


def make_dispatch(app: App) -> Callable[[rpc.Call], Awaitable[dict[str, Any] | None]]:
    """One call through jsonrpcserver (method lookup, argument binding, result/error mapping)."""
    methods = dispatch_table()

    async def dispatch(call: rpc.Call) -> dict[str, Any] | None:
        if app.shutting_down and call.method != "exit":
            return None if call.is_notification else rpc.error(call.id, rpc.INVALID_REQUEST, "server is shutting down")
        params: Any = [] if call.params is None else call.params
        request = Request(call.method, params, NOID if call.is_notification else call.id)
        _, outcome = await dispatch_request(methods, app, request)
        if call.is_notification:
            return None
        response = to_serializable_one(to_response(request, outcome))
        assert isinstance(response, dict)
        return response

    return dispatch


def serve(*, config: Config, rg: Ripgrep, workdir: str, framing: str | None) -> int:
    app = make_app(config, rg, workdir)
    server = Server(
        dispatch=make_dispatch(app),
        cancelled_answer=cancelled_answer,
        max_message_bytes=config.max_message_bytes,
        grace_s=config.grace_ms / 1000,
        framing=Framing(framing) if framing else None,
        on_exit=app.groups.kill_all,
    )
    app.control = server
    server.requests.on_idle = memory.ALLOCATOR.on_idle
    # Retention also runs at start, off the main thread so the first request is not delayed.
    threading.Thread(target=_retain, args=(app.spill,), name="spill-retention", daemon=True).start()
    return asyncio.run(server.serve())


def _retain(store: SpillStore) -> None:
    try:
        store.enforce_retention()
    except OSError as exc:
        log.warning("spill retention at start failed: %s", exc)
