"""MCP's view of the tools: `tools/list`, `tools/call`, and the shape of an MCP tool result.

A tool is a native method plus its `Tool` declaration (methods/registry.py): description, input schema
without the host-only fields (`cwd`, `sessionId`, which MCP callers pass in `_meta`), progress message.
`tools/call` has no handler of its own: the dispatcher asks `tool_call` which method the call names and
with which params, runs that method exactly as a native call of it, and shapes its outcome as an MCP
tool result (`success_result`, `error_result`): a tool failure is a result with `isError: true` and the
`Error: …` text, never a JSON-RPC error. A call that names no usable tool, or whose own params are
malformed, is a JSON-RPC error (-32602).

A result is sized for a model (docs/decisions.md, "What a model is given"). Measured in every framework
we test (tests/frameworks), a result that is one text content and nothing else reaches almost every
model as that text: LangChain.js wraps the text in JSON with the structuredContent and `_meta` when
either is there (3.4–5.9 times the text), pydantic-ai hands over the structuredContent serialized,
LangChain Python turns a `resource_link` into a file block its OpenAI adapter rejects, and the OpenAI
Agents SDKs and pydantic-ai serialize the link beside the text. So by default (`mcpResult: auto`) a
result is `{content: [{type: "text", text}], isError}` and no tool declares an outputSchema (MCP asks for
structuredContent only from a tool that does). Mastra is the exception: it hands its model the whole
result as JSON unless the tool has an outputSchema and the result structuredContent, and it declares
the MCP Apps extension, whose hosts show the model the content and keep structured content for their
UI; to a client that declares it, and to every client with `mcpResult: full` (hosts that read more than
the text), each tool's outputSchema is its native result's (closed: glob's admits glob's results only),
the structuredContent is the native result, and a capped result's spill artifact is also a
`resource_link` (methods/resources.py) after the text that names it. A failure is its `Error: …` text
in every mode, with the native error's `{code, text}` in `_meta["dsh-search/error"]` (no framework
hands a failure's `_meta` to its model: they raise or return its text).

A tool whose declaration says it is not listed right now (terminal_search before any scrollback exists,
see `terminalSearch`; read without `readTool`) is neither in tools/list nor callable through tools/call.
"""

from __future__ import annotations

from typing import Any

from dsh_search.engine.failures import INVALID_ARGS, ToolError, invalid_args
from dsh_search.methods import params as params_mod
from dsh_search.methods.context import Context
from dsh_search.methods.errors import RpcError, error_data, openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec
from dsh_search.methods.session import modern_request
from dsh_search.transport import jsonrpc

ERROR_KEY = "dsh-search/error"  # _meta of a failure: the native error's data, {code, text}


# The MCP Apps extension: a client that declares it hands its model a result's content and keeps its
# structuredContent for the UI (Mastra measured: without structuredContent it hands the model the whole
# result as JSON).
UI_EXTENSION = "io.modelcontextprotocol/ui"


def full(ctx: Context) -> bool:
    """Whether results carry the native result and links, and tools an outputSchema: `mcpResult: full`,
    or `auto` for a client that declares the MCP Apps extension (in the request's own envelope, else in
    its `initialize`)."""
    mode = ctx.config.mcp_result
    if mode != "auto":
        return mode == "full"
    request = modern_request()
    capabilities = request.envelope.capabilities if request is not None and request.envelope is not None else None
    if capabilities is None:
        capabilities = ctx.session.client_capabilities
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and UI_EXTENSION in extensions


def output_schema(spec: MethodSpec[Context]) -> dict[str, Any]:
    """A tool's outputSchema in full mode: its native result's schema, closed, so that it admits that
    tool's results and no other tool's."""
    assert spec.result is not None
    return {**spec.result, "additionalProperties": False}


def is_listed(ctx: Context, spec: MethodSpec[Context]) -> bool:
    return spec.tool is not None and (spec.tool.listed is None or spec.tool.listed(ctx))


def definitions(ctx: Context) -> list[dict[str, Any]]:
    """The tools as `tools/list` shows them: every method with a tool declaration listed now, in order."""
    tools = []
    for spec in ctx.methods.tools():
        assert spec.tool is not None
        if not is_listed(ctx, spec):
            continue
        tool = {
            "name": spec.name,
            "description": spec.tool.describe(ctx.config),
            "inputSchema": spec.tool.input_schema,
            "annotations": {"readOnlyHint": True},
        }
        if full(ctx):
            tool["outputSchema"] = output_schema(spec)
        tools.append(tool)
    return tools


# --- the shape of a tool result ------------------------------------------------------------------------


def success_result(value: dict[str, Any], link: dict[str, Any] | None = None, *, whole: bool = False) -> dict[str, Any]:
    """A tool's value as an MCP result: its text as the one content item; with `whole` (full mode), the
    value as structuredContent and the resource_link when there is one."""
    text = value["text"] if isinstance(value.get("text"), str) else ""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if not whole:
        return {"content": content, "isError": False}
    if link is not None:
        content.append(link)
    return {"content": content, "structuredContent": value, "isError": False}


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
