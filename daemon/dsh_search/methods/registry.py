"""The method table: each JSON-RPC method with its handler, params and result schemas, and errors; and,
for the methods that are also model-facing tools, everything about the tool in one declaration.

Every method module exports its `MethodSpec`s; `wiring.py` lists them, in the order `tools/list` and
`rpc.discover` show them. A spec with a `Tool` is also an MCP tool of the same name: its description,
model-facing input schema, host-only fields, progress message and `run` live in that one `Tool`. The
dispatcher (methods/dispatch.py) checks params against the advertised schema and runs the handler (or
the tool's `run`); `rpc.discover`, `tools/list` and docs/reference.md render the same table, so what
callers are told cannot drift from the behaviour.

The table is generic in the context its handlers receive, so this module needs nothing from
methods/context.py (which holds a table of its own handlers: one direction only).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from dsh_search.config import Config
from dsh_search.engine.searcher import Tally
from dsh_search.methods.params import object_schema

C = TypeVar("C")

Handler = Callable[[C, dict[str, Any]], Awaitable[Any]]
ToolRun = Callable[[C, dict[str, Any], Tally | None], Awaitable[dict[str, Any]]]

EMPTY_PARAMS: dict[str, Any] = object_schema({}, [])


@dataclass(frozen=True)
class Tool(Generic[C]):
    """A method as a model sees it (MCP `tools/list`, `tools/call`), and how it runs.

    `run(ctx, params, tally)` gets the params checked against the method's native schema and a tally to
    keep current when the call reports progress (else None); `progress` words a report from the tally.
    """

    describe: Callable[[Config], str]  # the description, which may quote configured caps
    input_schema: dict[str, Any]  # model-facing: without the host-only fields
    run: ToolRun[C]
    progress: Callable[[Tally], str]  # the progress message for a running call
    host_fields: tuple[str, ...] = ()  # params an MCP client passes in `tools/call`'s `_meta` instead
    listed: Callable[[C], bool] | None = None  # whether tools/list shows it now (None: always)
    workspace: bool = False  # it works in the workspace: a modern client's roots apply (methods/roots.py)


@dataclass(frozen=True)
class MethodSpec(Generic[C]):
    name: str
    summary: str
    handler: Handler[C] | None = field(default=None, compare=False)  # None: a tool's `run`, or routed
    params: dict[str, Any] = field(default_factory=lambda: EMPTY_PARAMS)
    result: dict[str, Any] = field(default_factory=dict)
    errors: tuple[dict[str, Any], ...] = ()  # OpenRPC error objects (errors.openrpc_errors)
    tool: Tool[C] | None = None  # also an MCP tool of this name; its abort texts name it
    check_params: bool = True  # False: the handler reads params itself (MCP's open-ended requests)
    wellformed: bool = True  # lone surrogates in string params become U+FFFD (params.check)


class MethodTable(Generic[C]):
    def __init__(self, specs: Sequence[MethodSpec[C]]) -> None:
        self._specs: dict[str, MethodSpec[C]] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"method {spec.name} is listed twice")
            self._specs[spec.name] = spec

    def __iter__(self) -> Iterator[MethodSpec[C]]:
        return iter(self._specs.values())

    def get(self, name: str) -> MethodSpec[C] | None:
        return self._specs.get(name)

    def tools(self) -> list[MethodSpec[C]]:
        """The methods that are MCP tools, in table order."""
        return [spec for spec in self._specs.values() if spec.tool is not None]

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
