"""The one table of error kinds: each kind a tool can fail with (engine/failures.py), the JSON-RPC error
code it is answered with, and when it happens.

A failed call is answered as a JSON-RPC error whose `code` is the kind's number, whose `message` is the
failure's message and whose `data` is `{"code": <kind>, "text": "Error: <message>"}` — `text` is exactly
what a model should be shown; through `tools/call` the same failure is an MCP error result instead
(methods/mcp.py). The OpenRPC document (`rpc.discover`), docs/reference.md, the MCP output schemas and
the client libraries' tables are all derived from, or tested against, `KINDS`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dsh_search.engine import failures
from dsh_search.engine.failures import ToolError

REQUEST_CANCELLED = -32800  # $/cancelRequest's answer (LSP's RequestCancelled)
RESOURCE_NOT_FOUND = -32002  # MCP 2025-11-25 and older (2026-07-28 answers -32602 instead)


class RpcError(Exception):
    """A JSON-RPC error of the protocol's own, not a tool's failure: answered with exactly this code,
    message and data (MCP's resource errors, a cursor never handed out)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Kind(NamedTuple):
    name: str  # data.code
    code: int  # error.code
    when: str


KINDS: tuple[Kind, ...] = (
    Kind(
        failures.INVALID_ARGS,
        -32602,
        "argument errors: schema or value checks, confinement, an unknown terminal session",
    ),
    Kind(failures.SEARCH_INVALID_PATTERN, 1001, "ripgrep rejected the regex or glob"),
    Kind(failures.SEARCH_FAILED, 1002, "launch failure, inaccessible target, signal kill, malformed --json output"),
    Kind(failures.SEARCH_RAW_OUTPUT_OVERFLOW, 1003, "raw ripgrep output over rawOutputMaxBytes (or its memory bound)"),
    Kind(failures.SEARCH_ABORTED, 1004, "timeout, cancellation, shutdown (-32800 instead for $/cancelRequest)"),
)
KIND_CODES = {kind.name: kind.code for kind in KINDS}


def openrpc_errors(*names: str, cancellable: bool = False) -> tuple[dict[str, Any], ...]:
    """OpenRPC error objects for the kinds a method can answer (and -32800 when it can be cancelled)."""
    found = [{"code": KIND_CODES[name], "message": name} for name in names]
    if cancellable:
        found.append({"code": REQUEST_CANCELLED, "message": "Request cancelled"})
    return tuple(found)


def error_data(err: ToolError) -> dict[str, Any]:
    """`data` of the JSON-RPC error (and `structuredContent` of the MCP error result) for a failure."""
    return {"code": err.kind, "text": err.text}


def error_code(err: ToolError) -> int:
    """The JSON-RPC `error.code` of a failure."""
    return KIND_CODES[err.kind]
