"""MCP's view of the tools: `tools/list` and `tools/call` over the native methods (SPEC §3).

A tool is a native method plus its model-facing face: description, input schema (without host-only
fields such as `cwd` and `sessionId`, which MCP callers pass in `_meta`) and read-only annotation.
`tools/call` runs the native method and wraps its outcome as an MCP tool result; a tool failure is a
result with `isError: true` and the `Error: …` text, never a JSON-RPC error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .app import App
from .config import Config
from .errors import ToolError, invalid_args
from .params import check, object_schema
from .registry import REGISTRY, method


@dataclass(frozen=True)
class Tool:
    name: str
    describe: Callable[[Config], str]
    input_schema: Callable[[Config], dict[str, Any]]
    meta_fields: tuple[str, ...] = ()  # host-only params that MCP callers pass in `_meta`


TOOLS: dict[str, Tool] = {}


def tool(entry: Tool) -> None:
    TOOLS[entry.name] = entry


def definitions(config: Config) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "description": t.describe(config),
            "inputSchema": t.input_schema(config),
            "annotations": {"readOnlyHint": True},
        }
        for t in TOOLS.values()
    ]


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


@method(
    "tools/list",
    summary="The model-facing tools (glob, grep, terminal_search) with descriptions and input schemas.",
    result=object_schema({"tools": {"type": "array"}}, ["tools"]),
)
async def tools_list(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {"tools": definitions(app.config)}


_CALL_SCHEMA = object_schema(
    {"name": {"type": "string"}, "arguments": {"type": "object"}, "_meta": {"type": "object"}}, ["name"]
)


@method(
    "tools/call",
    summary="Run a tool the MCP way: {name, arguments, _meta?: {cwd?, sessionId?}} → MCP tool result.",
    params=_CALL_SCHEMA,
    result=object_schema(
        {"content": {"type": "array"}, "structuredContent": {"type": "object"}, "isError": {"type": "boolean"}},
        ["content", "isError"],
    ),
    tool="*",
)
async def tools_call(app: App, params: dict[str, Any]) -> dict[str, Any]:
    entry = TOOLS.get(params["name"])
    if entry is None:
        raise invalid_args(f"unknown tool: {params['name']}")
    arguments = dict(params.get("arguments") or {})
    meta = params.get("_meta") or {}
    for name in entry.meta_fields:
        arguments.pop(name, None)
        if name in meta:
            arguments[name] = meta[name]
    spec = REGISTRY[entry.name]
    assert spec.handler is not None
    try:
        value = await spec.handler(app, check(spec.params_schema, arguments, wellformed=spec.wellformed))
    except ToolError as err:
        return error_result(err)
    return success_result(value)
