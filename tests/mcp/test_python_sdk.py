"""The official MCP Python SDK (`mcp`, its stdio client) drives the frozen executable as a desktop client
would: roots from the client and their changes, progress on a slow search, log messages, outputSchema
validation of structuredContent, cancellation, isError results, the spill path under confinement, and
terminal_search listed only when it can work. A few wire-level promises the SDK hides (progress never
after the answer, LSP $/progress, stray responses, an unanswered roots/list) use the raw test client."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client.stdio import stdio_client

from dsh_search import texts
from mcp import ClientSession, StdioServerParameters, types
from tests.support.daemon import Daemon
from tests.support.processes import processes_named

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def params(exe: Path, spill: Path, *args: str, cwd: Path | str = "/") -> StdioServerParameters:
    return StdioServerParameters(
        command=str(exe),
        args=["--sample-over-cap-glob-results", "true", "--spill-dir", str(spill), *args],
        cwd=str(cwd),
    )


@contextlib.asynccontextmanager
async def connect(server: StdioServerParameters, errlog: Path, **callbacks: Any) -> AsyncIterator[ClientSession]:
    with errlog.open("a") as err:
        async with (
            stdio_client(server, errlog=err) as (read, write),
            ClientSession(read, write, **callbacks) as session,
        ):
            await session.initialize()
            yield session


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def structured(result: types.CallToolResult) -> Any:
    return (result.model_extra or {})["structuredContent"]


def tree(root: Path, files: dict[str, str]) -> Path:
    for age, (name, body) in enumerate(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        os.utime(path, (1_700_000_000 + age, 1_700_000_000 + age))  # distinct mtimes: glob lists oldest first
    return root


@pytest.fixture
def spill(tmp_path: Path) -> Path:
    return tmp_path / "spill"


@pytest.fixture
def errlog(tmp_path: Path) -> Path:
    return tmp_path / "server-stderr.txt"


# --- roots ---------------------------------------------------------------------------------------------------


def test_client_roots_are_the_workspace_and_follow_list_changed(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path
) -> None:
    one = tree(tmp_path / "project one", {"README.md": "alpha\n", "docs/guide.md": "alpha beta\n"})
    two = tree(tmp_path / "été", {"notes.md": "beta\n"})
    roots = [one]
    asked: list[float] = []

    async def list_roots(context: Any) -> types.ListRootsResult:
        asked.append(time.monotonic())
        return types.ListRootsResult(roots=[types.Root(uri=r.as_uri(), name=r.name) for r in roots])  # type: ignore[arg-type]

    async def main() -> None:
        # Started in / without --workdir, as desktop clients start servers: the roots are the workspace.
        async with connect(params(exe, spill), errlog, list_roots_callback=list_roots) as s:
            assert text(await s.call_tool("glob", {"pattern": "*.md"})) == "README.md\ndocs/guide.md"
            assert text(await s.call_tool("glob", {"pattern": "*.md", "path": "docs"})) == "docs/guide.md"
            outside = await s.call_tool("grep", {"pattern": "beta", "path": str(two)})
            assert outside.isError and text(outside) == f"Error: {texts.OUTSIDE_ALLOWED_ROOTS}"

            roots[:] = [two, one]
            await s.send_roots_list_changed()
            assert text(await s.call_tool("glob", {"pattern": "*.md"})) == "notes.md"
            inside = await s.call_tool("grep", {"pattern": "alpha", "path": str(one)})
            assert not inside.isError
            assert (
                text(inside)
                == f"Found 2 matches\n\n{one}/README.md\nLine 1: alpha\n\n{one}/docs/guide.md\nLine 1: alpha beta"
            )
            assert len(asked) == 2

    anyio.run(main)


def test_without_roots_or_workdir_an_implicit_search_of_the_disk_is_refused(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path
) -> None:
    project = tree(tmp_path / "p", {"a.md": "x\n"})

    async def main() -> None:
        async with connect(params(exe, spill), errlog) as s:  # no roots capability, cwd /
            refused = await s.call_tool("glob", {"pattern": "*.md"})
            assert refused.isError and text(refused) == f"Error: {texts.NO_WORKSPACE}"
            assert structured(refused) == {"code": "INVALID_ARGS", "text": f"Error: {texts.NO_WORKSPACE}"}
            explicit = await s.call_tool("glob", {"pattern": "*.md", "path": str(project)})
            assert text(explicit) == f"{project}/a.md".removeprefix("/")  # relative to the cwd, /

    anyio.run(main)


# --- progress, logging, cancellation ---------------------------------------------------------------------------


def test_progress_on_a_slow_search_and_none_on_a_fast_one(
    exe: Path, slow_corpus: Path, slow_pattern: str, spill: Path, errlog: Path
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> None:
        async with connect(params(exe, spill, "--workdir", str(slow_corpus)), errlog) as s:
            fast = await s.call_tool("glob", {"pattern": "*.txt"}, progress_callback=on_progress)
            assert not fast.isError and not seen, seen
            slow = await s.call_tool("grep", {"pattern": slow_pattern}, progress_callback=on_progress)
            assert text(slow) == "No matches found"

    anyio.run(main)
    assert seen, "no notifications/progress during a search of several seconds"
    progress = [p for p, _, _ in seen]
    assert progress == sorted(set(progress)), progress  # strictly increasing, as MCP requires
    assert all(total is None for _, total, _ in seen)
    assert all(m is not None and m.startswith("grep: ") for _, _, m in seen), seen


def test_warnings_reach_the_client_as_log_messages(exe: Path, tmp_path: Path, errlog: Path) -> None:
    project = tree(tmp_path / "p", {"a.md": "", "b.md": "", "c.md": ""})
    not_a_dir = tmp_path / "spill-file"
    not_a_dir.write_text("a file where the spill directory should be")
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(message: types.LoggingMessageNotificationParams) -> None:
        logs.append(message)

    async def main() -> None:
        server = params(exe, not_a_dir, "--workdir", str(project), "--glob-max-results", "1")
        async with connect(server, errlog, logging_callback=on_log) as s:
            await s.set_logging_level("info")
            result = await s.call_tool("glob", {"pattern": "*.md"})
            assert "The complete result could not be saved" in text(result)

    anyio.run(main)
    assert any(m.level == "warning" and "could not save glob-results.txt" in str(m.data) for m in logs), logs


def test_cancellation_stops_the_search(
    exe: Path, slow_corpus: Path, slow_pattern: str, spill: Path, errlog: Path
) -> None:
    sidecar = f"{exe}-rg"
    answered: list[Any] = []

    async def main() -> None:
        async with connect(params(exe, spill, "--workdir", str(slow_corpus)), errlog) as s:
            request_id = s._request_id  # the id the SDK gives the next request

            async def call() -> None:
                answered.append(await s.call_tool("grep", {"pattern": slow_pattern}))

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.fail_after(20):
                    while not processes_named(sidecar):
                        await anyio.sleep(0.05)
                cancelled = types.CancelledNotification(
                    method="notifications/cancelled",
                    params=types.CancelledNotificationParams(
                        requestId=request_id, reason="the user changed their mind"
                    ),
                )
                await s.send_notification(types.ClientNotification(cancelled))
                with anyio.fail_after(10):
                    while processes_named(sidecar):
                        await anyio.sleep(0.05)
                await anyio.sleep(0.5)  # MCP: a cancelled request is not answered at all
                group.cancel_scope.cancel()
            assert not answered
            await s.send_ping()  # the session goes on

    anyio.run(main)


# --- schemas, errors, the spill path, the tool list ---------------------------------------------------------------


def test_structured_content_validates_against_the_output_schema(exe: Path, tmp_path: Path, errlog: Path) -> None:
    project = tree(tmp_path / "p", {f"d{i}/f{i}.md": f"line {i}\n" for i in range(5)})

    async def main() -> None:
        server = params(
            exe, tmp_path / "spill", "--workdir", str(project), "--glob-max-results", "2", "--grep-max-matches", "2"
        )
        async with connect(server, errlog) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert sorted(tools) == ["glob", "grep"]
            schemas = {name: (t.model_extra or {})["outputSchema"] for name, t in tools.items()}
            calls = [
                ("glob", {"pattern": "*.md"}, False),  # over the cap: sampled, spilled
                ("glob", {"pattern": "f1.md"}, False),
                ("glob", {"pattern": "*.none"}, False),
                ("grep", {"pattern": "line"}, False),  # over the cap
                ("grep", {"pattern": "line 3"}, False),
                ("grep", {"pattern": "nothing here"}, False),
                ("grep", {"pattern": "(unclosed"}, True),  # SEARCH_INVALID_PATTERN
                ("glob", {"pattern": " "}, True),  # INVALID_ARGS
                ("grep", {"pattern": "x", "path": "missing"}, True),  # SEARCH_FAILED
            ]
            for name, arguments, is_error in calls:
                result = await s.call_tool(name, arguments)
                assert result.isError is is_error, (name, arguments, text(result))
                jsonschema.Draft7Validator(schemas[name]).validate(structured(result))
                if is_error:
                    assert structured(result)["text"] == text(result) and text(result).startswith("Error: ")
                else:
                    assert structured(result)["text"] == text(result)
            spilled = structured(await s.call_tool("glob", {"pattern": "*.md"}))["spill"]
            assert spilled is not None and spilled["locator"].endswith("-glob-results.txt")

    anyio.run(main)


def test_the_spill_path_is_searchable_under_confinement(exe: Path, tmp_path: Path, spill: Path, errlog: Path) -> None:
    project = tree(tmp_path / "p", {f"f{i}.md": f"needle {i}\n" for i in range(4)})
    elsewhere = tree(tmp_path / "elsewhere", {"x.md": "needle\n"})

    async def main() -> None:
        server = params(
            exe, spill, "--workdir", str(project), "--allowed-root", str(project), "--glob-max-results", "2"
        )
        async with connect(server, errlog) as s:
            capped = await s.call_tool("glob", {"pattern": "*.md"})
            locator = structured(capped)["spill"]["locator"]
            assert f"Full sorted result stored at: {locator}." in text(capped)
            assert not str(locator).startswith(str(project))
            # What the footer advises: grep the spill path. It is outside the allowed root, and allowed.
            inside = await s.call_tool("grep", {"pattern": "f3", "path": locator})
            assert not inside.isError and text(inside) == f"Found 1 match\n\n{locator}\nLine 4: f3.md"
            listing = await s.call_tool("glob", {"pattern": "*glob-results.txt", "path": str(spill)})
            assert not listing.isError and text(listing) == locator
            refused = await s.call_tool("grep", {"pattern": "needle", "path": str(elsewhere)})
            assert refused.isError and text(refused) == f"Error: {texts.OUTSIDE_ALLOWED_ROOTS}"

    anyio.run(main)


def test_terminal_search_is_listed_only_when_it_can_work(exe: Path, tmp_path: Path, spill: Path, errlog: Path) -> None:
    async def names(*args: str) -> list[str]:
        async with connect(params(exe, spill, "--workdir", str(tmp_path), *args), errlog) as s:
            listed = [t.name for t in (await s.list_tools()).tools]
            if "terminal_search" not in listed:
                with pytest.raises(Exception, match="unknown tool: terminal_search"):
                    await s.call_tool("terminal_search", {"sessionId": "t", "pattern": "x"})
            else:
                result = await s.call_tool("terminal_search", {"sessionId": "t", "pattern": "x"})
                assert result.isError and text(result) == "Error: unknown terminal session: t"
                tool = next(t for t in (await s.list_tools()).tools if t.name == "terminal_search")
                jsonschema.Draft7Validator((tool.model_extra or {})["outputSchema"]).validate(structured(result))
            return listed

    async def main() -> None:
        assert await names() == ["glob", "grep"]  # auto: no scrollback producer yet
        assert await names("--terminal-search", "never") == ["glob", "grep"]
        assert await names("--terminal-search", "always") == ["glob", "grep", "terminal_search"]

    anyio.run(main)


# --- on the wire -------------------------------------------------------------------------------------------------


def raw(exe: Path, spill: Path, *args: str, framing: str = "ndjson", cwd: Path | str | None = None) -> Daemon:
    base = ["--sample-over-cap-glob-results", "true", "--spill-dir", str(spill)]
    return Daemon([*base, *args], framing=framing, exe=exe, cwd=cwd)


def drain(d: Daemon, until_id: Any, timeout: float = 60) -> list[dict[str, Any]]:
    return d.drain(until_id, timeout)


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_progress_is_never_written_after_the_answer(
    exe: Path, slow_corpus: Path, slow_pattern: str, spill: Path, framing: str
) -> None:
    d = raw(exe, spill, "--workdir", str(slow_corpus), framing=framing)
    try:
        call = d.request("grep", {"pattern": slow_pattern, "_meta": {"progressToken": 7}, "workDoneToken": "w"})
        messages = drain(d, call)
        assert messages[-1]["result"]["text"] == "No matches found"
        mcp = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
        lsp = [m["params"] for m in messages if m.get("method") == "$/progress"]
        assert mcp and all(p["progressToken"] == 7 for p in mcp)
        kinds = [p["value"]["kind"] for p in lsp]
        assert kinds[0] == "begin" and kinds[-1] == "end" and set(kinds[1:-1]) <= {"report"}, kinds
        assert all(p["token"] == "w" for p in lsp)
        assert d.no_response(1.5), "a notification came after the answer"
    finally:
        d.stop()


def test_native_and_mcp_texts_are_byte_identical(exe: Path, tmp_path: Path, spill: Path) -> None:
    project = tree(tmp_path / "p", {f"d{i % 3}/f{i}.md": f"needle {i}\nline é {i}\n" for i in range(9)})
    d = raw(exe, spill, "--workdir", str(project), "--glob-max-results", "4", "--grep-max-matches", "5")
    try:
        calls = [
            ("glob", {"pattern": "*.md"}),
            ("glob", {"pattern": "f1.md", "path": "d1"}),
            ("grep", {"pattern": "needle"}),
            ("grep", {"pattern": "é", "include": "f2*"}),
            ("grep", {"pattern": "(", "path": "d0"}),
        ]
        for name, arguments in calls:
            native = d.call(name, {**arguments, "sessionId": "same"})
            via_mcp = d.result("tools/call", {"name": name, "arguments": arguments, "_meta": {"sessionId": "same"}})
            if "error" in native:
                assert via_mcp["isError"] and via_mcp["content"][0]["text"] == native["error"]["data"]["text"]
                assert via_mcp["structuredContent"] == native["error"]["data"]
                continue
            want, got = native["result"], via_mcp["structuredContent"]
            if want["spill"] is not None:  # each call saves its own artifact; the rest must agree
                assert got["spill"] is not None
                want = {**want, "text": want["text"].replace(want["spill"]["locator"], got["spill"]["locator"])}
                want["spill"] = got["spill"]
            assert json.dumps(got).encode() == json.dumps(want).encode()
            assert via_mcp["content"] == [{"type": "text", "text": want["text"]}]
    finally:
        d.stop()


def test_responses_from_the_client_are_never_answered(exe: Path, tmp_path: Path, spill: Path) -> None:
    d = raw(exe, spill, "--workdir", str(tmp_path))
    try:
        d.send({"jsonrpc": "2.0", "id": 77, "result": {}})
        d.send({"jsonrpc": "2.0", "id": "dsh-search:99", "error": {"code": -1, "message": "stray"}})
        d.send([{"jsonrpc": "2.0", "id": 1, "result": None}])
        assert d.no_response(0.5)
        assert d.result("ping") == {}
    finally:
        d.stop()


def test_a_client_that_never_answers_roots_list_delays_a_search_boundedly(
    exe: Path, tmp_path: Path, spill: Path
) -> None:
    project = tree(tmp_path / "p", {"a.md": ""})
    d = raw(exe, spill, cwd=project)  # no --workdir: the roots would be the workspace
    try:
        init = d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}})
        assert init["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
        d.notify("notifications/initialized")
        asked = d.next_response()
        assert asked["method"] == "roots/list" and str(asked["id"]).startswith("dsh-search:")
        started = time.monotonic()
        call = d.request("tools/call", {"name": "glob", "arguments": {"pattern": "*.md"}})
        messages = drain(d, call, timeout=30)
        # Unanswered, the roots are unknown: the search went on in the daemon's own directory.
        assert messages[-1]["result"]["content"][0]["text"] == "a.md"
        assert time.monotonic() - started < 20
        logged = [m for m in messages if m.get("method") == "notifications/message"]
        if not logged:  # the warning and the search's own wait end about together
            logged = [d.next_response(timeout=10)]
        assert logged[0]["method"] == "notifications/message" and "roots/list" in logged[0]["params"]["data"]
    finally:
        d.stop()


def test_auto_listing_announces_terminal_search_to_mcp_clients(exe: Path, tmp_path: Path, spill: Path) -> None:
    d = raw(exe, spill, "--workdir", str(tmp_path))
    try:
        d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        assert [t["name"] for t in d.result("tools/list")["tools"]] == ["glob", "grep"]
        append = d.request("scrollback/append", {"sessionId": "t1", "data": "build ok\nerror: boom\n"})
        messages = drain(d, append)
        assert [m.get("method") for m in messages] == ["notifications/tools/list_changed", None]
        assert [t["name"] for t in d.result("tools/list")["tools"]] == ["glob", "grep", "terminal_search"]
        found = d.result(
            "tools/call", {"name": "terminal_search", "arguments": {"sessionId": "t1", "pattern": "error"}}
        )
        assert found["content"][0]["text"] == "[offset 1] error: boom\n[search: 1 of 1 matches, 3 retained lines]"
        d.result("scrollback/append", {"sessionId": "t2", "data": "more\n"})
        assert d.no_response(0.3)  # announced once
    finally:
        d.stop()
