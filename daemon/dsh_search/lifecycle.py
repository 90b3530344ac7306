"""Session methods: initialize, ping, shutdown, exit, rpc.discover (SPEC §3)."""

from __future__ import annotations

import asyncio
from typing import Any

from . import texts
from .app import App
from .params import object_schema
from .registry import method, openrpc_document

# MCP protocol revisions this server speaks, newest first.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


def instructions(app: App) -> str:
    return texts.glob_guidance(app.config.sample_over_cap_glob_results) + "\n\n" + texts.GREP_GUIDANCE


@method(
    "initialize",
    summary="Start a session: server info, ripgrep in use, effective configuration and tool guidance.",
    params=object_schema(
        {
            "protocolVersion": {"type": "string"},
            "capabilities": {"type": "object"},
            "clientInfo": {"type": "object"},
        },
        [],
    ),
    result={"type": "object", "required": ["protocolVersion", "serverInfo", "capabilities", "instructions"]},
    check_params=False,  # LSP and MCP clients send many fields of their own; none can make this fail
)
async def initialize(app: App, params: Any) -> dict[str, Any]:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    return {
        "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
        "serverInfo": {"name": "dsh-search", "version": app.version},
        "capabilities": {"tools": {}},
        "instructions": instructions(app),
        "guidance": {
            "glob": texts.glob_guidance(app.config.sample_over_cap_glob_results),
            "grep": texts.GREP_GUIDANCE,
            "terminal_search": texts.TERMINAL_SEARCH_GUIDANCE,
        },
        "ripgrep": {"path": app.rg.path, "version": app.rg.version},
        "config": app.config.as_json(),
    }


@method("ping", summary="Liveness check; answers an empty object.", result={"type": "object"})
async def ping(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {}


@method(
    "shutdown",
    summary="Finish the requests already running, then answer null; afterwards only `exit` is served.",
    result={"type": "null"},
)
async def shutdown(app: App, params: dict[str, Any]) -> None:
    app.shutting_down = True
    if app.control is None:
        return
    running = app.control.running_requests(exclude=asyncio.current_task())
    if running:
        await asyncio.wait(running)


@method("exit", summary="Exit the daemon (status 0), aborting anything still running.", result={"type": "null"})
async def exit_(app: App, params: dict[str, Any]) -> None:
    if app.control is not None:
        app.control.request_exit()


@method(
    "rpc.discover",
    summary="This service's OpenRPC 1.3.2 description.",
    result={"type": "object", "required": ["openrpc", "info", "methods"]},
)
async def discover(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return openrpc_document(app.version)
