"""Terminal scrollback through the frozen executable over real pipes, in both framings (docs/terminal.md)."""

from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import BASE_ARGS, Daemon

pytestmark = pytest.mark.e2e

_sessions = itertools.count()


@pytest.fixture(scope="module", params=["ndjson", "lsp"])
def daemon(request: pytest.FixtureRequest, exe: Path) -> Iterator[Daemon]:
    d = Daemon(framing=request.param, exe=exe)
    yield d
    d.stop()


@pytest.fixture
def session() -> str:
    return f"term-{next(_sessions)}"


def append(d: Daemon, session: str, data: str) -> dict[str, Any]:
    result: dict[str, Any] = d.result("scrollback/append", {"sessionId": session, "data": data})
    return result


def search(d: Daemon, session: str, pattern: str, **more: Any) -> dict[str, Any]:
    result: dict[str, Any] = d.result("terminal_search", {"sessionId": session, "pattern": pattern, **more})
    return result


def error_of(d: Daemon, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = d.call(method, params)
    assert "error" in response, response
    error: dict[str, Any] = response["error"]
    return error


LOG = "".join(
    f"\x1b[32m{i:05d}\x1b[0m {'ERROR disk full' if i % 97 == 0 else 'info: request served'}\r\n" for i in range(1000)
)


def test_append_read_and_search_jump_to_the_match(daemon: Daemon, session: str) -> None:
    assert append(daemon, session, LOG) == {"totalLines": 1001, "truncated": False}  # trailing newline: empty line
    for regex, pattern in ((False, "ERROR disk"), (True, r"ERROR\s+disk\b")):
        found = search(daemon, session, pattern, regex=regex)
        assert found["matchCount"] == 11 and found["totalLines"] == 1001 and not found["truncated"]
        offsets = [m["offset"] for m in found["matches"]]
        assert offsets == sorted(offsets)  # newest first
        assert found["text"].split("\n")[0] == f"[offset {offsets[0]}] 00970 ERROR disk full"
        assert found["text"].endswith("[search: 11 of 11 matches, 1001 retained lines]")
        for match in found["matches"]:
            page = daemon.result("scrollback/read", {"sessionId": session, "offset": match["offset"], "count": 3})
            assert page["text"].split("\n")[-1] == match["line"]
            assert page["lineBegin"] == match["offset"]


def test_append_as_a_notification_and_chunks_split_anywhere(daemon: Daemon, session: str) -> None:
    raw = "\x1b]0;title\x07é😀 one\r\ntwo\r"
    for char in raw[:-1]:
        daemon.notify("scrollback/append", {"sessionId": session, "data": char})
    # The next chunk starts with the LF of the CRLF and the low half of a surrogate pair.
    daemon.notify("scrollback/append", {"sessionId": session, "data": "\r"})
    daemon.notify("scrollback/append", {"sessionId": session, "data": "\nthree \ud83d"})
    daemon.notify("scrollback/append", {"sessionId": session, "data": "\ude00"})
    encoded = "\x1b[1mfour €\x1b[0m".encode()
    daemon.notify("scrollback/append", {"sessionId": session, "dataBase64": base64.b64encode(encoded[:-6]).decode()})
    last = daemon.result(
        "scrollback/append", {"sessionId": session, "dataBase64": base64.b64encode(encoded[-6:]).decode()}
    )
    assert last == {"totalLines": 3, "truncated": False}
    page = daemon.result("scrollback/read", {"sessionId": session})
    assert page == {
        "text": "é😀 one\ntwo\nthree 😀four €",
        "lineBegin": 0,
        "lineEnd": 3,
        "totalLines": 3,
        "truncated": False,
    }


def test_paging_through_every_match_once(daemon: Daemon, session: str) -> None:
    append(daemon, session, "".join(f"line {i}{' hit' if i % 4 == 0 else ''}\n" for i in range(200)))
    seen: list[int] = []
    offset = 0
    while True:
        page = search(daemon, session, "hit", offset=offset, limit=7)
        assert page["matchCount"] == 50
        if not page["matches"]:
            break
        seen += [m["offset"] for m in page["matches"]]
        offset += len(page["matches"])
    assert seen == [200 - i for i in range(196, -1, -4)]  # newest first, each once


def test_regex_rejected_by_ripgrep_is_search_invalid_pattern(daemon: Daemon, session: str) -> None:
    append(daemon, session, "text\n")
    error = error_of(daemon, "terminal_search", {"sessionId": session, "pattern": "(unclosed", "regex": True})
    assert error["code"] == 1001
    assert error["data"]["code"] == "SEARCH_INVALID_PATTERN"
    assert error["data"]["text"].startswith("Error: terminal_search pattern rejected by ripgrep: rg: regex parse error")


def test_catastrophic_pattern_answers_quickly(daemon: Daemon, session: str) -> None:
    append(daemon, session, "a" * 100_000 + "!\n")
    started = time.monotonic()
    found = search(daemon, session, "(a+)+$", regex=True)
    assert time.monotonic() - started < 10
    assert found["matchCount"] == 0
    assert found["text"] == "No matches found\n[search: 0 of 0 matches, 2 retained lines]"
    assert search(daemon, session, "(a+)+!$", regex=True)["matchCount"] == 1


def test_unknown_session_is_invalid_args(daemon: Daemon) -> None:
    for method, params in (
        ("terminal_search", {"sessionId": "no-such-terminal", "pattern": "x"}),
        ("scrollback/read", {"sessionId": "no-such-terminal"}),
    ):
        error = error_of(daemon, method, params)
        assert error["code"] == -32602
        assert error["data"] == {"code": "INVALID_ARGS", "text": "Error: unknown terminal session: no-such-terminal"}


def test_argument_errors(daemon: Daemon, session: str) -> None:
    append(daemon, session, "x")
    cases = [
        ("terminal_search", {"pattern": ""}, "pattern must be a non-empty string"),
        ("terminal_search", {"pattern": "x", "offset": -1}, "offset must be a non-negative safe integer"),
        ("terminal_search", {"pattern": "x", "limit": 0}, "limit must be a positive safe integer"),
        ("terminal_search", {"pattern": "x", "limit": 2**53}, "limit must be a positive safe integer"),
        ("terminal_search", {"pattern": "a\nb"}, "pattern must be a single line"),
        ("scrollback/read", {"offset": -1}, "offset must be a non-negative safe integer"),
        ("scrollback/read", {"count": 0}, "count must be a positive safe integer"),
        ("scrollback/append", {}, "exactly one of data and dataBase64 is required"),
        ("scrollback/append", {"data": "a", "dataBase64": "YQ=="}, "exactly one of data and dataBase64 is required"),
        ("scrollback/append", {"dataBase64": "not base64!"}, "dataBase64 must be valid base64"),
    ]
    for method, params, message in cases:
        error = error_of(daemon, method, {"sessionId": session, **params})
        assert error["code"] == -32602, (method, params, error)
        assert error["data"]["code"] == "INVALID_ARGS"
        assert error["data"]["text"].startswith(f"Error: {message}"), (params, error)


def test_close_frees_the_buffer(daemon: Daemon, session: str) -> None:
    append(daemon, session, "x")
    assert daemon.result("scrollback/close", {"sessionId": session}) == {"closed": True}
    assert daemon.result("scrollback/close", {"sessionId": session}) == {"closed": False}
    assert error_of(daemon, "terminal_search", {"sessionId": session, "pattern": "x"})["code"] == -32602


def test_tools_list_and_tools_call(daemon: Daemon, session: str) -> None:
    # Listed once a scrollback exists (--terminal-search auto; tests/mcp checks the listing itself).
    append(daemon, session, "alpha\nbeta\ngamma beta\n")
    tools = {t["name"]: t for t in daemon.result("tools/list")["tools"]}
    tool = tools["terminal_search"]
    assert tool["annotations"] == {"readOnlyHint": True}
    assert set(tool["inputSchema"]["properties"]) == {"sessionId", "pattern", "regex", "offset", "limit"}
    assert tool["inputSchema"]["required"] == ["sessionId", "pattern"]
    assert "terminal_read" in tool["description"]

    called = daemon.result(
        "tools/call", {"name": "terminal_search", "arguments": {"sessionId": session, "pattern": "beta"}}
    )
    assert called["isError"] is False
    expected = "[offset 1] gamma beta\n[offset 2] beta\n[search: 2 of 2 matches, 4 retained lines]"
    assert called["content"] == [{"type": "text", "text": expected}]
    assert called["structuredContent"] == {"text": expected, "matchCount": 2, "totalLines": 4, "truncated": False}
    assert list(called) == ["content", "structuredContent", "isError"]  # SPEC §3 (mcpResult auto)
    modern = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    again = daemon.result(
        "tools/call",
        {"name": "terminal_search", "arguments": {"sessionId": session, "pattern": "beta"}, "_meta": modern},
    )
    assert again["structuredContent"] == called["structuredContent"]

    failed = daemon.result(
        "tools/call", {"name": "terminal_search", "arguments": {"sessionId": "gone", "pattern": "b"}}
    )
    assert failed["isError"] is True
    assert failed["content"][0]["text"] == "Error: unknown terminal session: gone"


def test_methods_are_described(daemon: Daemon) -> None:
    names = {m["name"] for m in daemon.result("rpc.discover")["methods"]}
    assert {"terminal_search", "scrollback/append", "scrollback/read", "scrollback/close"} <= names


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_retention_and_result_bound_follow_the_configuration(exe: Path, framing: str) -> None:
    args = (*BASE_ARGS, "--scrollback-lines", "5", "--scrollback-max-bytes", "40")
    d = Daemon(args, framing=framing, exe=exe, cwd="/")
    try:
        assert append(d, "t", "".join(f"{i}\n" for i in range(10))) == {"totalLines": 5, "truncated": True}
        assert d.result("scrollback/read", {"sessionId": "t"})["text"] == "6\n7\n8\n9\n"
        assert append(d, "t", "é" * 30) == {"totalLines": 1, "truncated": True}  # 60 bytes: newest 40
        assert d.result("scrollback/read", {"sessionId": "t"})["text"] == "é" * 20
        found = search(d, "t", "é")
        assert found["truncated"] is True  # the buffer dropped output
        assert found["text"] == f"[offset 0] {'é' * 20}\n[search: 1 of 1 matches, 1 retained lines]"
    finally:
        d.stop()
    d = Daemon((*BASE_ARGS, "--terminal-search-max-result-bytes", "120"), framing=framing, exe=exe)
    try:
        append(d, "t", "".join(f"match number {i}\n" for i in range(20)))
        found = search(d, "t", "match")
        assert len(found["text"].encode()) <= 120
        assert found["text"].endswith(f"[search: {len(found['matches'])} of 20 matches, 21 retained lines]")
        assert 0 < len(found["matches"]) < 20 and found["truncated"] is True
    finally:
        d.stop()


def test_a_regex_search_is_bounded_by_timeout_ms(exe: Path) -> None:
    d = Daemon((*BASE_ARGS, "--timeout-ms", "1"), exe=exe)
    try:
        append(d, "t", "word " * 200_000)
        error = error_of(d, "terminal_search", {"sessionId": "t", "pattern": r"(\w+\s+){3}x", "regex": True})
        assert error["code"] == 1004
        assert error["data"] == {"code": "SEARCH_ABORTED", "text": "Error: terminal_search timed out after 1ms"}
        assert search(d, "t", "word")["matchCount"] == 1  # literal search needs no process
    finally:
        d.stop()
