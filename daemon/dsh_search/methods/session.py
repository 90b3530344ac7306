"""What the daemon knows about the client it serves: whether it is an MCP client, the roots it shared,
the log level it asked for, and whether terminal_search has been announced — and, for the request being
served, what that request alone says (`Request`, `current`).

One daemon serves one client over stdin/stdout, so the session is one object per process
(`Context.session`). It is the legacy era's: `initialize` opens it. A modern (2026-07-28) request carries
everything it relies on itself — version, capabilities, its roots when it asked for them — and nothing of
it outlives the request: the dispatcher sets `current` in the request's own task, where the methods it
runs read it.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dsh_search.methods.era import Envelope


class Root(NamedTuple):
    path: str  # absolute, as the client's URI names it (the base of display paths)
    real: str  # its real path (symlinks resolved), what confinement compares against
    name: str | None = None


def root_from_uri(uri: Any) -> str | None:
    """The local directory a `file://` root URI names, or None for anything else.

    Only `file:` URIs on this host count (`file:///p` or `file://localhost/p`); the path is
    percent-decoded to bytes and then to a file name as the OS spells it (non-UTF-8 bytes survive as
    surrogate escapes), and normalised (`.`, `//`, a trailing `/`). A URI with a query, a fragment, a
    NUL or a relative path is not a root.
    """
    if not isinstance(uri, str):
        return None
    import urllib.parse  # here, not at the top: only MCP roots need it, and it costs ~2 ms of every start

    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme.lower() != "file" or parts.netloc.lower() not in ("", "localhost"):
        return None
    if parts.query or parts.fragment:
        return None
    path = os.fsdecode(urllib.parse.unquote_to_bytes(parts.path))
    if not path.startswith("/") or "\0" in path:
        return None
    return os.path.normpath(path) if path != "/" else "/"


def roots_from_result(result: Any) -> tuple[Root, ...]:
    """The usable roots of a `roots/list` result, in the client's order, duplicates dropped."""
    items = result.get("roots") if isinstance(result, dict) else None
    found: list[Root] = []
    seen: set[str] = set()
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        path = root_from_uri(item.get("uri"))
        if path is None or path in seen:
            continue
        seen.add(path)
        name = item.get("name")
        found.append(Root(path, os.path.realpath(path), name if isinstance(name, str) else None))
    return tuple(found)


class Listener(NamedTuple):
    """An open `subscriptions/listen` (methods/subscriptions.py): its id and what it asked to hear."""

    id: Any  # the listen request's id, the subscription's id
    tools: bool  # notifications/tools/list_changed


@dataclass(eq=False, repr=False)
class Session:
    mcp: bool = False  # `initialize` named a protocolVersion: an MCP client
    protocol_version: str | None = None  # the revision `initialize` answered with (None: no initialize)
    client_roots: bool = False  # the client declared the `roots` capability
    client_capabilities: dict[str, Any] | None = None  # what its `initialize` declared
    client_info: dict[str, Any] | None = None  # the clientInfo its `initialize` sent
    clients_noted: set[str] = field(default_factory=set)  # clients logged so far (methods/mcp.py note_client)
    initialized: bool = False  # `notifications/initialized` arrived
    roots: tuple[Root, ...] | None = None  # the client's roots as last fetched; None: never fetched
    roots_fetch: asyncio.Task[None] | None = None  # a `roots/list` in flight
    roots_stale: bool = False  # list_changed arrived while a fetch was in flight: fetch again
    log_level: str | None = None  # set by logging/setLevel
    terminal_search_announced: bool = False  # listed in tools/list (auto mode: after a scrollback exists)
    listeners: list[Listener] = field(default_factory=list)  # open subscriptions/listen streams
    # An MCP client has spoken (initialize with a protocolVersion, a 2026-07-28 request, or tools/call):
    # its session ends with its input, so at stdin EOF what is still running is not waited for
    # (EOF_WINDOW_MAX_S, docs/mcp.md "Closing").
    mcp_seen: bool = False

    def log_threshold(self) -> str | None:
        """The least severe level sent as `notifications/message`, or None: send none.

        An MCP client gets notices (the workspace index's build starting, ready, failed or paused) and worse
        until it sets a level of its own; a host that is not an MCP client gets log messages only once it
        asks for them with logging/setLevel."""
        if self.log_level is not None:
            return self.log_level
        return "notice" if self.mcp else None


# How long, at most, after an MCP client closed its input, the requests still running may take to finish
# before they are aborted: a search about to answer still answers (a session piped through `printf` gets
# its answers, SPEC §1), one that is not is stopped with its ripgrep. The window is min(graceMs, 1 s), so
# that the window and ripgrep's termination (SIGTERM, then SIGKILL after graceMs) stay inside the
# graceMs + 1 s a closing client is promised.
EOF_WINDOW_MAX_S = 1.0


def eof_window(session: Session, grace_ms: int) -> float | None:
    """At stdin EOF: the window the running requests get (None: each runs to its own end, the NDJSON pipe
    contract for hosts that are not MCP clients)."""
    return min(grace_ms / 1000, EOF_WINDOW_MAX_S) if session.mcp_seen else None


class Request(NamedTuple):
    """What the request being served says for itself."""

    id: Any  # its JSON-RPC id (a subscription's id)
    envelope: Envelope | None = None  # its modern envelope; None: a legacy MCP or native request
    roots: tuple[Root, ...] | None = None  # the roots its client answered a roots/list with (MRTR)
    mcp_tool: bool = False  # a tool run through tools/call: what the model names is confined (methods/roots.py)

    @property
    def modern(self) -> bool:
        return self.envelope is not None


# The request the running task serves: set by the dispatcher in the request's own task, so each request
# sees its own (a task copies the context it was created in; nothing set here leaks into another).
current: contextvars.ContextVar[Request | None] = contextvars.ContextVar("dsh_search_request", default=None)


def modern_request() -> Request | None:
    """The request being served when it is a modern one, else None."""
    request = current.get()
    return request if request is not None and request.modern else None
