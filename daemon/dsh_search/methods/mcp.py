"""MCP's view of the tools: `tools/list`, `tools/call`, and the shape of an MCP tool result.

A tool is a native method plus its `Tool` declaration (methods/registry.py): description, input schema
without the host-only fields (`cwd`, `sessionId`, which MCP callers pass in `_meta`), progress message,
structured content and output schema. `tools/call` has no handler of its own: the dispatcher asks
`tool_call` which method the call names and with which params, runs that method exactly as a native call
of it, and shapes its outcome as an MCP tool result (`success_result`, `error_result`): a tool failure is
a result with `isError: true` and the `Error: …` text, never a JSON-RPC error. A call that names no usable
tool, or whose own params are malformed, is a JSON-RPC error (-32602).

A result is sized for a model (docs/decisions.md, "What a model is given"); `mcpResult` says how:

- `structured` — the contract's shape: each tool lists an `outputSchema`, and a result is its text as
  the one content item plus `structuredContent`: the same text and a few counts (`Tool.structured`:
  glob's pathCount, grep's matchCount and fileCount, …), closed schemas that tell the tools apart. What
  frameworks hand their model from it was measured (tests/frameworks): eight of ten read the content;
- `text` — the text alone, no outputSchema (MCP asks for structuredContent only from a tool that has one);
- `full` — the native result as structuredContent under its own closed schema, and a capped result's
  spill artifact also as a `resource_link` (methods/resources.py) after the text that names it;
- `auto` (default) — `structured`, except `text` for a client recognised (`text_alone`) as one whose
  framework shows its model more than the content: LangChain.js (`@langchain/mcp-adapters`, by its
  clientInfo) hands its model JSON of the text with the structuredContent and `_meta`; fastmcp's client,
  under pydantic-ai's MCPToolset, which hands its model the structuredContent serialized instead of the
  text, is known by the Python SDK's default clientInfo (`mcp`) with the `debug` log level fastmcp asks
  every modern request for. A client's requests are judged alike, so a client listed no outputSchema
  is sent no structuredContent, and one that validates results against their schema gets both.

A failure is its `Error: …` text in every mode, with the native error's `{code, text}` in
`_meta["dsh-search/error"]` (no framework hands a failure's `_meta` to its model: they raise or return
its text).

A tool whose declaration says it is not listed right now (terminal_search before any scrollback exists,
see `terminalSearch`; read without `readTool`) is neither in tools/list nor callable through tools/call.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from dsh_search.engine.failures import INVALID_ARGS, ToolError, invalid_args
from dsh_search.methods import params as params_mod
from dsh_search.methods.context import Context
from dsh_search.methods.errors import RpcError, error_data, openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec, Tool, ToolValue
from dsh_search.methods.session import modern_request
from dsh_search.transport import jsonrpc

log = logging.getLogger("dsh_search.mcp")

ERROR_KEY = "dsh-search/error"  # _meta of a failure: the native error's data, {code, text}

# The shapes of a tool result (`mcpResult`, less `auto`, which picks one per client).
TEXT, STRUCTURED, FULL = "text", "structured", "full"


def text_alone(client_info: Any, log_level: str | None) -> str | None:
    """Why this client is given the text alone under `mcpResult: auto`, or None: it gets the structured
    shape. The clients recognised are those whose framework, measured with its pinned version
    (tests/frameworks), shows its model a result's structuredContent or `_meta` instead of, or beside,
    its text."""
    name = client_info.get("name") if isinstance(client_info, dict) else None
    if name == "@langchain/mcp-adapters":
        return "LangChain.js shows its model the structuredContent and _meta with the text"
    if name == "mcp" and log_level == "debug":
        return "fastmcp's client, as under pydantic-ai, whose model is shown the structuredContent"
    return None


def client(ctx: Context) -> tuple[Any, dict[str, Any] | None, str | None]:
    """The client a request comes from: its clientInfo, capabilities and log level — a modern request's
    own envelope, else what the legacy session's `initialize` said (no log level: that era has none per
    request)."""
    request = modern_request()
    if request is not None and request.envelope is not None:
        envelope = request.envelope
        return envelope.client_info, envelope.capabilities, envelope.log_level
    return ctx.session.client_info, ctx.session.client_capabilities, None


def shape(ctx: Context) -> str:
    """How this request's tools are listed and results shaped: TEXT, STRUCTURED or FULL."""
    mode = ctx.config.mcp_result
    if mode != "auto":
        return mode
    info, _capabilities, level = client(ctx)
    return TEXT if text_alone(info, level) is not None else STRUCTURED


# At most this many distinct clients are logged by one daemon (a client could vary its clientInfo per
# request; what is remembered stays bounded).
CLIENTS_NOTED_MAX = 32


def note_client(ctx: Context, protocol: str | None) -> None:
    """Log, once per distinct client, who it is and how its results are shaped (info): what a
    troubleshooter asks first, and what tests/frameworks records for each framework."""
    info, capabilities, level = client(ctx)
    # The stdlib's encoder, ASCII: what a client sends may hold lone surrogates, which orjson refuses.
    said = [json.dumps(value, separators=(",", ":"), sort_keys=True) for value in (info, capabilities)]
    key = "\0".join([*said, str(level), str(protocol)])
    if key in ctx.session.clients_noted or len(ctx.session.clients_noted) >= CLIENTS_NOTED_MAX:
        return
    ctx.session.clients_noted.add(key)
    how = shape(ctx)
    reason = text_alone(info, level) if ctx.config.mcp_result == "auto" else None
    log.info(
        "client %s, protocol %s, capabilities %s, log level %s: tool results %s",
        said[0],
        protocol,
        said[1],
        level,
        f"{how} (mcpResult {ctx.config.mcp_result}{': ' + reason if reason else ''})",
    )


