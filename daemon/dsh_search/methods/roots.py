"""The client's roots as the workspace (MCP `roots`), when the daemon was given no `--workdir`.

Flow: `initialize` records whether the client declared the `roots` capability; once
`notifications/initialized` arrives the daemon asks `roots/list` (a request from the server to the
client), and asks again on every `notifications/roots/list_changed` (a change that arrives while a
request is out is fetched again right after it). Only `file://` roots on this host count
(session.root_from_uri). With roots known, the first root is the default `cwd` of a search, a
relative `cwd` or `path` resolves against it, and a search outside every root is refused as one outside
`allowedRoots` is (`scope`, checked by the engine's `scope.locate`).

No deadlock, no unbounded wait: each `roots/list` has a timeout (`ROOTS_TIMEOUT_S`); a search that
arrives while one is out waits for it at most that long (`settled`), then uses what is known. A client
that fails to answer, answers an error, or lists no usable root leaves the workspace as if it had no
roots: the daemon's own directory, which is refused when it is `/` (texts.NO_WORKSPACE).

A modern (2026-07-28) request is stateless: the server sends no requests of its own, and no roots outlive
the request that learnt them. When a `tools/call` of a tool that searches the workspace declares the
`roots` capability in its own envelope (and no --workdir was given), it is answered with an
`input_required` result asking `roots/list` (`modern_roots`); the client sends the call again with its
roots in `inputResponses`, and those roots are that call's workspace and confinement, as above
(`session.current`). A modern request without the capability works in the daemon's own directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

from dsh_search.engine.failures import invalid_args
from dsh_search.engine.scope import Scope
from dsh_search.methods import era
from dsh_search.methods.context import Context
from dsh_search.methods.registry import MethodSpec
from dsh_search.methods.session import Root, current, modern_request, roots_from_result
from dsh_search.transport.outgoing import PeerError

log = logging.getLogger("dsh_search.roots")

ROOTS_TIMEOUT_S = 5.0


def applies(ctx: Context) -> bool:
    """Whether the client's roots make the workspace: it offers them and no --workdir was given."""
    return ctx.session.client_roots and not ctx.workdir_given


def workspace_roots(ctx: Context) -> tuple[Root, ...]:
    """The client's roots in effect for a search now (empty: none, the daemon's directory rules): a
    modern request's own, else the session's."""
    request = modern_request()
    if request is not None:
        return () if ctx.workdir_given else request.roots or ()
    if not applies(ctx):
        return ()
    return ctx.session.roots or ()


# The key of the roots/list an input_required result asks for, and what it asks.
ROOTS_INPUT = "roots"
_LIST_ROOTS = {"method": "roots/list"}


def modern_roots(ctx: Context, envelope: era.Envelope, params: Any) -> tuple[Root, ...] | dict[str, Any] | None:
    """For a modern tools/call of a tool that searches the workspace: the roots its client answered
    with (in `inputResponses`), an input_required result asking for them, or None when roots do not
    apply (--workdir given, or the request did not declare the `roots` capability). Raises
    INVALID_ARGS (-32602) for `inputResponses` that are not a map of answers, or a roots answer that
    is not a roots/list result."""
    if ctx.workdir_given or not isinstance(envelope.capabilities.get("roots"), dict):
        return None
    responses = params.get("inputResponses") if isinstance(params, dict) else None
    if responses is None:
        return era.input_required({ROOTS_INPUT: _LIST_ROOTS})
    if not isinstance(responses, dict):
        raise invalid_args("inputResponses must be an object")
    answer = responses.get(ROOTS_INPUT)
    if answer is None:  # answered something else: ask again (MRTR: re-ask rather than fail)
        return era.input_required({ROOTS_INPUT: _LIST_ROOTS})
    if not isinstance(answer, dict) or not isinstance(answer.get("roots"), list):
        raise invalid_args(f"inputResponses.{ROOTS_INPUT} must be a roots/list result")
    found = roots_from_result(answer)
    _missing(found)
    if not found:
        log.warning(
            "roots/list: the client listed no usable root (%s; only file:// URIs of this machine count); "
            "the search uses %s",
            _listed(answer),
            "the server's own directory" if ctx.workspace != "/" else "no workspace: relative searches are refused",
        )
    return found


