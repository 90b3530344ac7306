"""The request layer in process: the daemon's real server, dispatcher and methods over `os.pipe()`s, with
the real ripgrep (tests/support/inprocess.py). Dispatch, `tools/call`, cancellation at every stage,
progress, MCP roots and logging, shutdown — in both framings where framing matters.

The end-to-end suite covers the same contract through the frozen executable; these run in the fast suite.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_search.methods.dispatch import Dispatcher
from dsh_search.methods.registry import MethodSpec, MethodTable
from dsh_search.transport import jsonrpc
from tests.support.daemon import error_of, frame, text_of
from tests.support.fakes import make_app
from tests.support.inprocess import InProcessDaemon
from tests.support.trees import SLOW_PATTERN, write

ABORTED = "Error: grep was aborted before completion (tool timeout or caller cancellation)"


@pytest.fixture(scope="module")
def slow_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Text that SLOW_PATTERN needs seconds to scan: four files of ~20 MB, one repeated block each."""
    root = tmp_path_factory.mktemp("slow")
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "ηta", "theta"]
    block = "".join(" ".join(words[(i * 7 + j) % 8] for j in range(8)) + "\n" for i in range(20_000)).encode()
    for i in range(4):
        (root / f"slow-{i}.txt").write_bytes(block * 24)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write(root, "src/a.py", "needle = 1\n", 1000)
    write(root, "src/b.py", "other = 2\nneedle()\n", 2000)
    write(root, "notes.md", "no match here\n", 3000)
    return root


@pytest.fixture(params=["ndjson", "lsp"])
def daemon(request: pytest.FixtureRequest, tree: Path) -> Iterator[InProcessDaemon]:
    with InProcessDaemon(workdir=tree, framing=request.param) as d:
        yield d


# --- dispatch ---------------------------------------------------------------------------------------------


def test_native_calls_answer_with_their_values_or_errors(daemon: InProcessDaemon) -> None:
    assert daemon.result("ping") == {}
    assert daemon.result("ping", []) == {}  # an empty array is no params at all
    assert text_of(daemon.call("grep", {"pattern": "needle"})) == (
        "Found 2 matches\n\nsrc/a.py\nLine 1: needle = 1\n\nsrc/b.py\nLine 2: needle()"
    )
    assert error_of(daemon.call("grep", {"pattern": ""})) == (
        -32602,
        "INVALID_ARGS",
        "Error: pattern must be a non-empty string",
    )
    assert error_of(daemon.call("glob", {})) == (
        -32602,
        "INVALID_ARGS",
        'Error: invalid arguments: missing required property "pattern"',
    )
    missing = daemon.call("no/such")
    assert missing["error"] == {"code": -32601, "message": "Method not found", "data": "no/such"}


def test_a_batch_is_answered_element_by_element(daemon: InProcessDaemon) -> None:
    daemon.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "ping"},  # a notification: no answer
            {"jsonrpc": "2.0", "id": 2, "method": "glob", "params": {"pattern": "*.md"}},
            {"jsonrpc": "2.0", "id": 3},
        ]
    )
    answers = daemon.next_response()
    assert isinstance(answers, list)
    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id) == [1, 2, 3]
    assert by_id[1]["result"] == {} and by_id[2]["result"]["text"] == "notes.md"
    assert by_id[3]["error"]["code"] == -32600


def test_an_internal_error_is_answered_without_its_details() -> None:
    async def broken(ctx: Any, params: dict[str, Any]) -> Any:
        raise RuntimeError("secret detail")

    app = make_app()
    app.methods = MethodTable([MethodSpec("broken", summary="A handler with a bug.", handler=broken)])
    dispatcher = Dispatcher(app)
    answer = asyncio.run(dispatcher.dispatch(jsonrpc.Call("broken", None, 7)))
    assert answer == {"jsonrpc": "2.0", "error": {"code": -32603, "message": "Internal error"}, "id": 7}


# --- tools/call -----------------------------------------------------------------------------------------------


