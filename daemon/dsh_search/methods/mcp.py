"""MCP's view of the tools: `tools/list`, `tools/call`, and the shape of an MCP tool result.

A tool is a native method plus its `Tool` declaration (methods/registry.py): description, input schema
without the host-only fields (`cwd`, `sessionId`, which MCP callers pass in `_meta`), progress message.
`tools/call` has no handler of its own: the dispatcher asks `tool_call` which method the call names and
with which params, runs that method exactly as a native call of it, and shapes its outcome as an MCP
tool result (`success_result`, `error_result`): a tool failure is a result with `isError: true` and the
`Error: …` text, never a JSON-RPC error. A call that names no usable tool, or whose own params are
malformed, is a JSON-RPC error (-32602).

Every tool has an `outputSchema`: its native result schema, or the error object `{code, text}` that an
`isError` result carries as `structuredContent` (MCP: structured content must conform to the output
schema when there is one, and clients such as the TypeScript SDK validate it on error results too).
A tool whose declaration says it is not listed right now (terminal_search before any scrollback exists,
see `terminalSearch`) is neither in tools/list nor callable through tools/call.
"""

from __future__ import annotations

from typing import Any

from dsh_search.engine.failures import INVALID_ARGS, ToolError, invalid_args
from dsh_search.methods import params as params_mod
from dsh_search.methods.context import Context
from dsh_search.methods.errors import KINDS, error_data, openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec

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
                "outputSchema": output_schema(spec.result),
                "annotations": {"readOnlyHint": True},
            }
        )
    return tools


# --- the shape of a tool result ------------------------------------------------------------------------


def success_result(value: dict[str, Any]) -> dict[str, Any]:
    text = value["text"] if isinstance(value.get("text"), str) else ""
    return {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}


def error_result(err: ToolError) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": err.text}], "structuredContent": error_data(err), "isError": True}


# --- the methods -----------------------------------------------------------------------------------------


async def tools_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {"tools": definitions(ctx)}


TOOLS_LIST = MethodSpec[Context](
    "tools/list",
    summary="The model-facing tools (glob, grep, terminal_search) with descriptions and input schemas.",
    handler=tools_list,
    result=object_schema({"tools": {"type": "array"}}, ["tools"]),
)
TOOLS_CALL = MethodSpec[Context](
    "tools/call",
    summary="Run a tool the MCP way: {name, arguments, _meta?: {cwd?, sessionId?}} → MCP tool result.",
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


def tool_call(ctx: Context, raw: Any) -> tuple[MethodSpec[Context], dict[str, Any]]:
    """The tool a `tools/call` names, and the params to run it with: the model's `arguments` without any
    host-only field, plus the host-only fields the client put in `_meta`. Raises INVALID_ARGS for
    params that are not `tools/call`'s, or a tool that does not exist or is not listed now."""
    params = params_mod.check(TOOLS_CALL.params, raw)
    spec = ctx.methods.get(params["name"])
    if spec is None or spec.tool is None or not is_listed(ctx, spec):
        raise invalid_args(f"unknown tool: {params['name']}")
    arguments = dict(params.get("arguments") or {})
    meta = params.get("_meta") or {}
    for name in spec.tool.host_fields:
        arguments.pop(name, None)  # host-only: a model cannot set them
        if name in meta:
            arguments[name] = meta[name]
    return spec, arguments
