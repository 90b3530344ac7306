"""Spill artifacts as MCP resources: the `resource_link` a capped result carries, and `resources/read`,
`resources/templates/list` and `resources/list` that serve it.

A capped glob or grep saves its complete result in the spill store and says where in its text (the
footer, upstream's words, for clients that ignore links); through `tools/call` it also carries a
`resource_link` to the same artifact (`link`). Its URI names the artifact by its place in the store:

    dsh-search://spill/<session-dir>/<artifact>                    the whole artifact
    dsh-search://spill/<session-dir>/<artifact>?offset=N&limit=M   lines N..N+M-1 (1-based), as spill/read

MCP has no partial read, so the page is part of the URI (`TEMPLATE`, RFC 6570); each page's content
says where it lies (`_meta["dsh-search/lines"]`, and the next page's URI). Reads are confined exactly as
spill/read's: the URI must name an artifact directly inside a session directory of the spill root, real
path included (store/spill.py `resolve_locator`). A URI that is not one of these is -32602 in both eras;
one that names no artifact is "Resource not found": -32002 for a legacy client, -32602 for a modern one,
as each revision says. `resources/list` lists nothing: the artifacts are the results of searches, reached
through their links (MCP: links need not be listed).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, NamedTuple

from dsh_search import texts
from dsh_search.engine import files
from dsh_search.engine.failures import INVALID_ARGS, ToolError, invalid_args
from dsh_search.methods import era
from dsh_search.methods.context import Context
from dsh_search.methods.errors import RESOURCE_NOT_FOUND, RpcError, openrpc_errors
from dsh_search.methods.mcp import LIST_PARAMS, no_cursor
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec
from dsh_search.methods.session import modern_request
from dsh_search.store.spill import SpillReadError
from dsh_search.transport import jsonrpc

SCHEME = "dsh-search"
AUTHORITY = "spill"
PREFIX = f"{SCHEME}://{AUTHORITY}/"
MIME_TYPE = "text/plain"
LINES_KEY = "dsh-search/lines"  # a page's place in the artifact, in its content's _meta

TEMPLATE: dict[str, Any] = {
    "uriTemplate": PREFIX + "{session}/{artifact}{?offset,limit}",
    "name": "spill-artifact",
    "title": texts.SPILL_RESOURCE_TITLE,
    "description": texts.SPILL_RESOURCE_DESCRIPTION,
    "mimeType": MIME_TYPE,
}

_SESSION = re.compile(r"^session-[0-9a-f]{12}$")
_ARTIFACT = re.compile(r"^[0-9a-f]{12}-[^/\0]+$")
_DIGITS = re.compile(r"^[0-9]+$")


def uri_of(spill_root: str, locator: str) -> str | None:
    """The URI of the artifact at `locator` (None when it is not where the store puts artifacts)."""
    import urllib.parse  # here, not at the top: a capped result needs it, not the start (~2 ms)

    relative = os.path.relpath(locator, os.path.abspath(spill_root))
    session, _, artifact = relative.partition("/")
    if not _SESSION.match(session) or not _ARTIFACT.match(artifact):
        return None
    return PREFIX + urllib.parse.quote(session) + "/" + urllib.parse.quote(artifact)


def link(ctx: Context, value: dict[str, Any]) -> dict[str, Any] | None:
    """The `resource_link` content of a capped result's spill artifact, for a client that can take one:
    a modern request, or a legacy one at 2025-06-18 or later (or a caller that never said)."""
    spill = value.get("spill")
    if not isinstance(spill, dict):
        return None
    version = ctx.session.protocol_version
    if modern_request() is None and version is not None and version not in era.RESOURCE_LINK_VERSIONS:
        return None
    uri = uri_of(ctx.spill.root, spill["locator"])
    if uri is None:
        return None
    return {
        "type": "resource_link",
        "uri": uri,
        "name": os.path.basename(spill["locator"]),
        "mimeType": MIME_TYPE,
        "size": spill["bytes"],
    }


class Page(NamedTuple):
    """What a resource URI asks for: an artifact's locator, and the lines (None: all of them)."""

    locator: str
    offset: int | None
    limit: int | None


