"""Requests from the daemon to its client: replies are recognised, routed to the pending table and never
answered; ids cannot be taken for the client's; timeouts and shutdown end every wait. Also the MCP pieces
that need no process: root URIs, progress counting across chunk boundaries, tool output schemas."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema
import pytest

from dsh_search.engine.failures import invalid_args
from dsh_search.engine.run import SearchResult
from dsh_search.engine.searcher import StreamCounter
from dsh_search.methods import mcp
from dsh_search.methods.progress import tokens_of
from dsh_search.methods.session import root_from_uri, roots_from_result
from dsh_search.methods.tools import GLOB, GLOB_RESULT, GREP, GREP_RESULT
from dsh_search.methods.tools import TERMINAL_SEARCH as TERMINAL_SPEC
from dsh_search.transport import jsonrpc
from dsh_search.transport.outgoing import ID_PREFIX, OutgoingRequests, PeerError
from dsh_search.transport.requests import CancelReason, RequestTable


def parse(message: Any) -> jsonrpc.Incoming:
    parsed = jsonrpc.parse(jsonrpc.dumps(message))
    assert isinstance(parsed, jsonrpc.Incoming)
    return parsed


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            {"jsonrpc": "2.0", "id": "dsh-search:1", "result": {"roots": []}},
            jsonrpc.Reply("dsh-search:1", {"roots": []}, None),
        ),
        ({"jsonrpc": "2.0", "id": 3, "result": None}, jsonrpc.Reply(3, None, None)),
        (
            {"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "no"}},
            jsonrpc.Reply(4, None, {"code": -32601, "message": "no"}),
        ),
        (
            {"jsonrpc": "2.0", "id": None, "error": "odd"},
            jsonrpc.Reply(None, None, {"code": -32600, "message": "malformed error object"}),
        ),
    ],
)
def test_a_response_object_is_a_reply(message: Any, expected: jsonrpc.Reply) -> None:
    assert parse(message).items == [expected]


def test_objects_without_method_or_answer_stay_invalid() -> None:
    item = parse({"jsonrpc": "2.0", "id": 5}).items[0]
    assert isinstance(item, jsonrpc.Invalid) and item.id == 5
    call = parse({"jsonrpc": "2.0", "id": 6, "method": "ping", "result": 1}).items[0]
    assert isinstance(call, jsonrpc.Call)  # a method makes it a request, whatever else it carries


def test_replies_are_routed_and_never_answered() -> None:
    asyncio.run(_replies_are_routed())


async def _replies_are_routed() -> None:
    sent: list[Any] = []
    replies: list[jsonrpc.Reply] = []

    async def dispatch(call: jsonrpc.Call) -> dict[str, Any] | None:
        return None if call.is_notification else jsonrpc.result(call.id, "ok")

    def cancelled(call: jsonrpc.Call, reason: CancelReason) -> None:
        return None

    table = RequestTable(dispatch, cancelled, sent.append)
    table.on_reply = replies.append
    table.submit(parse({"jsonrpc": "2.0", "id": "x", "result": 1}))
    table.submit(
        parse([{"jsonrpc": "2.0", "id": "y", "result": 2}, {"jsonrpc": "2.0", "id": "z", "error": {"code": 1}}])
    )
    table.submit(parse([{"jsonrpc": "2.0", "id": "w", "result": 3}, {"jsonrpc": "2.0", "id": 1, "method": "ping"}]))
    await table.drained()
    await asyncio.sleep(0)
    assert [r.id for r in replies] == ["x", "y", "z", "w"]
    assert sent == [[{"jsonrpc": "2.0", "id": 1, "result": "ok"}]]  # only the request in the mixed batch


def test_outgoing_requests_resolve_fail_time_out_and_close() -> None:
    asyncio.run(_outgoing_requests())


async def _outgoing_requests() -> None:
    sent: list[Any] = []
    out = OutgoingRequests(sent.append)
    first = asyncio.ensure_future(out.request("roots/list", None, 5))
    second = asyncio.ensure_future(out.request("roots/list", {"a": 1}, 5))
    await asyncio.sleep(0)
    assert [m["id"] for m in sent] == [f"{ID_PREFIX}1", f"{ID_PREFIX}2"]
    assert "params" not in sent[0] and sent[1]["params"] == {"a": 1}
    out.on_reply(jsonrpc.Reply(1, "a client's own id", None))  # not ours: dropped
    out.on_reply(jsonrpc.Reply(f"{ID_PREFIX}2", None, {"code": -32601, "message": "Method not found"}))
    out.on_reply(jsonrpc.Reply(f"{ID_PREFIX}1", {"roots": []}, None))
    assert await first == {"roots": []}
    with pytest.raises(PeerError) as caught:
        await second
    assert caught.value.code == -32601
    with pytest.raises(TimeoutError):
        await out.request("roots/list", None, 0.01)
    assert len(out) == 0
    waiting = asyncio.ensure_future(out.request("roots/list", None, 5))
    await asyncio.sleep(0)
    out.close()
    with pytest.raises(PeerError):
        await waiting
    with pytest.raises(PeerError):
        await out.request("roots/list", None, 5)


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///home/me/project", "/home/me/project"),
        ("file:///home/me/project/", "/home/me/project"),
        ("FILE://localhost/srv/a%20b/%C3%A9t%C3%A9", "/srv/a b/été"),
        ("file:///srv/x%2Fy", "/srv/x/y"),
        ("file:///", "/"),
        ("file:///srv/%FF", "/srv/\udcff"),  # not UTF-8: kept as the OS spells it
        ("file://otherhost/srv", None),
        ("https://example.com/srv", None),
        ("file:relative/dir", None),
        ("file:///srv/a?b=1", None),
        ("file:///srv/%00", None),
        (42, None),
    ],
)
def test_only_local_file_uris_are_roots(uri: Any, path: str | None) -> None:
    assert root_from_uri(uri) == path


def test_roots_keep_the_clients_order_without_duplicates() -> None:
    result = {
        "roots": [{"uri": "file:///b", "name": "B"}, {"uri": "http://x/"}, {"uri": "file:///a"}, {"uri": "file:///b/"}]
    }
    assert [(r.path, r.name) for r in roots_from_result(result)] == [("/b", "B"), ("/a", None)]
    assert roots_from_result({"roots": "nope"}) == () and roots_from_result(None) == ()


def test_counting_sees_needles_across_chunks() -> None:
    needle = b'{"type":"match"'
    stream = (needle + b",xx}\n") * 50
    for size in (1, 3, 7, 14, 15, 16, 100):
        counter = StreamCounter(needle)
        assert sum(counter.feed(stream[i : i + size]) for i in range(0, len(stream), size)) == 50, size


def test_progress_tokens() -> None:
    assert tokens_of({"_meta": {"progressToken": "t"}, "workDoneToken": 3}) == ("t", 3)
    assert tokens_of({"_meta": {"progressToken": True}, "workDoneToken": None}) == (None, None)
    assert tokens_of([1]) == (None, None)


def test_each_result_schema_admits_its_own_shape_only() -> None:
    """glob's result admits glob's meta, not grep's, and the other way round; so does each tool's MCP
    outputSchema, which is its native result's, closed."""
    paths = {"shape": "paths", "paths": ["a"], "truncated": False, "total": 1}
    matches = {"shape": "matches", "files": [{"path": "a", "matches": [{"lineNumber": 1, "line": "x"}]}]}
    matches = {**matches, "truncated": True, "total": 9}
    spill = {"locator": "/s/x", "bytes": 3, "retrievalHint": "h"}
    for schema, own, other in ((GLOB_RESULT, paths, matches), (GREP_RESULT, matches, paths)):
        jsonschema.Draft7Validator.check_schema(schema)
        jsonschema.validate({"text": "a", "meta": own, "spill": None}, schema)
        jsonschema.validate({"text": "a", "meta": own, "spill": spill}, schema)
        for bad in (
            {"text": "a", "meta": other, "spill": None},
            {"text": "a", "meta": {"shape": "cards"}, "spill": None},
            {"code": "SEARCH_FAILED", "text": "Error: x"},
            {"text": "a"},
        ):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(bad, schema)
    # MCP's outputSchema (full mode): the native result's, closed — an extra key is refused as well.
    glob_out, grep_out = mcp.output_schema(GLOB, mcp.FULL), mcp.output_schema(GREP, mcp.FULL)
    jsonschema.Draft202012Validator.check_schema(glob_out)
    jsonschema.Draft202012Validator(glob_out).validate({"text": "a", "meta": paths, "spill": None})
    for bad in ({"text": "a", "meta": matches, "spill": None}, {"text": "a", "meta": paths, "spill": None, "x": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(glob_out).validate(bad)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(grep_out).validate({"text": "a", "meta": paths, "spill": None})
    terminal = TERMINAL_SPEC.result
    jsonschema.validate({"text": "t", "matches": [], "matchCount": 0, "totalLines": 1, "truncated": False}, terminal)


def test_a_tool_result_in_each_shape() -> None:
    found = SearchResult("a.md", {"shape": "paths", "paths": ["a.md"], "truncated": False, "total": 1}, None, found=1)
    assert GLOB.tool is not None
    text = {"content": [{"type": "text", "text": "a.md"}], "isError": False}
    assert mcp.success_result(mcp.TEXT, GLOB.tool, found) == text
    link = {"type": "resource_link", "uri": "dsh-search://spill/s/a", "name": "a"}
    structured = mcp.success_result(mcp.STRUCTURED, GLOB.tool, found, link)  # no link but in full
    assert structured == {
        "content": [{"type": "text", "text": "a.md"}],
        "structuredContent": {"text": "a.md", "pathCount": 1, "truncated": False},
        "isError": False,
    }
    jsonschema.Draft202012Validator(GLOB.tool.output_schema).validate(structured["structuredContent"])
    whole = mcp.success_result(mcp.FULL, GLOB.tool, found, link)
    assert whole == {
        "content": [{"type": "text", "text": "a.md"}, link],
        "structuredContent": found.as_json(),
        "isError": False,
    }
    failed = mcp.error_result(invalid_args("nope"))
    assert failed == {
        "content": [{"type": "text", "text": "Error: nope"}],
        "isError": True,
        "_meta": {mcp.ERROR_KEY: {"code": "INVALID_ARGS", "text": "Error: nope"}},
    }