def test_tools_call_runs_the_native_method_and_shapes_an_mcp_result(daemon: InProcessDaemon, tree: Path) -> None:
    native = daemon.result("grep", {"pattern": "needle", "cwd": "src"})
    mcp = daemon.result(
        "tools/call", {"name": "grep", "arguments": {"pattern": "needle", "cwd": "/elsewhere"}, "_meta": {"cwd": "src"}}
    )
    # Host-only fields come from _meta; a model cannot set them through arguments. The result is the text
    # and, as structuredContent, the same text and its counts (SPEC §3; mcpResult auto).
    assert mcp == {
        "content": [{"type": "text", "text": native["text"]}],
        "structuredContent": {"text": native["text"], "matchCount": 2, "fileCount": 2, "truncated": False},
        "isError": False,
    }
    failed = daemon.result("tools/call", {"name": "grep", "arguments": {"pattern": "("}})
    assert failed["isError"] is True and "structuredContent" not in failed
    assert failed["_meta"]["dsh-search/error"]["code"] == "SEARCH_INVALID_PATTERN"
    assert failed["content"][0]["text"].startswith("Error: grep pattern rejected by ripgrep: rg: regex parse error")
    assert error_of(daemon.call("tools/call", {"name": "nope"})) == (
        -32602,
        "INVALID_ARGS",
        "Error: unknown tool: nope",
    )
    assert error_of(daemon.call("tools/call", {"arguments": {}}))[0] == -32602  # tools/call's own params


def test_terminal_search_joins_the_tools_once_a_scrollback_exists(daemon: InProcessDaemon) -> None:
    daemon.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert [t["name"] for t in daemon.result("tools/list")["tools"]] == ["glob", "grep"]
    unlisted = daemon.call("tools/call", {"name": "terminal_search", "arguments": {"sessionId": "t", "pattern": "x"}})
    assert error_of(unlisted)[2] == "Error: unknown tool: terminal_search"
    append = daemon.request("scrollback/append", {"sessionId": "t", "data": "ok\nerror: boom\n"})
    assert [m.get("method") for m in daemon.drain(append)] == ["notifications/tools/list_changed", None]
    found = daemon.result("tools/call", {"name": "terminal_search", "arguments": {"sessionId": "t", "pattern": "err"}})
    assert found["content"][0]["text"] == "[offset 1] error: boom\n[search: 1 of 1 matches, 3 retained lines]"


# --- cancellation -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
@pytest.mark.parametrize("when", ["same-write", "while-running"])
def test_cancel_request_answers_minus_32800_and_the_daemon_goes_on(slow_tree: Path, framing: str, when: str) -> None:
    with InProcessDaemon(workdir=slow_tree, framing=framing) as d:
        request = {"jsonrpc": "2.0", "id": "slow", "method": "grep", "params": {"pattern": SLOW_PATTERN}}
        cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "slow"}}
        if when == "same-write":  # cancelled before its task ever ran
            d.write_raw(b"".join(frame(json.dumps(m).encode(), framing) for m in (request, cancel)))
        else:
            d.send(request)
            _wait_for_rg(d)
            d.send(cancel)
        answer = d.wait_for("slow")
        assert answer["error"] == {
            "code": -32800,
            "message": "Request cancelled",
            "data": {"code": "SEARCH_ABORTED", "text": ABORTED},
        }
        assert _no_rg_left(d)
        assert d.result("ping") == {}


def test_mcp_cancellation_is_never_answered(slow_tree: Path) -> None:
    with InProcessDaemon(workdir=slow_tree) as d:
        slow = d.request("tools/call", {"name": "grep", "arguments": {"pattern": SLOW_PATTERN}})
        _wait_for_rg(d)
        d.notify("notifications/cancelled", {"requestId": slow, "reason": "user"})
        ping = d.request("ping")
        assert d.drain(ping) == [{"jsonrpc": "2.0", "result": {}, "id": ping}]
        assert _no_rg_left(d) and d.no_response(0.2)


