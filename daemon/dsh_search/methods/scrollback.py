"""Terminal scrollback methods: scrollback/append, scrollback/read, scrollback/close (docs/terminal.md),
and what terminal_search's declaration (methods/tools.py) shares with them: the session lookup, the
integer params, and whether the tool is listed yet.

The host streams each terminal's output here; the model searches it with `terminal_search`, whose
offsets are terminal_read's. The buffers live in `ctx.terminals` (store/scrollback.py). Every handler
reads or changes a buffer before its first `await`, so appends apply in the order they arrived and a
search sees the buffer as it was when the request arrived.
"""

from __future__ import annotations

import binascii
from typing import Any

from dsh_search import texts
from dsh_search.engine.failures import INVALID_ARGS, invalid_args
from dsh_search.methods.context import Context
from dsh_search.methods.errors import openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec
from dsh_search.methods.subscriptions import notify_tools_changed
from dsh_search.store import scrollback
from dsh_search.store.scrollback import Snapshot

MAX_SAFE_INTEGER = 2**53 - 1

SESSION_PARAM = {"type": "string", "description": texts.TERMINAL_SESSION_DESCRIPTION}
_INVALID_ARGS = openrpc_errors(INVALID_ARGS)


def _session_id(params: dict[str, Any]) -> str:
    session_id: str = params["sessionId"]
    if not session_id:
        raise invalid_args(texts.SESSION_ID_EMPTY)
    return session_id


def snapshot_of(ctx: Context, params: dict[str, Any]) -> Snapshot:
    session_id = _session_id(params)
    snap = ctx.terminals.snapshot(session_id)
    if snap is None:
        if ctx.terminals.was_evicted(session_id):
            raise invalid_args(texts.evicted_terminal_session(session_id, ctx.config.scrollback_total_max_bytes))
        raise invalid_args(texts.unknown_terminal_session(session_id))
    return snap


def integer_param(params: dict[str, Any], name: str, default: int, minimum: int) -> int:
    value: int = params.get(name, default)
    if not minimum <= value <= MAX_SAFE_INTEGER:
        message = texts.positive_safe_integer if minimum else texts.non_negative_safe_integer
        raise invalid_args(message(name))
    return value


def terminal_search_listed(ctx: Context) -> bool:
    """Whether MCP's tools/list shows terminal_search (`terminalSearch`): always, never, or (auto) once a
    scrollback producer exists — the host has appended output — since before that every call of it can
    only answer "unknown terminal session"."""
    mode = ctx.config.terminal_search
    return mode == "always" or (mode == "auto" and ctx.session.terminal_search_announced)


def announce_terminal_search(ctx: Context) -> None:
    """The first append makes terminal_search a tool (auto mode): MCP clients are told the list changed —
    a legacy session at once, a modern client on the subscriptions/listen streams that asked to hear it."""
    session = ctx.session
    if session.terminal_search_announced:
        return
    session.terminal_search_announced = True
    if ctx.config.terminal_search != "auto":
        return
    if session.mcp:
        ctx.notify("notifications/tools/list_changed")
    notify_tools_changed(ctx)


# --- scrollback/append ----------------------------------------------------------------------------------


async def append(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    session_id = _session_id(params)
    text, encoded = params.get("data"), params.get("dataBase64")
    if (text is None) == (encoded is None):
        raise invalid_args(texts.CHUNK_EXACTLY_ONE)
    raw = b""
    if encoded is not None:
        try:
            raw = binascii.a2b_base64(encoded, strict_mode=True)
        except (binascii.Error, ValueError):
            raise invalid_args(texts.CHUNK_BAD_BASE64) from None
    if text is not None:
        buffer = ctx.terminals.append_text(session_id, text)
    else:
        buffer = ctx.terminals.append_bytes(session_id, raw)
    announce_terminal_search(ctx)
    return {"totalLines": buffer.total_lines, "truncated": buffer.truncated}


# --- scrollback/read ------------------------------------------------------------------------------------


async def read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    offset = integer_param(params, "offset", 0, 0)
    count = integer_param(params, "count", 500, 1)
    return scrollback.read_page(snapshot_of(ctx, params), offset, count)


# --- scrollback/close -----------------------------------------------------------------------------------


async def close(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {"closed": ctx.terminals.close(_session_id(params))}


SPECS = (
    MethodSpec(
        "scrollback/append",
        summary="Append a chunk of a terminal's output (sanitised, retained); a request answers the new size.",
        params=object_schema(
            {
                "sessionId": {"type": "string", "description": "The terminal session; created on first append."},
                "data": {"type": "string", "description": "Output as text (exactly one of data and dataBase64)."},
                "dataBase64": {"type": "string", "description": "Output as raw PTY bytes, base64-encoded."},
            },
            ["sessionId"],
        ),
        result=object_schema(
            {"totalLines": {"type": "integer"}, "truncated": {"type": "boolean"}}, ["totalLines", "truncated"]
        ),
        errors=_INVALID_ARGS,
        wellformed=False,  # session ids are keys, compared as sent; see _pattern for patterns
        handler=append,
    ),
    MethodSpec(
        "scrollback/read",
        summary="A page of retained output in terminal_read's coordinates (offset 0 = the newest line).",
        params=object_schema(
            {
                "sessionId": SESSION_PARAM,
                "offset": {"type": "integer", "description": "Newest-relative line offset (default 0)."},
                "count": {"type": "integer", "description": "Number of lines (default 500)."},
            },
            ["sessionId"],
        ),
        result=object_schema(
            {
                "text": {"type": "string"},
                "lineBegin": {"type": "integer"},
                "lineEnd": {"type": "integer"},
                "totalLines": {"type": "integer"},
                "truncated": {"type": "boolean"},
            },
            ["text", "lineBegin", "lineEnd", "totalLines", "truncated"],
        ),
        errors=_INVALID_ARGS,
        wellformed=False,  # session ids are keys, compared as sent; see _pattern for patterns
        handler=read,
    ),
    MethodSpec(
        "scrollback/close",
        summary="Free a terminal session's buffer; closing an unknown session is not an error ({closed: false}).",
        params=object_schema({"sessionId": SESSION_PARAM}, ["sessionId"]),
        result=object_schema({"closed": {"type": "boolean"}}, ["closed"]),
        errors=_INVALID_ARGS,
        wellformed=False,  # session ids are keys, compared as sent; see _pattern for patterns
        handler=close,
    ),
)
