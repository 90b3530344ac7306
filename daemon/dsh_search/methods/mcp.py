"""MCP's view of the tools: `tools/list` and `tools/call` over the native methods.

A tool is a native method plus its model-facing face: description, input schema (without host-only
fields such as `cwd` and `sessionId`, which MCP callers pass in `_meta`) and read-only annotation.
`tools/call` runs the native method and wraps its outcome as an MCP tool result; a tool failure is a
result with `isError: true` and the `Error: …` text, never a JSON-RPC error.

Every tool has an `outputSchema`: its native result schema, or the error object `{code, text}` that an
`isError` result carries as `structuredContent` (MCP: structured content must conform to the output
schema when there is one, and clients such as the TypeScript SDK validate it on error results too).
A tool whose face says it is not listed right now (terminal_search before any scrollback exists, see
`terminalSearch`) is neither in tools/list nor callable through tools/call.
"""

from __future__ import annotations

from typing import Any

from dsh_search.methods.context import Context
from dsh_search.methods.errors import INVALID_ARGS, KINDS, ToolError, invalid_args, openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec, call_checked

# structuredContent of an isError result: the failure kind and the model-facing text.
TOOL_ERROR: dict[str, Any] = {
    **object_schema(
        {"code": {"type": "string", "enum": [kind.name for kind in KINDS]}, "text": {"type": "string"}},
        ["code", "text"],
    ),
    "additionalProperties": False,
}


def output_schema(result: dict[str, Any]) -> dict[str, Any]:
    """A tool's outputSchema: its result, or the error object (disjoint: results have other required keys)."""
    return {"type": "object", "oneOf": [result, TOOL_ERROR]}


def is_listed(ctx: Context, spec: MethodSpec) -> bool:
    return spec.tool is not None and (spec.tool.listed is None or spec.tool.listed(ctx))


def definitions(ctx: Context) -> list[dict[str, Any]]:
    """The tools as `tools/list` shows them: every method with a tool face listed now, in table order."""
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
                "outputSchema": output_schema(spec.result),
                "annotations": {"readOnlyHint": True},
            }
        )
    return tools


def text_of(result: Any) -> str:
    return result["text"] if isinstance(result, dict) and isinstance(result.get("text"), str) else ""


def success_result(value: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text_of(value)}], "structuredContent": value, "isError": False}


def error_result(err: ToolError) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": err.text}],
        "structuredContent": err.data(),
        "isError": True,
    }


async def tools_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {"tools": definitions(ctx)}


async def tools_call(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    spec = ctx.methods.get(params["name"])
    if spec is None or spec.tool is None or not is_listed(ctx, spec):
        raise invalid_args(f"unknown tool: {params['name']}")
    arguments = dict(params.get("arguments") or {})
    meta = params.get("_meta") or {}
    for name in spec.tool.host_fields:
        arguments.pop(name, None)  # host-only: a model cannot set them
        if name in meta:
            arguments[name] = meta[name]
    try:
        value = await call_checked(spec, ctx, arguments)
    except ToolError as err:
        return error_result(err)
    return success_result(value)


TOOLS_LIST = MethodSpec(
    "tools/list",
    summary="The model-facing tools (glob, grep, terminal_search) with descriptions and input schemas.",
    handler=tools_list,
    result=object_schema({"tools": {"type": "array"}}, ["tools"]),
)
TOOLS_CALL = MethodSpec(
    "tools/call",
    summary="Run a tool the MCP way: {name, arguments, _meta?: {cwd?, sessionId?}} → MCP tool result.",
    handler=tools_call,
    params=object_schema(
        {"name": {"type": "string"}, "arguments": {"type": "object"}, "_meta": {"type": "object"}}, ["name"]
    ),
    result=object_schema(
        {"content": {"type": "array"}, "structuredContent": {"type": "object"}, "isError": {"type": "boolean"}},
        ["content", "isError"],
    ),
    errors=openrpc_errors(INVALID_ARGS, cancellable=True),
)
SPECS = (TOOLS_LIST, TOOLS_CALL)
