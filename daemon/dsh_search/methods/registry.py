"""The method table: each JSON-RPC method with its handler, params and result schemas, and errors.

Every method module exports its `MethodSpec`s; `wiring.py` lists them, in the order `tools/list` and
`rpc.discover` show them. A spec with a `ToolFace` is also an MCP tool of the same name. The table wraps
each handler `async (ctx, params: dict) -> result` into the shape jsonrpcserver dispatches
(`(context, *args, **kwargs) -> Result`): params are checked against the advertised schema and a
`ToolError` becomes a JSON-RPC error with `data = {code, text}`. `rpc.discover`, `tools/list` and
docs/reference.md render the same table, so what callers are told cannot drift from the behaviour.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from dsh_search.config import Config
from dsh_search.methods import params as params_mod
from dsh_search.methods.dispatch import JsonRpcError, Result, Success
from dsh_search.methods.errors import ToolError
from dsh_search.transport.jsonrpc import INTERNAL_ERROR

if TYPE_CHECKING:
    from dsh_search.methods.context import Context

log = logging.getLogger("dsh_search.registry")

Handler = Callable[["Context", dict[str, Any]], Awaitable[Any]]

EMPTY_PARAMS: dict[str, Any] = params_mod.object_schema({}, [])


class ToolFace(NamedTuple):
    """How a method appears to a model as an MCP tool (`tools/list`, `tools/call`)."""

    describe: Callable[[Config], str]
    input_schema: dict[str, Any]  # model-facing: without the host-only fields
    host_fields: tuple[str, ...] = ()  # params an MCP client passes in `tools/call`'s `_meta` instead
    listed: Callable[[Context], bool] | None = None  # whether tools/list shows it now (None: always)


@dataclass(frozen=True)
class MethodSpec:
    name: str
    summary: str
    handler: Handler = field(compare=False)
    params: dict[str, Any] = field(default_factory=lambda: EMPTY_PARAMS)
    result: dict[str, Any] = field(default_factory=dict)
    errors: tuple[dict[str, Any], ...] = ()  # OpenRPC error objects (errors.openrpc_errors)
    tool: ToolFace | None = None  # also an MCP tool of this name; its abort texts name it
    check_params: bool = True  # False: the handler reads params itself (MCP's open-ended requests)
    wellformed: bool = True  # lone surrogates in string params become U+FFFD (params.check)


class MethodTable:
    def __init__(self, specs: Sequence[MethodSpec]) -> None:
        self._specs: dict[str, MethodSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"method {spec.name} is listed twice")
            self._specs[spec.name] = spec

    def __iter__(self) -> Iterator[MethodSpec]:
        return iter(self._specs.values())

    def get(self, name: str) -> MethodSpec | None:
        return self._specs.get(name)

    def tools(self) -> list[MethodSpec]:
        """The methods that are MCP tools, in table order."""
        return [spec for spec in self._specs.values() if spec.tool is not None]

    def dispatchers(self) -> dict[str, Callable[..., Awaitable[Result]]]:
        """The table as jsonrpcserver dispatches it."""
        return {name: _dispatchable(spec) for name, spec in self._specs.items()}

    def openrpc(self, version: str) -> dict[str, Any]:
        methods = []
        for spec in self._specs.values():
            props = spec.params.get("properties", {})
            required = set(spec.params.get("required", ()))
            methods.append(
                {
                    "name": spec.name,
                    "summary": spec.summary,
                    "paramStructure": "by-name",
                    "params": [
                        {"name": name, "required": name in required, "schema": schema} for name, schema in props.items()
                    ],
                    "result": {"name": "result", "schema": spec.result},
                    "errors": list(spec.errors),
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


async def call_checked(spec: MethodSpec, ctx: Context, raw: Any) -> Any:
    """Check `raw` params against the spec's schema and run its handler."""
    checked = params_mod.check(spec.params, raw, wellformed=spec.wellformed) if spec.check_params else raw
    return await spec.handler(ctx, checked)


def _dispatchable(spec: MethodSpec) -> Callable[..., Awaitable[Result]]:
    async def call(ctx: Context, *args: Any, **kwargs: Any) -> Result:
        try:
            return Success(await call_checked(spec, ctx, list(args) if args else kwargs))
        except ToolError as err:
            raise JsonRpcError(err.jsonrpc_code, err.message, err.data()) from None
        except Exception:
            # A bug, not an input problem: logged with its traceback, answered without its details.
            log.exception("internal error in %s", spec.name)
            raise JsonRpcError(INTERNAL_ERROR, "Internal error") from None

    call.__name__ = spec.name
    return call
