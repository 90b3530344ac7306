"""Terminal scrollback methods: scrollback/append, scrollback/read, scrollback/close, terminal_search (SPEC §8).

The host streams each terminal's output here; the model searches it with `terminal_search`, whose
offsets are terminal_read's. The buffers live in `app.terminals` (see scrollback.py). A literal search
is a substring scan in the daemon; a regex search (`regex: true`) runs the ripgrep sidecar over the
retained text on stdin, so a model's pattern is only ever matched by ripgrep's linear-time engine,
within timeoutMs and a search slot like every rg run.

Every handler reads or changes a buffer before its first `await`, so appends apply in the order they
arrived and a search sees the buffer as it was when the request arrived.
"""

from __future__ import annotations

import binascii
from typing import Any

from . import mcp, scrollback, search, texts
from .app import App
from .errors import invalid_args
from .params import object_schema
from .registry import method
from .scrollback import Snapshot

TOOL = "terminal_search"
MAX_SAFE_INTEGER = 2**53 - 1

_SESSION = {"type": "string", "description": texts.TERMINAL_SESSION_DESCRIPTION}
_INVALID_ARGS = ((-32602, "INVALID_ARGS"),)


def _session_id(params: dict[str, Any]) -> str:
    session_id: str = params["sessionId"]
    if not session_id:
        raise invalid_args(texts.SESSION_ID_EMPTY)
    return session_id


def _snapshot(app: App, params: dict[str, Any]) -> Snapshot:
    session_id = _session_id(params)
    snap = app.terminals.snapshot(session_id)
    if snap is None:
        if app.terminals.was_evicted(session_id):
            raise invalid_args(texts.evicted_terminal_session(session_id, app.config.scrollback_total_max_bytes))
        raise invalid_args(texts.unknown_terminal_session(session_id))
    return snap


def _integer(params: dict[str, Any], name: str, default: int, minimum: int) -> int:
    value: int = params.get(name, default)
    if not minimum <= value <= MAX_SAFE_INTEGER:
        message = texts.positive_safe_integer if minimum else texts.non_negative_safe_integer
        raise invalid_args(message(name))
    return value


# --- scrollback/append ----------------------------------------------------------------------------------


@method(
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
)
async def append(app: App, params: dict[str, Any]) -> dict[str, Any]:
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
        buffer = app.terminals.append_text(session_id, text)
    else:
        buffer = app.terminals.append_bytes(session_id, raw)
    return {"totalLines": buffer.total_lines, "truncated": buffer.truncated}


# --- scrollback/read ------------------------------------------------------------------------------------


@method(
    "scrollback/read",
    summary="A page of retained output in terminal_read's coordinates (offset 0 = the newest line).",
    params=object_schema(
        {
            "sessionId": _SESSION,
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
)
async def read(app: App, params: dict[str, Any]) -> dict[str, Any]:
    offset = _integer(params, "offset", 0, 0)
    count = _integer(params, "count", 500, 1)
    return scrollback.read_page(_snapshot(app, params), offset, count)


# --- scrollback/close -----------------------------------------------------------------------------------


@method(
    "scrollback/close",
    summary="Free a terminal session's buffer; closing an unknown session is not an error ({closed: false}).",
    params=object_schema({"sessionId": _SESSION}, ["sessionId"]),
    result=object_schema({"closed": {"type": "boolean"}}, ["closed"]),
    errors=_INVALID_ARGS,
    wellformed=False,  # session ids are keys, compared as sent; see _pattern for patterns
)
async def close(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {"closed": app.terminals.close(_session_id(params))}


# --- terminal_search ------------------------------------------------------------------------------------

SEARCH_PARAMS: dict[str, Any] = object_schema(
    {
        "sessionId": _SESSION,
        "pattern": {"type": "string", "description": texts.TERMINAL_PATTERN_DESCRIPTION},
        "regex": {"type": "boolean", "description": texts.TERMINAL_REGEX_DESCRIPTION},
        "offset": {"type": "integer", "description": texts.TERMINAL_OFFSET_DESCRIPTION},
        "limit": {"type": "integer", "description": texts.TERMINAL_LIMIT_DESCRIPTION},
    },
    ["sessionId", "pattern"],
)


def _pattern(params: dict[str, Any], regex: bool) -> str:
    pattern: str = params["pattern"]
    if not pattern:
        raise invalid_args(texts.PATTERN_EMPTY)
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid_args(texts.PATTERN_NOT_UNICODE) from None
    if not regex and ("\n" in pattern or "\r" in pattern):
        raise invalid_args(texts.PATTERN_MULTILINE)  # no retained line can contain one
    if regex and "\0" in pattern:
        raise invalid_args(texts.PATTERN_NUL)  # an argv element cannot carry it
    return pattern


async def _regex_matches(app: App, snap: Snapshot, pattern: str) -> list[int]:
    # rg reads only stdin; "/" is a cwd that always exists.
    where = search.Where(cwd="/", path=None)
    args = scrollback.rg_args(pattern)
    result = await search.run_rg(app, TOOL, args, where, lambda _: False, stdin_data=scrollback.rg_stdin(snap))
    return [] if result.no_matches else scrollback.rg_matches(result.stdout, snap.total_lines)


@method(
    "terminal_search",
    summary="Find lines in a terminal's retained output (literal or ripgrep regex), newest first, "
    "with terminal_read offsets.",
    params=SEARCH_PARAMS,
    result=object_schema(
        {
            "text": {"type": "string"},
            "matches": {
                "type": "array",
                "items": object_schema({"offset": {"type": "integer"}, "line": {"type": "string"}}, ["offset", "line"]),
            },
            "matchCount": {"type": "integer"},
            "totalLines": {"type": "integer"},
            "truncated": {"type": "boolean"},
        },
        ["text", "matches", "matchCount", "totalLines", "truncated"],
    ),
    errors=search.SEARCH_ERRORS,
    wellformed=False,  # session ids are keys, compared as sent; see _pattern for patterns
    tool=TOOL,
)
async def terminal_search(app: App, params: dict[str, Any]) -> dict[str, Any]:
    regex: bool = params.get("regex", False)
    pattern = _pattern(params, regex)
    offset = _integer(params, "offset", 0, 0)
    limit = _integer(params, "limit", 100, 1)
    snap = _snapshot(app, params)
    if snap.total_lines == 0:
        indices: list[int] = []
    elif regex:
        indices = await search.bounded(app, TOOL, _regex_matches(app, snap, pattern))
    else:
        indices = scrollback.literal_matches(snap, pattern)
    page = scrollback.render_search(snap, indices, offset, limit, app.config.terminal_search_max_result_bytes)
    return page.as_json()


mcp.tool(
    mcp.Tool(
        name=TOOL,
        describe=lambda _config: texts.TERMINAL_SEARCH_DESCRIPTION,
        input_schema=lambda _config: SEARCH_PARAMS,
    )
)
