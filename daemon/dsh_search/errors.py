"""Failures a method reports to its caller, and their JSON-RPC shape (SPEC §2's table).

A method raises `ToolError(code, message)`; the server turns it into a JSON-RPC error whose `data` is
`{"code": <code>, "text": "Error: <message>"}` — `text` is exactly what a model should be shown.
"""

from __future__ import annotations

from typing import Any

INVALID_ARGS = "INVALID_ARGS"
SEARCH_INVALID_PATTERN = "SEARCH_INVALID_PATTERN"
SEARCH_FAILED = "SEARCH_FAILED"
SEARCH_RAW_OUTPUT_OVERFLOW = "SEARCH_RAW_OUTPUT_OVERFLOW"
SEARCH_ABORTED = "SEARCH_ABORTED"

JSONRPC_CODES = {
    INVALID_ARGS: -32602,
    SEARCH_INVALID_PATTERN: 1001,
    SEARCH_FAILED: 1002,
    SEARCH_RAW_OUTPUT_OVERFLOW: 1003,
    SEARCH_ABORTED: 1004,
}


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
        return JSONRPC_CODES[self.code]


def invalid_args(message: str) -> ToolError:
    return ToolError(INVALID_ARGS, message)