def parse(spill_root: str, uri: str) -> Page:
    """The artifact and lines a URI of ours names; raises INVALID_ARGS with the reason for anything else."""
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        raise invalid_args("not a URI") from None
    if parts.scheme != SCHEME or parts.netloc != AUTHORITY:
        raise invalid_args(f"not a {PREFIX} URI")
    if parts.fragment:
        raise invalid_args("a resource URI has no fragment")
    segments = parts.path.split("/")
    if len(segments) != 3 or segments[0]:
        raise invalid_args(f"the path must be /<session directory>/<artifact>, as {PREFIX} links give it")
    session, artifact = (urllib.parse.unquote(s) for s in segments[1:])
    if not _SESSION.match(session) or not _ARTIFACT.match(artifact):
        raise invalid_args("the path names no spill artifact")
    numbers: dict[str, int] = {}
    try:
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True) if parts.query else []
    except ValueError:
        raise invalid_args("the query must be offset=N&limit=M") from None
    for name, raw in query:
        if name not in ("offset", "limit") or name in numbers:
            raise invalid_args("the query may hold offset and limit, once each")
        if not _DIGITS.match(raw) or int(raw) < 1:
            raise invalid_args(f"{name} must be a positive integer")
        numbers[name] = int(raw)
    locator = os.path.join(os.path.abspath(spill_root), session, artifact)
    return Page(locator, numbers.get("offset"), numbers.get("limit"))


def page_uri(uri: str, offset: int, limit: int) -> str:
    base = uri.split("?", 1)[0]
    return f"{base}?offset={offset}&limit={limit}"


# --- the methods -------------------------------------------------------------------------------------------


def _not_found(uri: str) -> RpcError:
    """MCP's "resource not found": -32002 in 2025-11-25 and older, -32602 in 2026-07-28 (which forbids -32002)."""
    code = jsonrpc.INVALID_PARAMS if modern_request() is not None else RESOURCE_NOT_FOUND
    return RpcError(code, "Resource not found", {"uri": uri})


async def read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    uri: str = params["uri"]
    try:
        page = parse(ctx.spill.root, uri)
    except ToolError as err:
        raise RpcError(jsonrpc.INVALID_PARAMS, f"Invalid resource URI: {err.message}", {"uri": uri}) from None
    offset = page.offset or 1
    limit = page.limit or sys.maxsize
    try:
        lines = await files.detached(ctx.spill.read, page.locator, offset, limit)
    except SpillReadError:
        raise _not_found(uri) from None
    except OSError:  # removed by retention between the check and the read
        raise _not_found(uri) from None
    where = {key: lines[key] for key in ("startLine", "endLine", "totalLines", "nextOffset")}
    if page.limit is not None and lines["nextOffset"] is not None:
        where["nextUri"] = page_uri(uri, lines["nextOffset"], page.limit)
    content = {"uri": uri, "mimeType": MIME_TYPE, "text": lines["text"], "_meta": {LINES_KEY: where}}
    return {"contents": [content]}


async def templates(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    no_cursor(params)
    return {"resourceTemplates": [TEMPLATE]}


async def listing(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    no_cursor(params)
    return {"resources": []}


SPECS = (
    MethodSpec(
        "resources/list",
        summary="MCP: the listed resources — none: spill artifacts are reached through the resource_link of "
        "the capped result that saved them.",
        handler=listing,
        params=LIST_PARAMS,
        result=object_schema({"resources": {"type": "array"}}, ["resources"]),
        errors=openrpc_errors(INVALID_ARGS),
    ),
    MethodSpec(
        "resources/templates/list",
        summary="MCP: the URI template of spill artifacts, dsh-search://spill/{session}/{artifact}{?offset,limit}.",
        handler=templates,
        params=LIST_PARAMS,
        result=object_schema({"resourceTemplates": {"type": "array"}}, ["resourceTemplates"]),
        errors=openrpc_errors(INVALID_ARGS),
    ),
    MethodSpec(
        "resources/read",
        summary="MCP: a spill artifact named by its dsh-search:// URI, whole or the lines its offset and limit "
        "ask for; confined to the spill store as spill/read.",
        handler=read,
        params=object_schema({"uri": {"type": "string"}, "_meta": {"type": "object"}}, ["uri"]),
        result=object_schema({"contents": {"type": "array"}}, ["contents"]),
        errors=openrpc_errors(INVALID_ARGS),  # MCP's own codes (-32002, -32602) are in docs/reference.md
    ),
)
