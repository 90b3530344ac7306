"""`subscriptions/listen` (MCP 2026-07-28): the one way a modern client hears that the tool list changed.

The modern era has no unsolicited notifications: a client that wants to know of changes opens a stream
with `subscriptions/listen`, whose answer is only sent when the stream ends. The daemon honours
`toolsListChanged` — terminal_search joins the tools with the first scrollback (`terminalSearch: auto`)
— and nothing else (it has no prompts, and its resources neither change nor are listed). So:

- the stream is acknowledged at once (`notifications/subscriptions/acknowledged`, with the subset
  honoured), every notification on it carries `_meta["io.modelcontextprotocol/subscriptionId"]`, the
  listen request's id;
- the client ends it with `notifications/cancelled` (no answer, as for any cancelled request);
- the daemon ends it when its input ends (answered with the closing result, so the daemon still exits
  at once) or when it exits (the same answer, written best effort by the dispatcher).
"""

from __future__ import annotations

from typing import Any

from dsh_search.engine.failures import INVALID_ARGS, invalid_args
from dsh_search.methods import era
from dsh_search.methods.context import Context
from dsh_search.methods.errors import openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec
from dsh_search.methods.session import Listener, current

_FILTER_KEYS = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


async def listen(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    request = current.get()
    assert request is not None, "the dispatcher sets the request being served"
    wanted = params["notifications"]
    for key in _FILTER_KEYS:
        if key in wanted and not isinstance(wanted[key], bool):
            raise invalid_args(f"notifications.{key} must be a boolean")
    subscriptions = wanted.get("resourceSubscriptions")
    if subscriptions is not None and not (
        isinstance(subscriptions, list) and all(isinstance(uri, str) for uri in subscriptions)
    ):
        raise invalid_args("notifications.resourceSubscriptions must be a list of URIs")
    listener = Listener(request.id, wanted.get("toolsListChanged") is True)
    honoured = {"toolsListChanged": True} if listener.tools else {}
    ctx.notify(
        "notifications/subscriptions/acknowledged",
        {"_meta": {era.SUBSCRIPTION_ID: request.id}, "notifications": honoured},
    )
    ctx.session.listeners.append(listener)
    try:
        if ctx.control is not None:
            await ctx.control.input_closed()
    finally:
        ctx.session.listeners.remove(listener)
    return {"_meta": {era.SUBSCRIPTION_ID: request.id}}


def notify_tools_changed(ctx: Context) -> None:
    """The tool list changed: tell every stream that asked to hear it."""
    for listener in ctx.session.listeners:
        if listener.tools:
            ctx.notify("notifications/tools/list_changed", {"_meta": {era.SUBSCRIPTION_ID: listener.id}})


SPEC = MethodSpec(
    "subscriptions/listen",
    summary="MCP 2026-07-28: a stream of the notifications asked for (toolsListChanged is the one honoured), "
    "acknowledged at once and open until the client cancels it or the daemon's input ends.",
    handler=listen,
    params=object_schema(
        {"notifications": {"type": "object"}, "_meta": {"type": "object"}}, ["notifications", "_meta"]
    ),
    result=object_schema({"resultType": {"type": "string"}, "_meta": {"type": "object"}}, ["resultType", "_meta"]),
    errors=openrpc_errors(INVALID_ARGS, cancellable=True),
)
