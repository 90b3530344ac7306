"""The JSON-RPC 2.0 envelope, sans IO: one framed message in, validated calls or an envelope error out.

A message can also carry the peer's *responses* to requests the daemon sent it (MCP's `roots/list`):
an object with `jsonrpc`, an `id`, no `method` and exactly one of `result` and `error` is a `Reply`,
routed to whoever sent the request and never answered itself.

`jsonrpcserver` does method lookup, argument binding and result/error mapping, but on its own it does
not conform (it answers a whole batch with one error when any element is invalid, and rejects
`"params": null`). So the envelope is checked here, element by element, and only well-formed calls
reach the dispatcher. JSON goes through orjson.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800


class _NoId:
    def __repr__(self) -> str:
        return "NO_ID"


NO_ID: Any = _NoId()  # a notification's id


class Call(NamedTuple):
    method: str
    params: dict[str, Any] | list[Any] | None  # None: omitted or null
    id: Any  # NO_ID for a notification; otherwise str, int, float or None

    @property
    def is_notification(self) -> bool:
        return self.id is NO_ID


class Invalid(NamedTuple):
    """An element that is not a valid request; always answered -32600."""

    id: Any  # the id when it could be read, else None
    reason: str


class Reply(NamedTuple):
    """A response from the peer to a request the daemon sent; `error` is None on success."""

    id: Any
    result: Any
    error: dict[str, Any] | None


class Incoming(NamedTuple):
    items: list[Call | Invalid | Reply]
    is_batch: bool


class EnvelopeError(NamedTuple):
    """The whole message is answered with one error and id null."""

    code: int
    message: str


def valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))


def _reply(obj: dict[str, Any]) -> Reply | None:
    """`obj` as a response to one of our requests: no `method`, and a `result` or an `error`. Such an
    object is never answered (a response to a response could only bounce between the two peers);
    one whose id is not ours is dropped."""
    if "method" in obj or not ("result" in obj or "error" in obj):
        return None
    id_ = obj.get("id")
    if not valid_id(id_):
        id_ = None
    if "error" in obj:
        error = obj["error"]
        if not isinstance(error, dict):
            error = {"code": INVALID_REQUEST, "message": "malformed error object"}
        return Reply(id_, None, error)
    return Reply(id_, obj["result"], None)


def _element(obj: Any) -> Call | Invalid | Reply:
    if not isinstance(obj, dict):
        return Invalid(None, "a request must be a JSON object")
    reply = _reply(obj)
    if reply is not None:
        return reply
    has_id = "id" in obj
    raw_id = obj.get("id")
    if has_id and not valid_id(raw_id):
        return Invalid(None, "id must be a string, a number or null")
    echo = raw_id if has_id else None
    if obj.get("jsonrpc") != "2.0":
        return Invalid(echo, 'jsonrpc must be exactly "2.0"')
    method = obj.get("method")
    if not isinstance(method, str):
        return Invalid(echo, "method must be a string")
    params = obj.get("params")
    if params is not None and not isinstance(params, dict | list):
        return Invalid(echo, "params must be an object or an array")
    return Call(method, params, raw_id if has_id else NO_ID)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(body: bytes) -> Incoming | EnvelopeError:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        # orjson refuses lone surrogate escapes ("\ud83d"), which JSON allows and which a host that
        # cuts a UTF-16 string between two chunks produces; the stdlib parser accepts them.
        import json  # the stdlib's parser only for what orjson refuses: not imported at every start

        try:
            value = json.loads(body, parse_constant=_not_json)
        except (ValueError, RecursionError):
            return EnvelopeError(PARSE_ERROR, f"Parse error: {exc}")
    if isinstance(value, list):
        if not value:
            return EnvelopeError(INVALID_REQUEST, "Invalid request: empty batch")
        return Incoming([_element(v) for v in value], is_batch=True)
    return Incoming([_element(value)], is_batch=False)


def error(id_: Any, code: int, message: str, data: Any = NO_ID) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not NO_ID:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": None if id_ is NO_ID else id_, "error": err}


def result(id_: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def dumps(message: Any) -> bytes:
    try:
        return orjson.dumps(message)
    except TypeError:
        # orjson refuses integers beyond 64 bits (an id a client may echo) and lone surrogates; the
        # stdlib writes both (ASCII-escaped, so the bytes stay valid UTF-8).
        import json

        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode()


def id_key(id_: Any) -> tuple[str, Any]:
    """A dict key for a request id that keeps "1" and 1 apart."""
    return (type(id_).__name__, id_)