def test_exit_aborts_running_searches_with_their_tools_words(slow_tree: Path) -> None:
    with InProcessDaemon(workdir=slow_tree) as d:
        native = d.request("grep", {"pattern": SLOW_PATTERN})
        mcp = d.request("tools/call", {"name": "grep", "arguments": {"pattern": SLOW_PATTERN}})
        _wait_for_rg(d)
        d.notify("exit")
        assert error_of(d.wait_for(native)) == (1004, "SEARCH_ABORTED", ABORTED)
        assert d.wait_for(mcp)["result"] == {
            "content": [{"type": "text", "text": ABORTED}],
            "isError": True,
            "_meta": {"dsh-search/error": {"code": "SEARCH_ABORTED", "text": ABORTED}},
        }
        assert d.wait_exit() == 0
        assert len(d.daemon.launcher.groups) == 0


def test_a_timeout_is_search_aborted_with_its_own_words(slow_tree: Path) -> None:
    with InProcessDaemon(workdir=slow_tree, timeoutMs=200) as d:
        assert error_of(d.call("grep", {"pattern": SLOW_PATTERN})) == (
            1004,
            "SEARCH_ABORTED",
            "Error: grep timed out after 200ms",
        )


def test_shutdown_waits_for_running_requests_then_refuses_all_but_exit(daemon: InProcessDaemon) -> None:
    shutdown = daemon.request("shutdown")
    assert daemon.wait_for(shutdown)["result"] is None
    assert daemon.call("ping")["error"] == {"code": -32600, "message": "server is shutting down"}
    daemon.notify("exit")
    assert daemon.wait_exit() == 0


# --- progress -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_progress_reports_while_a_search_runs_and_never_after_its_answer(slow_tree: Path, framing: str) -> None:
    with InProcessDaemon(workdir=slow_tree, framing=framing) as d:
        params = {"pattern": SLOW_PATTERN, "_meta": {"progressToken": "p"}, "workDoneToken": "w"}
        slow = d.request("grep", params)
        first = _next_notification(d, "notifications/progress")
        assert first["params"]["progressToken"] == "p" and first["params"]["progress"] > 0
        assert first["params"]["message"].startswith("grep: ")
        d.notify("$/cancelRequest", {"id": slow})
        messages = d.drain(slow)
        assert messages[-1]["error"]["code"] == -32800
        lsp = [m["params"]["value"]["kind"] for m in d.notifications + messages if m.get("method") == "$/progress"]
        assert lsp[0] == "begin" and lsp[-1] == "end" and set(lsp[1:-1]) <= {"report"}
        assert d.no_response(0.7)  # nothing after the answer, not even a late tick


def test_a_fast_call_reports_no_progress(daemon: InProcessDaemon) -> None:
    grep = daemon.request("grep", {"pattern": "needle", "_meta": {"progressToken": 1}})
    assert [m.get("method") for m in daemon.drain(grep)] == [None]


# --- MCP roots and logging -------------------------------------------------------------------------------------


def test_the_clients_roots_are_the_workspace_and_follow_list_changed(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other, "elsewhere.md", "needle\n", 1000)
    with InProcessDaemon(workdir=tmp_path, workdir_given=False) as d:
        d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}})
        d.notify("notifications/initialized")
        _answer_roots(d, tree)
        assert text_of(d.call("glob", {"pattern": "*.md"})) == "notes.md"
        d.notify("notifications/roots/list_changed")
        _answer_roots(d, other)
        assert text_of(d.call("glob", {"pattern": "*.md"})) == "elsewhere.md"
        outside = d.call("grep", {"pattern": "needle", "path": str(tree)})
        assert error_of(outside) == (-32602, "INVALID_ARGS", "Error: path is outside the allowed roots")


@pytest.mark.parametrize(
    ("roots", "listed"),
    [([], "an empty list"), ([{"uri": "file://otherhost/x"}], "listed: 'file://otherhost/x'")],
    ids=["empty", "other-host"],
)
def test_a_client_with_no_usable_root_is_warned(tmp_path: Path, roots: list[Any], listed: str) -> None:
    with InProcessDaemon(workdir=tmp_path, workdir_given=False) as d:
        d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}})
        d.notify("notifications/initialized")
        asked = _next_notification(d, "roots/list")
        d.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": roots}})
        warning = _next_notification(d, "notifications/message")
        assert warning["params"]["level"] == "warning" and warning["params"]["logger"] == "roots"
        assert warning["params"]["data"] == (
            f"roots/list: the client listed no usable root ({listed}; only file:// URIs of this machine count); "
            "searches use the server's own directory"
        )


