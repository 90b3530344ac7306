"""MCP's view of the tools: `tools/list`, `tools/call`, and the shape of an MCP tool result.

A tool is a native method plus its `Tool` declaration (methods/registry.py): description, input schema
without the host-only fields (`cwd`, `sessionId`, which MCP callers pass in `_meta`), progress message.
`tools/call` has no handler of its own: the dispatcher asks `tool_call` which method the call names and
with which params, runs that method exactly as a native call of it, and shapes its outcome as an MCP
tool result (`success_result`, `error_result`): a tool failure is a result with `isError: true` and the
`Error: …` text, never a JSON-RPC error. A call that names no usable tool, or whose own params are
malformed, is a JSON-RPC error (-32602).

A result is sized for a model (docs/decisions.md, "What a model is given"): frameworks hand the model
either the text content or `structuredContent`, so `structuredContent` is the text alone, `{text}`, and
every tool's `outputSchema` says exactly that. The rest of the native result — a search's `meta` (what a
host draws a search card from) and `spill`, terminal_search's matches and counts — goes where no model
reads it: the result's `_meta["dsh-search/result"]`, so the native result is `{text, ...that}`. A failure
is its `Error: …` text and nothing else a model could be handed (no structuredContent: one level of
text, not JSON inside JSON), with the native error's `{code, text}` in `_meta["dsh-search/error"]`. A
capped result's spill artifact is also a `resource_link` (methods/resources.py), after the text that
names it.

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
from dsh_search.transport import jsonrpc

RESULT_KEY = "dsh-search/result"  # _meta of a success: the native result but its text
ERROR_KEY = "dsh-search/error"  # _meta of a failure: the native error's data, {code, text}

# structuredContent of every tool, and so its outputSchema: the text the model is shown.
TEXT_RESULT: dict[str, Any] = {
    **object_schema(
        {"text": {"type": "string", "description": "What the model is shown: the text content, as is."}},
        ["text"],
    ),
    "additionalProperties": False,
}


def is_listed(ctx: Context, spec: MethodSpec[Context]) -> bool:
    return spec.tool is not None and (spec.tool.listed is None or spec.tool.listed(ctx))


def definitions(ctx: Context) -> list[dict[str, Any]]:
    """The tools as `tools/list` shows them: every method with a tool declaration listed now, in order."""
    tools = []
    for spec in ctx.methods.tools():
        assert spec.tool is not None
        if not is_listed(ctx, spec):
            continue
        tools.append(
            {
                "name": spec.name,
                "description": spec.tool.describe(ctx.config),
                "inputSchema": spec.tool.input_schema,
                "outputSchema": TEXT_RESULT,
                "annotations": {"readOnlyHint": True},
            }
        )
    return tools


# --- the shape of a tool result ------------------------------------------------------------------------


def success_result(value: dict[str, Any], link: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool's value as an MCP result: its text as content (and a resource_link when there is one), the
    text as structuredContent, the rest of the value in `_meta`."""
    text = value["text"] if isinstance(value.get("text"), str) else ""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if link is not None:
        content.append(link)
    result: dict[str, Any] = {"content": content, "structuredContent": {"text": text}, "isError": False}
    rest = {key: item for key, item in value.items() if key != "text"}
    if rest:
        result["_meta"] = {RESULT_KEY: rest}
    return result


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
            "structuredContent": TEXT_RESULT,
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
