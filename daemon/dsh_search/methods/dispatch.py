"""The one dispatch path: every call, native or `tools/call`, from a validated call to its answer.

    call ─▶ route ─▶ Target(spec, params, mcp) ─▶ jsonrpcserver.dispatch_request ─▶ run(spec, …) ─▶ Result
                                                   (lookup by name, binding)            (params check,
                                                                                         handler or tool,
                                                                                         failure → error)

- `route` decides, without running anything, which method a call runs and how its outcome is shaped: a
  native call runs its own method and is answered with the value or a JSON-RPC error; a `tools/call`
  runs the tool it names (mcp.tool_call) and is answered with an MCP tool result. The same `route`
  words the answer of a call cancelled at any instant (`cancelled_answer`), so the two cannot disagree.
- jsonrpcserver, the design's named dispatcher, carries the dispatch: the table is registered with it
  (one `run` per method, by name) and it looks the method up (an unknown name is its "Method not
  found"), binds `(context, invocation)` and turns the `Result` into the response. The transport in
  front of it (transport/jsonrpc.py) has already checked the envelope, so only well-formed calls get
  here. This module is the only one that imports jsonrpcserver, and it imports only the modules that
  dispatch (see `_load`).
- Before the route, the era (methods/era.py): a request carrying the 2026-07-28 envelope in `_meta` is
  checked (-32602, -32022), may not name a method that revision removed (-32601), runs with what it says
  about itself in `session.current`, and its result gets that revision's shape (`era.complete`);
  anything else is served as it always was. Each message is judged on its own: no connection is locked
  to an era.
- Around the run: `shutdown` makes everything but `exit` an error, a legacy tool call waits (bounded)
  for the client's roots when a `roots/list` is out, a modern one that declared `roots` first asks for
  them with an `input_required` result (methods/roots.py), and a tool call that asked for progress gets a
  reporter for exactly as long as it runs (methods/progress.py).
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, NamedTuple

from dsh_search import texts
from dsh_search.engine.failures import SEARCH_ABORTED, ToolError
from dsh_search.engine.searcher import Tally
from dsh_search.methods import era, lifecycle, mcp, progress, resources, roots, session
from dsh_search.methods import params as params_mod
from dsh_search.methods.context import Context
from dsh_search.methods.errors import RpcError, error_code, error_data
from dsh_search.methods.registry import MethodSpec
from dsh_search.transport import jsonrpc
from dsh_search.transport.requests import CancelReason

log = logging.getLogger("dsh_search.dispatch")


def _load() -> None:
    """Register jsonrpcserver, and oslash (whose `Either` its results are), as empty namespaces from
    their own locations, so that importing the modules that dispatch does not run either package's
    `__init__`. jsonrpcserver's also imports its HTTP server and builds a JSON Schema validator for whole
    requests at import time — neither of which the daemon uses — and was 45 of the 75 ms the frozen
    daemon spent importing before it could answer its first request; oslash's imports every monad it
    has (lists, readers, writers, state, IO, …) where jsonrpcserver uses `Either` alone: ~5 % of a cold
    start's instructions."""
    for package in ("jsonrpcserver", "oslash"):
        if package in sys.modules:
            continue
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(f"{package} is not installed")
        sys.modules[package] = importlib.util.module_from_spec(spec)  # its __init__ is not run


_load()

from jsonrpcserver.async_dispatcher import dispatch_request  # noqa: E402
from jsonrpcserver.dispatcher import to_response  # noqa: E402
from jsonrpcserver.request import Request  # noqa: E402
from jsonrpcserver.response import to_serializable_one  # noqa: E402
from jsonrpcserver.result import Error, Result, Success  # noqa: E402
from jsonrpcserver.sentinels import NOID  # noqa: E402

Response = dict[str, Any]


class Target(NamedTuple):
    """What a call runs: a method (None: no such method), its params, and how its outcome is shaped."""

    name: str  # the method jsonrpcserver looks up
    spec: MethodSpec[Context] | None
    params: Any  # as the call gave them (checked when the method runs)
    mcp: bool = False  # a tool run through tools/call: answered as an MCP tool result
    failure: ToolError | None = None  # a tools/call that names no usable tool: answered as this error
    envelope: era.Envelope | None = None  # a modern (2026-07-28) request: its result is shaped so
    method: str = ""  # the method the call named (tools/call for a tool run through it)

    @property
    def tool(self) -> str | None:
        """The model-facing tool this call runs, if any (its name words cancellation texts)."""
        return self.spec.name if self.spec is not None and self.spec.tool is not None else None


