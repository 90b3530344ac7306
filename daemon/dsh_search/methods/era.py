"""MCP's two eras on one connection, sans IO: which era a message belongs to, and the modern result shape.

MCP 2026-07-28 (the modern era) has no handshake: every request carries its protocol version and the
client's capabilities in `params._meta` (`classify`), the server answers each request on its own, and
every result says what it is (`resultType`, and `ttlMs` + `cacheScope` where it may be cached). The
2025-11-25 era and older (the legacy era) open with `initialize`. A dual-era server picks the era of
each message from how it arrives — the spec allows both eras on one process, and locking a connection
to the first one breaks clients that send `initialize` after a `server/discover` they gave up waiting
for (docs/decisions.md) — so the dispatcher asks, for every request:

- `initialize` is legacy, whatever its `_meta` says (as the reference SDKs read it);
- a request whose `_meta` names `io.modelcontextprotocol/protocolVersion` is modern: its envelope is
  checked here (a missing or ill-typed field is -32602, a version not served is -32022 with the versions
  that are); the methods 2026-07-28 removed (`LEGACY_ONLY`: ping, logging/setLevel, …) do not exist for
  it (-32601), and the daemon's own methods (glob, grep, scrollback/append, …) are served to it as the
  reference SDKs serve methods a server registers beyond the spec's;
- anything else is what it always was: a native call or a legacy MCP request — except the methods that
  only exist in the modern era (`MODERN_ONLY`), which without the envelope miss a required field (-32602).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dsh_search.transport import jsonrpc

MODERN_VERSION = "2026-07-28"
# The handshake revisions `initialize` negotiates, newest first.
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
# Every revision this server speaks: the modern one through the envelope, the others through initialize.
SUPPORTED_VERSIONS = (MODERN_VERSION, *LEGACY_VERSIONS)
# The legacy revisions that know `resource_link` content (2025-06-18 introduced it).
RESOURCE_LINK_VERSIONS = frozenset({"2025-11-25", "2025-06-18"})

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

UNSUPPORTED_PROTOCOL_VERSION = -32022

# Methods of the legacy era that 2026-07-28 removed: a modern request of one is -32601. (The rest of
# 2026-07-28 that the daemon does not serve — prompts, completion — is -32601 in both eras.)
LEGACY_ONLY = frozenset(
    {
        "ping",
        "logging/setLevel",
        "notifications/initialized",
        "notifications/roots/list_changed",
        "resources/subscribe",
        "resources/unsubscribe",
    }
)
# Methods of the modern era only: a request of one without the envelope lacks a required field.
MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})
# Results a client may cache, which must say for how long and for whom (2026-07-28 "Caching").
CACHEABLE = frozenset({"server/discover", "tools/list", "resources/list", "resources/templates/list", "resources/read"})
# The caching hints: what both reference SDKs send when a server sets none (docs/decisions.md).
TTL_MS = 0
CACHE_SCOPE = "private"

# MCP's log levels (RFC 5424 severities), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class Envelope(NamedTuple):
    """The per-request fields of a modern request, checked."""

    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    log_level: str | None = None


class Fault(NamedTuple):
    """A modern request refused for its envelope: the JSON-RPC error to answer it with."""

    code: int
    message: str
    data: Any = jsonrpc.NO_ID


def has_envelope(params: Any) -> bool:
    """Whether params carry the modern envelope's version key (the one sign of the modern era)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION in meta


def classify(params: Any) -> Envelope | Fault | None:
    """The modern envelope of a request's params, a `Fault` for a bad one, or None: not a modern request.

    Checked in the reference SDKs' order: the required fields, then their types, then the version —
    so a malformed envelope is never answered -32022, the one error probing clients do not fall back on.
    """
    if not has_envelope(params):
        return None
    meta: dict[str, Any] = params["_meta"]
    missing = [key for key in (PROTOCOL_VERSION, CLIENT_CAPABILITIES) if key not in meta]
    if missing:
        return Fault(jsonrpc.INVALID_PARAMS, missing_envelope(missing))
    version, capabilities = meta[PROTOCOL_VERSION], meta[CLIENT_CAPABILITIES]
    if not isinstance(version, str):
        return Fault(jsonrpc.INVALID_PARAMS, f"params._meta: {PROTOCOL_VERSION} must be a string")
    if not isinstance(capabilities, dict):
        return Fault(jsonrpc.INVALID_PARAMS, f"params._meta: {CLIENT_CAPABILITIES} must be an object")
    info = meta.get(CLIENT_INFO)
    if info is not None and not isinstance(info, dict):
        return Fault(jsonrpc.INVALID_PARAMS, f"params._meta: {CLIENT_INFO} must be an object")
    level = meta.get(LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        return Fault(jsonrpc.INVALID_PARAMS, f"params._meta: {LOG_LEVEL} must be a log level")
    if version != MODERN_VERSION:
        return Fault(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )
    return Envelope(version, capabilities, info, level)


def missing_envelope(keys: list[str] | tuple[str, ...] = (PROTOCOL_VERSION, CLIENT_CAPABILITIES)) -> str:
    return f"params._meta is missing the required envelope key(s): {', '.join(keys)}"


def complete(method: str, result: dict[str, Any], server_info: dict[str, Any]) -> dict[str, Any]:
    """A handler's result as a modern result: `resultType` first (`complete` unless it says otherwise),
    the caching hints on a complete cacheable result, and the server's identity in `_meta`."""
    kind = result.get("resultType", "complete")
    out: dict[str, Any] = {"resultType": kind, **result}
    if method in CACHEABLE and kind == "complete":
        out.setdefault("ttlMs", TTL_MS)
        out.setdefault("cacheScope", CACHE_SCOPE)
    meta = result.get("_meta")
    out["_meta"] = {**(meta if isinstance(meta, dict) else {}), SERVER_INFO: server_info}
    return out


def input_required(requests: dict[str, Any]) -> dict[str, Any]:
    """A result asking the client to answer `requests` and send the request again (MRTR)."""
    return {"resultType": "input_required", "inputRequests": requests}