def output_schema(spec: MethodSpec[Context], how: str) -> dict[str, Any] | None:
    """A tool's outputSchema in a shape: its structured content's (STRUCTURED), its native result's,
    closed (FULL), or none (TEXT). Each admits that tool's results and no other tool's."""
    assert spec.tool is not None
    if how == STRUCTURED:
        return spec.tool.output_schema
    if how == FULL:
        return {**spec.result, "additionalProperties": False}
    return None


def is_listed(ctx: Context, spec: MethodSpec[Context]) -> bool:
    return spec.tool is not None and (spec.tool.listed is None or spec.tool.listed(ctx))


def definitions(ctx: Context) -> list[dict[str, Any]]:
    """The tools as `tools/list` shows them: every method with a tool declaration listed now, in order,
    as `{name, description, inputSchema, outputSchema, annotations}` (outputSchema absent in TEXT)."""
    how = shape(ctx)
    tools = []
    for spec in ctx.methods.tools():
        assert spec.tool is not None
        if not is_listed(ctx, spec):
            continue
        tool: dict[str, Any] = {
            "name": spec.name,
            "description": spec.tool.describe(ctx.config),
            "inputSchema": spec.tool.input_schema,
        }
        schema = output_schema(spec, how)
        if schema is not None:
            tool["outputSchema"] = schema
        tool["annotations"] = {"readOnlyHint": True}
        tools.append(tool)
    return tools


# --- the shape of a tool result ------------------------------------------------------------------------


def success_result(
    how: str, tool: Tool[Context], value: ToolValue, link: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A tool's value as an MCP result in a shape (`shape`): its text as the one content item, and nothing
    more (TEXT), its structured content (STRUCTURED), or the native result and, after the text, the
    capped result's `link` (FULL; methods/resources.py makes it)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": value.text}]
    if how == TEXT:
        return {"content": content, "isError": False}
    if how == STRUCTURED:
        return {"content": content, "structuredContent": tool.structured(value), "isError": False}
    if link is not None:
        content.append(link)
    return {"content": content, "structuredContent": value.as_json(), "isError": False}


def error_result(err: ToolError) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": err.text}], "isError": True, "_meta": {ERROR_KEY: error_data(err)}}


# --- the methods -----------------------------------------------------------------------------------------


def no_cursor(params: dict[str, Any]) -> None:
    """MCP's lists here come in one page: a cursor can only be one this server never gave (-32602)."""
    if "cursor" in params:
        raise RpcError(jsonrpc.INVALID_PARAMS, "Invalid cursor: this list has one page")


# Params of MCP's list methods: a cursor (never valid here) and the request's _meta.
LIST_PARAMS = object_schema({"cursor": {"type": "string"}, "_meta": {"type": "object"}}, [])


async def tools_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    no_cursor(params)
    return {"tools": definitions(ctx)}


TOOLS_LIST = MethodSpec[Context](
    "tools/list",
    summary="The model-facing tools (glob, grep, terminal_search, and read with readTool) with descriptions "
    "and input schemas.",
    handler=tools_list,
    params=LIST_PARAMS,
    result=object_schema({"tools": {"type": "array"}}, ["tools"]),
    errors=openrpc_errors(INVALID_ARGS),
)
TOOLS_CALL = MethodSpec[Context](
    "tools/call",
    summary="Run a tool the MCP way: {name, arguments, _meta?: {cwd?, sessionId?}} → MCP tool result.",
    params=object_schema(
        {
            "name": {"type": "string"},
            "arguments": {"type": "object"},
            "_meta": {"type": "object"},
            "inputResponses": {"type": "object"},
            "requestState": {"type": "string"},
        },
        ["name"],
    ),
    result=object_schema(
        {
            "content": {"type": "array"},
            "structuredContent": {"type": "object"},
            "isError": {"type": "boolean"},
            "_meta": {"type": "object"},
        },
        ["content", "isError"],
    ),
    errors=openrpc_errors(INVALID_ARGS, cancellable=True),
)
SPECS = (TOOLS_LIST, TOOLS_CALL)


def tool_call(ctx: Context, raw: Any) -> tuple[MethodSpec[Context], dict[str, Any]]:
    """The tool a `tools/call` names, and the params to run it with: the model's `arguments` without any
    host-only field, plus the host-only fields the client put in `_meta`. Raises INVALID_ARGS for
    params that are not `tools/call`'s, or a tool that does not exist or is not listed now."""
    params = params_mod.check(TOOLS_CALL.params, raw)
    spec = ctx.methods.get(params["name"])
    if spec is None or spec.tool is None or not is_listed(ctx, spec):
        raise invalid_args(f"unknown tool: {params['name']}")
    arguments = without_nulls(params.get("arguments") or {}, spec.tool.input_schema)
    meta = params.get("_meta") or {}
    for name in spec.tool.host_fields:
        arguments.pop(name, None)  # host-only: a model cannot set them
        if meta.get(name) is not None:
            arguments[name] = meta[name]
    return spec, arguments


def without_nulls(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The model's arguments with every optional one that is `null` left out: null means absent
    (docs/decisions.md, "Null means absent"). Frameworks (mcp-use) and models in strict structured-output
    modes send `null` for each optional argument they do not use. A required argument's null is kept,
    so it fails as a missing value does not: `"pattern" must be a string`. Native calls are not passed
    through this (upstream's texts)."""
    required = schema.get("required", ())
    return {key: value for key, value in arguments.items() if value is not None or key in required}
