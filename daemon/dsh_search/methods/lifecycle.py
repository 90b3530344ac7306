"""Session methods: initialize, ping, shutdown, exit, rpc.discover — and MCP's server/discover.

`initialize` opens the legacy era's session (2025-11-25 and older); `server/discover` is the modern era's
(2026-07-28) description of the server, answered at once, before, without or after an `initialize`, and
starting nothing: a client may spawn a copy of the server only to ask it (methods/era.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from dsh_search import texts
from dsh_search.methods import era, mcp
from dsh_search.methods.context import Context
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec

log = logging.getLogger("dsh_search.session")

# The MCP revisions `initialize` negotiates, newest first.
PROTOCOL_VERSIONS = era.LEGACY_VERSIONS


def instructions(ctx: Context) -> str:
    return texts.glob_guidance(ctx.config.sample_over_cap_glob_results) + "\n\n" + texts.GREP_GUIDANCE


async def initialize(ctx: Context, params: Any) -> dict[str, Any]:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    ctx.session.mcp = isinstance(asked, str)
    ctx.session.mcp_seen = ctx.session.mcp_seen or ctx.session.mcp
    client = params.get("clientInfo") if isinstance(params, dict) else None
    ctx.session.protocol_version = version if ctx.session.mcp else None
    ctx.session.client_roots = isinstance(capabilities, dict) and isinstance(capabilities.get("roots"), dict)
    ctx.session.client_capabilities = capabilities if isinstance(capabilities, dict) else None
    ctx.session.client_info = client if isinstance(client, dict) else None
    if ctx.session.mcp:  # which client, which era, and how its results are shaped (methods/mcp.py)
        mcp.note_client(ctx, version)
    return {
        "protocolVersion": version,
        "serverInfo": server_info(ctx),
        # tools.listChanged: terminal_search joins the list once a scrollback exists (methods/mcp.py);
        # resources: capped results' spill artifacts (methods/resources.py).
        "capabilities": {"tools": {"listChanged": True}, "logging": {}, "resources": {}},
        "instructions": instructions(ctx),
        "guidance": {
            "glob": texts.glob_guidance(ctx.config.sample_over_cap_glob_results),
            "grep": texts.GREP_GUIDANCE,
            "terminal_search": texts.TERMINAL_SEARCH_GUIDANCE,
        },
        "ripgrep": {"path": ctx.rg.path, "version": ctx.rg.version},
        "config": ctx.config.as_json(),
    }


def server_info(ctx: Context) -> dict[str, Any]:
    return {"name": "dsh-search", "version": ctx.version}


async def server_discover(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The modern era's description of the server (the dispatcher adds resultType, the caching hints and
    serverInfo). Only the modern version is listed: the legacy ones are reached through initialize.
    tools.listChanged: terminal_search's arrival is announced on subscriptions/listen."""
    return {
        "supportedVersions": [era.MODERN_VERSION],
        "capabilities": {"tools": {"listChanged": True}, "resources": {}},
        "instructions": instructions(ctx),
    }


async def ping(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {}


async def shutdown(ctx: Context, params: dict[str, Any]) -> None:
    ctx.shutting_down = True
    if ctx.control is None:
        return
    running = ctx.control.running_requests(exclude=asyncio.current_task())
    if running:
        await asyncio.wait(running)


async def exit_(ctx: Context, params: dict[str, Any]) -> None:
    if ctx.control is not None:
        ctx.control.request_exit()


async def discover(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return ctx.methods.openrpc(ctx.version)


SPECS = (
    MethodSpec(
        "initialize",
        summary="Start a session: server info, ripgrep in use, effective configuration and tool guidance.",
        handler=initialize,
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
    ),
    MethodSpec(
        "server/discover",
        summary="MCP 2026-07-28: the versions, capabilities and instructions of this server; needs the "
        "request envelope in `_meta`, and starts nothing.",
        handler=server_discover,
        params=object_schema({"_meta": {"type": "object"}}, ["_meta"]),
        result={
            "type": "object",
            "required": ["resultType", "supportedVersions", "capabilities", "ttlMs", "cacheScope"],
        },
        check_params=False,  # the envelope is checked by the dispatcher (methods/era.py)
    ),
    MethodSpec("ping", summary="Liveness check; answers an empty object.", handler=ping, result={"type": "object"}),
    MethodSpec(
        "shutdown",
        summary="Finish the requests already running, then answer null; afterwards only `exit` is served.",
        handler=shutdown,
        result={"type": "null"},
    ),
    MethodSpec(
        "exit",
        summary="Exit the daemon (status 0), aborting anything still running.",
        handler=exit_,
        result={"type": "null"},
    ),
    MethodSpec(
        "rpc.discover",
        summary="This service's OpenRPC 1.3.2 description.",
        handler=discover,
        result={"type": "object", "required": ["openrpc", "info", "methods"]},
    ),
)