def scope(ctx: Context) -> Scope:
    """Where a search may run now: the workspace is --workdir; without it, the client's first root when
    it shared roots, else the daemon's own directory — which is only a fallback when it is `/` (a search
    there needs an absolute cwd or path). A search is confined to the allowed roots and, when known, to
    the client's roots."""
    client_roots = workspace_roots(ctx)
    workspace = client_roots[0].path if client_roots else ctx.workspace
    fallback = not client_roots and not ctx.workdir_given and workspace == "/"
    shared: tuple[str, ...] = ()
    request = current.get()
    if request is not None and request.mcp_tool and ctx.config.mcp_confine:
        # What the model names stays inside what the client shared: its roots, else the workspace (none
        # to confine to when that is only the fallback `/`); locate adds a cwd the host passed.
        if client_roots:
            shared = tuple(r.real for r in client_roots)
            client_roots = ()  # confined (and refused) as shared, naming them
        elif not fallback:
            shared = (os.path.realpath(workspace),)
    return Scope(
        workspace=workspace,
        confinements=(ctx.config.allowed_roots, tuple(r.real for r in client_roots)),
        workspace_is_fallback=fallback,
        shared=shared,
    )


def refresh(ctx: Context) -> None:
    """Ask the client for its roots (again); coalesced with a request already out."""
    session = ctx.session
    if not applies(ctx) or ctx.peer is None:
        return
    if session.roots_fetch is not None and not session.roots_fetch.done():
        session.roots_stale = True
        return
    session.roots_fetch = asyncio.ensure_future(_fetch(ctx))


async def _fetch(ctx: Context) -> None:
    session = ctx.session
    assert ctx.peer is not None
    while True:
        session.roots_stale = False
        try:
            result = await ctx.peer.ask("roots/list", None, ROOTS_TIMEOUT_S)
        except (PeerError, TimeoutError) as exc:
            what = "did not answer in time" if isinstance(exc, TimeoutError) else f"answered {exc}"
            log.warning("roots/list: the client %s; keeping the roots known so far", what)
            if session.roots is None:
                session.roots = ()
        else:
            session.roots = roots_from_result(result)
            if session.roots:
                log.info("client roots: %s", ", ".join(r.path for r in session.roots))
                _missing(session.roots)
            else:
                log.warning(
                    "roots/list: the client listed no usable root (%s; only file:// URIs of this machine count); "
                    "searches use %s",
                    _listed(result),
                    "the server's own directory"
                    if ctx.workspace != "/"
                    else "no workspace: relative searches are refused",
                )
        if not session.roots_stale:
            return


def _missing(found: tuple[Root, ...]) -> None:
    """Warn of each root that is not a directory here (a host's path that does not exist where the daemon
    runs, e.g. in a container): searches in it fail with an error that names it."""
    for root in found:
        if not os.path.isdir(root.real):
            log.warning("roots/list: the client's root %s is not a directory where dsh-search runs", root.path)


def _listed(result: Any) -> str:
    """What a roots/list answer listed, for a log line: its URIs (the first three), or that it was empty."""
    items = result.get("roots") if isinstance(result, dict) else None
    if not isinstance(items, list) or not items:
        return "an empty list"
    uris = [repr(item.get("uri")) if isinstance(item, dict) else repr(item) for item in items[:3]]
    return "listed: " + ", ".join(uris) + (", …" if len(items) > 3 else "")


async def settled(ctx: Context) -> None:
    """Wait (at most ROOTS_TIMEOUT_S) for a `roots/list` that is out, so a search uses its answer."""
    fetch = ctx.session.roots_fetch
    if fetch is None or fetch.done() or not applies(ctx):
        return
    with contextlib.suppress(Exception):  # a timeout included: go on with what is known
        await asyncio.wait_for(asyncio.shield(fetch), ROOTS_TIMEOUT_S)


async def initialized(ctx: Context, params: Any) -> None:
    ctx.session.initialized = True
    refresh(ctx)


async def list_changed(ctx: Context, params: Any) -> None:
    refresh(ctx)


SPECS = (
    MethodSpec(
        "notifications/initialized",
        summary="MCP: the client is ready. A client that declared `roots` is then asked for them (`roots/list`) "
        "unless --workdir was given.",
        handler=initialized,
        result={"type": "null"},
        check_params=False,
    ),
    MethodSpec(
        "notifications/roots/list_changed",
        summary="MCP: the client's roots changed; they are fetched again (`roots/list`).",
        handler=list_changed,
        result={"type": "null"},
        check_params=False,
    ),
)