class Invocation(NamedTuple):
    """What jsonrpcserver binds after the context: the target, and the tally a reporter reads."""

    target: Target
    tally: Tally | None


class Dispatcher:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._registered: dict[str, Callable[..., Awaitable[Result]]] = {
            spec.name: partial(self._run, spec) for spec in ctx.methods
        }

    def route(self, call: jsonrpc.Call, envelope: era.Envelope | None = None) -> Target:
        spec = self.ctx.methods.get(call.method)
        if spec is None or spec.name != mcp.TOOLS_CALL.name:
            return Target(call.method, spec, call.params, envelope=envelope, method=call.method)
        try:
            tool, arguments = mcp.tool_call(self.ctx, call.params or {})
        except ToolError as failure:
            return Target(call.method, spec, call.params, failure=failure, envelope=envelope, method=call.method)
        return Target(tool.name, tool, arguments, mcp=True, envelope=envelope, method=call.method)

    def era_of(self, call: jsonrpc.Call) -> era.Envelope | Response | None:
        """The envelope of a modern request; the answer that refuses one (a bad envelope, a method the
        modern era removed, a modern-only method without the envelope); None: legacy or native.
        `initialize` is always legacy, whatever its `_meta` holds."""
        if call.method == "initialize":
            return None
        found = era.classify(call.params)
        if isinstance(found, era.Fault):
            return jsonrpc.error(call.id, found.code, found.message, found.data)
        if found is None:
            if call.method in era.MODERN_ONLY:
                return jsonrpc.error(call.id, jsonrpc.INVALID_PARAMS, era.missing_envelope())
            return None
        if call.id is None:  # MCP: a request id is never null
            return jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "Invalid request: the id must not be null")
        if call.method in era.LEGACY_ONLY:
            return jsonrpc.error(call.id, jsonrpc.METHOD_NOT_FOUND, "Method not found", call.method)
        return found

    async def dispatch(self, call: jsonrpc.Call) -> Response | None:
        """Run one call in the request's own task (transport/requests.py); its answer, or None for a
        notification."""
        ctx = self.ctx
        if ctx.shutting_down and call.method != "exit":
            if call.is_notification:
                return None
            return jsonrpc.error(call.id, jsonrpc.INVALID_REQUEST, "server is shutting down")
        envelope = self.era_of(call)
        if isinstance(envelope, dict):  # refused
            return None if call.is_notification else envelope
        if envelope is not None and call.is_notification:
            return None  # a modern notification: only cancellation means anything, and the transport acted on it
        target = self.route(call, envelope)
        if envelope is not None or target.mcp:
            ctx.session.mcp_seen = True
        session.current.set(session.Request(call.id, envelope, mcp_tool=target.mcp))
        if envelope is not None and (target.mcp or call.method == "tools/list"):  # where a result's shape is chosen
            mcp.note_client(ctx, envelope.version)
        if envelope is not None and target.mcp:  # MCP lets only tools/call (here) answer input_required
            asked = self._modern_roots(call, target, envelope)
            if asked is not None:
                return asked
        reporter = None
        if target.spec is not None and target.spec.tool is not None and not call.is_notification:
            reporter = progress.begin(ctx.notify, target.spec.name, target.spec.tool.progress, call.params)
        try:
            if target.tool is not None and envelope is None:
                await roots.settled(ctx)
            invocation = Invocation(target, reporter.tally if reporter is not None else None)
            request = Request(target.name, [invocation], NOID if call.is_notification else call.id)
            known = self._registered.get(target.name)
            if known is not None and "__signature__" not in known.__dict__:
                # jsonrpcserver checks every call's arguments against the method's signature, which
                # inspect works out afresh each time for a partial (~0.1 ms a call): once is enough.
                known.__signature__ = inspect.signature(known)  # type: ignore[attr-defined]
            _, outcome = await dispatch_request(self._registered, ctx, request)
        finally:
            if reporter is not None:
                reporter.close()
        if call.is_notification:
            return None
        response = to_serializable_one(to_response(request, outcome))
        assert isinstance(response, dict)
        return response

    def _modern_roots(self, call: jsonrpc.Call, target: Target, envelope: era.Envelope) -> Response | None:
        """A modern tools/call of a tool that works in the workspace, from a client that offers roots:
        the input_required answer that asks for them, or an error for a malformed answer; None when the
        call runs (with the roots it brought, in `session.current`)."""
        assert target.spec is not None and target.spec.tool is not None
        if not target.spec.tool.workspace:
            return None
        try:
            found = roots.modern_roots(self.ctx, envelope, call.params)
        except ToolError as err:
            return jsonrpc.error(call.id, error_code(err), err.message, error_data(err))
        if isinstance(found, dict):
            return jsonrpc.result(call.id, self._complete(target.method, found))
        if found is not None:
            session.current.set(session.Request(call.id, envelope, found, mcp_tool=True))
        return None

    def _complete(self, method: str, value: Any) -> Any:
        """A modern result: its revision's shape (methods/era.py)."""
        if not isinstance(value, dict):
            value = {}
        return era.complete(method, value, lifecycle.server_info(self.ctx))

    async def _run(self, spec: MethodSpec[Context], ctx: Context, invocation: Invocation) -> Result:
        """Check the params against the spec's schema, run its handler (or its tool), shape the outcome."""
        target = invocation.target
        try:
            if target.failure is not None:
                raise target.failure
            params = target.params
            if params is None or params == []:  # omitted, null or an empty array: no params at all
                params = {}
            if spec.check_params:
                params = params_mod.check(spec.params, params, wellformed=spec.wellformed)
            if spec.tool is not None:
                found = await spec.tool.run(ctx, params, invocation.tally)
                if target.mcp:
                    how = mcp.shape(ctx)
                    link = resources.link(ctx, found.as_json()) if how == mcp.FULL else None
                    value = mcp.success_result(how, spec.tool, found, link)
                else:
                    value = found.as_json()
            else:
                assert spec.handler is not None, f"{spec.name} has neither a handler nor a tool"
                value = await spec.handler(ctx, params)
        except ToolError as err:
            if target.mcp:
                return Success(self._shaped(target, mcp.error_result(err)))
            return Error(error_code(err), err.message, error_data(err))
        except RpcError as err:
            return Error(err.code, err.message, err.data)
        except Exception:
            # A bug, not an input problem: logged with its traceback, answered without its details.
            log.exception("internal error in %s", spec.name)
            return Error(jsonrpc.INTERNAL_ERROR, "Internal error")
        return Success(self._shaped(target, value))

    def _shaped(self, target: Target, value: Any) -> Any:
        return self._complete(target.method, value) if target.envelope is not None else value

    def cancelled_answer(self, call: jsonrpc.Call, reason: CancelReason) -> Response | None:
        """How a cancelled call is answered: -32800 for the caller's own cancellation, nothing for MCP's,
        SEARCH_ABORTED (an MCP error result for tools/call) when the daemon is going away."""
        if reason is CancelReason.CLIENT:
            return None
        envelope = self.era_of(call)
        if isinstance(envelope, dict):
            envelope = None
        target = self.route(call, envelope)
        tool = target.tool
        aborted = ToolError(SEARCH_ABORTED, texts.aborted(tool)) if tool else None
        if reason is CancelReason.CALLER:
            data = error_data(aborted) if aborted else jsonrpc.NO_ID
            return jsonrpc.error(call.id, jsonrpc.REQUEST_CANCELLED, "Request cancelled", data)
        if aborted is None:
            if envelope is not None and call.method == "subscriptions/listen":
                # The server ends a subscription: gracefully, with its closing result.
                return jsonrpc.result(call.id, self._complete(call.method, {"_meta": {era.SUBSCRIPTION_ID: call.id}}))
            return jsonrpc.error(call.id, jsonrpc.REQUEST_CANCELLED, "Request cancelled: the server is exiting")
        if target.mcp:
            return jsonrpc.result(call.id, self._shaped(target, mcp.error_result(aborted)))
        return jsonrpc.error(call.id, error_code(aborted), aborted.message, error_data(aborted))
