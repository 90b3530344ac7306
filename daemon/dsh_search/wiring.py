"""The wiring: every method the daemon serves, the context they share, and the server that runs them.

`METHODS` is the one list of methods, in the order `tools/list` and `rpc.discover` show them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from dsh_search import __version__, memory, texts
from dsh_search.config import Config
from dsh_search.methods import lifecycle, logs, mcp, progress, roots, scrollback, spill_read
from dsh_search.methods.context import Context
from dsh_search.methods.dispatch import NOID, Request, dispatch_request, to_response, to_serializable_one
from dsh_search.methods.errors import SEARCH_ABORTED, ToolError
from dsh_search.methods.registry import MethodSpec, MethodTable
from dsh_search.search import glob, grep, terminal_search
from dsh_search.search.paths import DenyGlobs
from dsh_search.search.ripgrep import child_environment
from dsh_search.sidecar import Ripgrep, is_frozen
from dsh_search.store.spill import SpillStore
from dsh_search.transport import jsonrpc
from dsh_search.transport.framing import Framing
from dsh_search.transport.requests import CancelReason
from dsh_search.transport.stdio import Server

log = logging.getLogger("dsh_search")

METHODS: tuple[MethodSpec, ...] = (
    *lifecycle.SPECS,
    *roots.SPECS,
    logs.SPEC,
    *mcp.SPECS,
    glob.SPEC,
    grep.SPEC,
    terminal_search.SPEC,
    spill_read.SPEC,
    *scrollback.SPECS,
)


def tool_of(methods: MethodTable, call: jsonrpc.Call) -> str | None:
    """The model-facing tool a call runs, if any (its name words cancellation texts)."""
    name: Any = call.method
    if name == "tools/call":  # the tool is named in the params
        name = call.params.get("name") if isinstance(call.params, dict) else None
    spec = methods.get(name) if isinstance(name, str) else None
    return spec.name if spec is not None and spec.tool is not None else None


def cancelled_answer(methods: MethodTable, call: jsonrpc.Call, reason: CancelReason) -> dict[str, Any] | None:
    """How a cancelled call is answered: -32800 for the caller's own cancellation, nothing for MCP's,
    SEARCH_ABORTED (an MCP error result for tools/call) when the daemon is going away."""
    if reason is CancelReason.CLIENT:
        return None
    tool = tool_of(methods, call)
    if reason is CancelReason.CALLER:
        data = ToolError(SEARCH_ABORTED, texts.aborted(tool)).data() if tool else jsonrpc.NO_ID
        return jsonrpc.error(call.id, jsonrpc.REQUEST_CANCELLED, "Request cancelled", data)
    if tool is None:
        return jsonrpc.error(call.id, jsonrpc.REQUEST_CANCELLED, "Request cancelled: the server is exiting")
    err = ToolError(SEARCH_ABORTED, texts.aborted(tool))
    if call.method == "tools/call":
        return jsonrpc.result(call.id, mcp.error_result(err))
    return jsonrpc.error(call.id, err.jsonrpc_code, err.message, err.data())


def make_context(config: Config, rg: Ripgrep, workdir: str, *, workdir_given: bool = True) -> Context:
    return Context(
        config=config,
        rg=rg,
        rg_env=child_environment(os.environ, frozen=is_frozen()),
        workdir=workdir,
        workdir_given=workdir_given,
        version=__version__,
        spill=SpillStore(
            config.spill_dir,
            max_bytes=config.spill_max_bytes,
            max_age_s=config.spill_max_age_seconds,
            hint=config.spill_retrieval_hint,
        ),
        deny_globs=DenyGlobs(config.deny_globs),
        methods=MethodTable(METHODS),
    )


def make_dispatch(ctx: Context) -> Callable[[jsonrpc.Call], Awaitable[dict[str, Any] | None]]:
    """One call through jsonrpcserver (method lookup, argument binding, result/error mapping).

    Runs in the request's own task (transport/requests.py). A tool call that asked for progress reports
    it while it runs (methods/progress.py), and stops before this returns, so before the answer is
    written; a search waits (bounded) for a `roots/list` that is out (methods/roots.py).
    """
    dispatchers = ctx.methods.dispatchers()

    async def dispatch(call: jsonrpc.Call) -> dict[str, Any] | None:
        if ctx.shutting_down and call.method != "exit":
            return (
                None
                if call.is_notification
                else jsonrpc.error(call.id, jsonrpc.INVALID_REQUEST, "server is shutting down")
            )
        tool = None if call.is_notification else tool_of(ctx.methods, call)
        reporter = progress.begin(ctx.notify, tool, call.params) if tool is not None else None
        try:
            if tool is not None:
                await roots.settled(ctx)
            params: Any = [] if call.params is None else call.params
            request = Request(call.method, params, NOID if call.is_notification else call.id)
            _, outcome = await dispatch_request(dispatchers, ctx, request)
        finally:
            if reporter is not None:
                reporter.close()
        if call.is_notification:
            return None
        response = to_serializable_one(to_response(request, outcome))
        assert isinstance(response, dict)
        return response

    return dispatch


def serve(*, config: Config, rg: Ripgrep, workdir: str, framing: str | None, workdir_given: bool = True) -> int:
    memory.ALLOCATOR.tune()  # before any thread starts
    ctx = make_context(config, rg, workdir, workdir_given=workdir_given)
    server = Server(
        dispatch=make_dispatch(ctx),
        cancelled_answer=lambda call, reason: cancelled_answer(ctx.methods, call, reason),
        max_message_bytes=config.max_message_bytes,
        grace_s=config.grace_ms / 1000,
        framing=Framing(framing) if framing else None,
        on_exit=ctx.groups.kill_all,
    )
    ctx.control = server
    ctx.peer = server
    server.requests.on_idle = memory.ALLOCATOR.on_idle
    memory.tune_collector()
    # Retention also runs at start, off the main thread so the first request is not delayed.
    threading.Thread(target=_retain, args=(ctx.spill,), name="spill-retention", daemon=True).start()

    async def run() -> int:
        handler = logs.install(ctx)  # warnings to the client as notifications/message
        try:
            return await server.serve()
        finally:
            logs.uninstall(handler)

    return asyncio.run(run())


def _retain(store: SpillStore) -> None:
    try:
        store.enforce_retention()
    except OSError as exc:
        log.warning("spill retention at start failed: %s", exc)
