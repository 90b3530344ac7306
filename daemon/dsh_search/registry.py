"""The method table: each JSON-RPC method with its params schema, result schema and summary.

`method(...)` registers a handler `async (app, params: dict) -> result` and wraps it into the shape
jsonrpcserver dispatches (`(context, *args, **kwargs) -> Result`): params are checked against the
advertised schema, a `ToolError` becomes a JSON-RPC error with `data = {code, text}`. `rpc.discover`
renders the same table as an OpenRPC document, so the description cannot drift from the behaviour.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jsonrpcserver import JsonRpcError, Success
from jsonrpcserver.result import Result

from . import params as params_mod
from .errors import ToolError
from .rpc import INTERNAL_ERROR

log = logging.getLogger("dsh_search.registry")

Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]

EMPTY_PARAMS: dict[str, Any] = params_mod.object_schema({}, [])


@dataclass(frozen=True)
class MethodSpec:
    name: str
    summary: str
    params_schema: dict[str, Any]
    result_schema: dict[str, Any]
    errors: tuple[tuple[int, str], ...] = ()
    tool: str | None = None  # the tool whose cancellation/abort texts apply
    check_params: bool = True  # False: the handler reads params itself (MCP's open-ended requests)
    wellformed: bool = True  # lone surrogates in string params become U+FFFD (params.check)
    handler: Handler | None = field(default=None, compare=False)


REGISTRY: dict[str, MethodSpec] = {}


def method(
    name: str,
    *,
    summary: str,
    params: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
    errors: tuple[tuple[int, str], ...] = (),
    tool: str | None = None,
    check_params: bool = True,
    wellformed: bool = True,
) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        REGISTRY[name] = MethodSpec(
            name=name,
            summary=summary,
            params_schema=params or EMPTY_PARAMS,
            result_schema=result or {},
            errors=errors,
            tool=tool,
            check_params=check_params,
            wellformed=wellformed,
            handler=fn,
        )
        return fn

    return register


def _dispatchable(spec: MethodSpec) -> Callable[..., Awaitable[Result]]:
    handler = spec.handler
    assert handler is not None

    async def call(app: Any, *args: Any, **kwargs: Any) -> Result:
        raw: Any = list(args) if args else kwargs
        try:
            checked = (
                params_mod.check(spec.params_schema, raw, wellformed=spec.wellformed) if spec.check_params else raw
            )
            return Success(await handler(app, checked))
        except ToolError as err:
            raise JsonRpcError(err.jsonrpc_code, err.message, err.data()) from None
        except Exception:
            # A bug, not an input problem: logged with its traceback, answered without its details.
            log.exception("internal error in %s", spec.name)
            raise JsonRpcError(INTERNAL_ERROR, "Internal error") from None

    call.__name__ = spec.name
    return call


def dispatch_table() -> dict[str, Callable[..., Awaitable[Result]]]:
    return {name: _dispatchable(spec) for name, spec in REGISTRY.items()}


def openrpc_document(version: str) -> dict[str, Any]:
    methods = []
    for spec in sorted(REGISTRY.values(), key=lambda s: s.name):
        props = spec.params_schema.get("properties", {})
        required = set(spec.params_schema.get("required", ()))
        methods.append(
            {
                "name": spec.name,
                "summary": spec.summary,
                "paramStructure": "by-name",
                "params": [
                    {"name": name, "required": name in required, "schema": schema} for name, schema in props.items()
                ],
                "result": {"name": "result", "schema": spec.result_schema},
                "errors": [{"code": code, "message": message} for code, message in spec.errors],
            }
        )
    return {
        "openrpc": "1.3.2",
        "info": {
            "title": "dsh-search",
            "version": version,
            "description": "Search daemon for AI coding agents: glob, grep and terminal scrollback search "
            "over JSON-RPC 2.0 on stdin/stdout (NDJSON or LSP framing).",
        },
        "methods": methods,
    }
