"""How a tool fails: a kind and a message, both for the model.

The kind is what hosts see as `data.code` (`INVALID_ARGS`, `SEARCH_…`), the message is upstream's text,
and `text` — `Error: <message>` — is exactly what a model is shown. The engine raises `ToolError` and
never decides how it travels: the method faces turn each kind into its JSON-RPC error code
(methods/errors.py) or into an MCP error result, so this module is the list of kinds and nothing more.
"""

from __future__ import annotations

INVALID_ARGS = "INVALID_ARGS"
SEARCH_INVALID_PATTERN = "SEARCH_INVALID_PATTERN"
SEARCH_FAILED = "SEARCH_FAILED"
SEARCH_RAW_OUTPUT_OVERFLOW = "SEARCH_RAW_OUTPUT_OVERFLOW"
SEARCH_ABORTED = "SEARCH_ABORTED"

# Every kind, in the order the error table lists them.
KIND_NAMES = (INVALID_ARGS, SEARCH_INVALID_PATTERN, SEARCH_FAILED, SEARCH_RAW_OUTPUT_OVERFLOW, SEARCH_ABORTED)


class ToolError(Exception):
    """A failure to show the model: `kind` is one of KIND_NAMES, `message` upstream's words."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    @property
    def text(self) -> str:
        return f"Error: {self.message}"


def invalid_args(message: str) -> ToolError:
    return ToolError(INVALID_ARGS, message)
