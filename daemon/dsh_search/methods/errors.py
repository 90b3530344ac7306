"""Failures a method reports to its caller, and their JSON-RPC shape: the one table of error kinds.

A method raises `ToolError(kind, message)`; it is answered as a JSON-RPC error whose `code` is the
kind's number and whose `data` is `{"code": <kind>, "text": "Error: <message>"}` — `text` is exactly
what a model should be shown. The OpenRPC document, docs/reference.md and the MCP error results are
all derived from `KINDS`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

INVALID_ARGS = "INVALID_ARGS"
SEARCH_INVALID_PATTERN = "SEARCH_INVALID_PATTERN"
SEARCH_FAILED = "SEARCH_FAILED"
SEARCH_RAW_OUTPUT_OVERFLOW = "SEARCH_RAW_OUTPUT_OVERFLOW"
SEARCH_ABORTED = "SEARCH_ABORTED"

REQUEST_CANCELLED = -32800  # $/cancelRequest's answer (LSP's RequestCancelled)


class Kind(NamedTuple):
    name: str  # data.code
    code: int  # error.code
    when: str


KINDS: tuple[Kind, ...] = (
    Kind(INVALID_ARGS, -32602, "argument errors: schema or value checks, confinement, an unknown terminal session"),
    Kind(SEARCH_INVALID_PATTERN, 1001, "ripgrep rejected the regex or glob"),
    Kind(SEARCH_FAILED, 1002, "launch failure, inaccessible target, signal kill, malformed --json output"),
    Kind(SEARCH_RAW_OUTPUT_OVERFLOW, 1003, "raw ripgrep output over rawOutputMaxBytes (or its memory bound)"),
    Kind(SEARCH_ABORTED, 1004, "timeout, cancellation, shutdown (-32800 instead for $/cancelRequest)"),
)
KIND_CODES = {kind.name: kind.code for kind in KINDS}


def openrpc_errors(*names: str, cancellable: bool = False) -> tuple[dict[str, Any], ...]:
    """OpenRPC error objects for the kinds a method can answer (and -32800 when it can be cancelled)."""
    found = [{"code": KIND_CODES[name], "message": name} for name in names]
    if cancellable:
        found.append({"code": REQUEST_CANCELLED, "message": "Request cancelled"})
    return tuple(found)


class ToolError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def text(self) -> str:
        return f"Error: {self.message}"

    def data(self) -> dict[str, Any]:
        return {"code": self.code, "text": self.text}

    @property
    def jsonrpc_code(self) -> int:
        return KIND_CODES[self.code]


def invalid_args(message: str) -> ToolError:
    return ToolError(INVALID_ARGS, message)