def test_log_messages_reach_a_host_that_asks_for_them(tree: Path) -> None:
    with InProcessDaemon(workdir=tree) as d:
        missing = d.call("grep", {"pattern": "x", "cwd": "missing"})
        assert error_of(missing) == (
            1002,
            "SEARCH_FAILED",
            "Error: grep could not start its search command (ripgrep launch failed)",
        )
        assert d.no_response(0.2)  # a host that is no MCP client hears nothing until it asks
        assert d.result("logging/setLevel", {"level": "info"}) == {}
        call = d.request("grep", {"pattern": "x", "cwd": "missing"})
        logged = [m["params"] for m in d.drain(call) if m.get("method") == "notifications/message"]
        assert logged == [
            {
                "level": "warning",
                "logger": "search",
                "data": f"grep: ripgrep was not started: cwd {tree}/missing is not a directory the daemon can enter",
            }
        ]
        assert error_of(d.call("logging/setLevel", {"level": "loud"}))[1] == "INVALID_ARGS"


def test_an_mcp_client_is_told_why_a_search_could_not_start(tree: Path) -> None:
    with InProcessDaemon(workdir=tree) as d:
        d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})  # warnings by default
        call = d.request("tools/call", {"name": "glob", "arguments": {"pattern": "*"}, "_meta": {"cwd": "/nope"}})
        messages = d.drain(call)
        assert (
            messages[0]["params"]["data"]
            == "glob: ripgrep was not started: the directory /nope does not exist where dsh-search runs"
        )
        # The model is told which directory and why (upstream's words, for native calls, blame ripgrep).
        assert messages[1]["result"]["content"][0]["text"] == (
            "Error: glob could not start its search command: the directory /nope does not exist where dsh-search runs"
        )
        for hostile in ("\0", "x\0y"):  # no such directory can exist: a tool error, never an internal one
            call = {"name": "grep", "arguments": {"pattern": "x"}, "_meta": {"cwd": hostile}}
            assert d.result("tools/call", call)["isError"] is True
        native = d.call("glob", {"pattern": "*", "cwd": "/nope"})
        assert native["error"]["data"] == {
            "code": "SEARCH_FAILED",
            "text": "Error: glob could not start its search command (ripgrep launch failed)",  # upstream's
        }
        plain = tree / "plain.txt"
        plain.write_text("x")
        call = d.request("tools/call", {"name": "grep", "arguments": {"pattern": "x"}, "_meta": {"cwd": str(plain)}})
        assert d.drain(call)[-1]["result"]["content"][0]["text"] == (
            f"Error: grep could not start its search command: the directory {plain} is not a directory"
        )


# --- helpers ------------------------------------------------------------------------------------------------------


def _rg_children() -> list[int]:
    """ripgrep processes this test process started (the in-process daemon's children)."""
    import os

    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and os.readlink(f"/proc/{pid}/exe").endswith("/rg"):
                found.append(int(pid))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _wait_for_rg(d: InProcessDaemon, timeout: float = 10) -> None:
    """Until the daemon's ripgrep runs (evidence, not a sleep)."""
    deadline = time.monotonic() + timeout
    while not len(d.daemon.launcher.groups):
        assert time.monotonic() < deadline, "ripgrep never started"
        time.sleep(0.005)


def _no_rg_left(d: InProcessDaemon, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while len(d.daemon.launcher.groups) or _rg_children():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _next_notification(d: InProcessDaemon, method: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        message = d.next_response(timeout=max(0.1, deadline - time.monotonic()))
        if message.get("method") == method:
            return message  # type: ignore[no-any-return]
        d.notifications.append(message)


def _answer_roots(d: InProcessDaemon, root: Path) -> None:
    asked = _next_notification(d, "roots/list")
    assert str(asked["id"]).startswith("dsh-search:")
    d.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": root.as_uri(), "name": "w"}]}})
