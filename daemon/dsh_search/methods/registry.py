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
from typing import Any, Generic, Protocol, TypeVar

from dsh_search.config import Config
from dsh_search.engine.searcher import Tally
from dsh_search.methods.params import object_schema

C = TypeVar("C")

Handler = Callable[[C, dict[str, Any]], Awaitable[Any]]


class ToolValue(Protocol):
    """What a tool's run answers: the engine's result, whose `as_json()` is the native method's result
    and whose `text` is what the model reads."""

    @property
    def text(self) -> str: ...

    def as_json(self) -> dict[str, Any]: ...


ToolRun = Callable[[C, dict[str, Any], Tally | None], Awaitable[ToolValue]]

EMPTY_PARAMS: dict[str, Any] = object_schema({}, [])


class Tool(Generic[C]):
    """A method as a model sees it (MCP `tools/list`, `tools/call`), and how it runs.

    `run(ctx, params, tally)` gets the params checked against the method's native schema and a tally to
    keep current when the call reports progress (else None), and answers the engine's result (the native
    method answers its `as_json()`); `progress` words a report from the tally. `structured` makes the
    result's MCP structuredContent — its text and a few counts, small enough for a framework that shows its
    model the structuredContent — and `output_schema` is its schema, closed, which admits this tool's
    structured results and no other tool's (methods/mcp.py). A declaration, never changed once made.
    (Tool and MethodSpec are plain classes rather than frozen dataclasses: generating a dataclass's
    methods at import cost ~4 M instructions each, ~1 % of a cold start.)
    """

    __slots__ = (
        "describe",
        "host_fields",
        "input_schema",
        "listed",
        "output_schema",
        "progress",
        "run",
        "structured",
        "workspace",
    )

    def __init__(
        self,
        describe: Callable[[Config], str],
        input_schema: dict[str, Any],
        run: ToolRun[C],
        progress: Callable[[Tally], str],
        structured: Callable[[Any], dict[str, Any]],
        output_schema: dict[str, Any],
        host_fields: tuple[str, ...] = (),
        listed: Callable[[C], bool] | None = None,
        workspace: bool = False,
    ) -> None:
        self.describe = describe  # the description, which may quote configured caps
        self.input_schema = input_schema  # model-facing: without the host-only fields
        self.run = run
        self.structured = structured  # run's result → the MCP structuredContent (its text and counts)
        self.output_schema = output_schema  # the MCP outputSchema: structured's schema, closed
        self.progress = progress  # the progress message for a running call
        self.host_fields = host_fields  # params an MCP client passes in `tools/call`'s `_meta` instead
        self.listed = listed  # whether tools/list shows it now (None: always)
        self.workspace = workspace  # it works in the workspace: a modern client's roots apply (methods/roots.py)


class MethodSpec(Generic[C]):
    """A method: its name, what it does, its handler (or tool), and what it takes, answers and fails with.
    A declaration, never changed once made."""

    __slots__ = ("check_params", "errors", "handler", "name", "params", "result", "summary", "tool", "wellformed")

    def __init__(
        self,
        name: str,
        summary: str,
        handler: Handler[C] | None = None,
        params: dict[str, Any] = EMPTY_PARAMS,
        result: dict[str, Any] | None = None,
        errors: tuple[dict[str, Any], ...] = (),
        tool: Tool[C] | None = None,
        check_params: bool = True,
        wellformed: bool = True,
    ) -> None:
        self.name = name
        self.summary = summary
        self.handler = handler  # None: a tool's `run`, or routed
        self.params = params
        self.result: dict[str, Any] = {} if result is None else result
        self.errors = errors  # OpenRPC error objects (errors.openrpc_errors)
        self.tool = tool  # also an MCP tool of this name; its abort texts name it
        self.check_params = check_params  # False: the handler reads params itself (MCP's open-ended requests)
        self.wellformed = wellformed  # lone surrogates in string params become U+FFFD (params.check)

    def __repr__(self) -> str:
        return f"MethodSpec({self.name!r})"


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
