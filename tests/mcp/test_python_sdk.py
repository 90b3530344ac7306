"""The official MCP Python SDK (`mcp` 2.x) drives the frozen executable in both of its modes: `auto`, the
default, which probes `server/discover` in the same process and settles on 2026-07-28, and `legacy`, the
2025-11-25 `initialize` handshake byte for byte (what older clients and Claude Code send). In each: the
tools listed and called (glob, grep, terminal_search, read), a spill read through `resources/read` and
through the read tool, cancellation, progress, roots (a roots/list request, or an input_required result),
log messages (legacy), outputSchema validation (the SDK's own and ours), isError results, the spill path
under confinement, terminal_search listed only when it can work, and one daemon per connection. A few
wire-level promises the SDK hides use the raw test client."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from dsh_search import texts
from dsh_search.methods import era
from mcp import Client, StdioServerParameters, stdio_client, types
from tests.support.daemon import Daemon
from tests.support.processes import TAG_VARIABLE, new_tag, tagged
from tests.support.trees import project_copy

# The legacy tests use what 2026-07-28 deprecates (roots/list_changed, logging/setLevel) on purpose.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*deprecated as of 2026-07-28")]

MODES = ["auto", "legacy"]
SLOW = ("--timeout-ms", "120000")  # the slow searches take seconds, more on a busy machine
VERSION = {"auto": era.MODERN_VERSION, "legacy": "2025-11-25"}


def params(
    exe: Path, spill: Path, *args: str, cwd: Path | str = "/", spawns: Path | None = None, tag: str | None = None
) -> StdioServerParameters:
    """The daemon as a client configuration names it; with `spawns`, started through a shell that first
    appends its pid to that file, so a test counts the daemons a connection started; with `tag`, that tag
    in its environment (tests.support.processes.tagged finds its processes by it)."""
    argv = ["--sample-over-cap-glob-results", "true", "--spill-dir", str(spill), "--mcp-result", "full", *args]
    if spawns is None:
        env = None if tag is None else {**os.environ, TAG_VARIABLE: tag}
        return StdioServerParameters(command=str(exe), args=argv, cwd=str(cwd), env=env)
    script = 'echo $$ >> "$0"; exec "$@"'
    return StdioServerParameters(command="/bin/sh", args=["-c", script, str(spawns), str(exe), *argv], cwd=str(cwd))


@contextlib.asynccontextmanager
async def connect(server: StdioServerParameters, errlog: Path, mode: str, **callbacks: Any) -> AsyncIterator[Client]:
    with errlog.open("a") as err:
        async with Client(stdio_client(server, errlog=err), mode=mode, **callbacks) as client:
            assert client.protocol_version == VERSION[mode]
            yield client


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def native(result: types.CallToolResult) -> dict[str, Any]:
    """The native result, which the MCP result carries as its structuredContent (mcpResult full)."""
    assert result.structured_content is not None
    return result.structured_content


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


# --- eras and processes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_settles_on_its_era_with_one_daemon_per_connection(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path, mode: str
) -> None:
    """auto probes server/discover in the connection's own process: one daemon, as in legacy mode."""
    project = tree(tmp_path / "p", {"a.md": "alpha\n"})
    spawns = tmp_path / "spawns.txt"

    async def main() -> None:
        for _ in range(2):
            async with connect(params(exe, spill, "--workdir", str(project), spawns=spawns), errlog, mode) as c:
                assert c.server_info is not None and c.server_info.name == "dsh-search"
                assert c.instructions == texts.glob_guidance(True) + "\n\n" + texts.GREP_GUIDANCE
                capabilities = c.server_capabilities
                assert capabilities.tools is not None and capabilities.resources is not None
                assert (capabilities.logging is not None) is (mode == "legacy")  # deprecated: not declared modern
                assert text(await c.call_tool("glob", {"pattern": "*.md"})) == "a.md"

    anyio.run(main)
    assert len(spawns.read_text().split()) == 2  # one daemon for each of the two connections


# --- tools, outputSchema, errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tools_are_listed_called_and_validated(exe: Path, tmp_path: Path, errlog: Path, mode: str) -> None:
    project = tree(tmp_path / "p", {f"d{i}/f{i}.md": f"line {i}\n" for i in range(5)})

    async def main() -> None:
        server = params(
            exe,
            tmp_path / "spill",
            "--workdir",
            str(project),
            "--glob-max-results",
            "2",
            "--grep-max-matches",
            "2",
            "--terminal-search",
            "always",
            "--read-tool",
            "true",
        )
        async with connect(server, errlog, mode) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert list(tools) == ["glob", "grep", "terminal_search", "read"]
            schemas = {name: t.output_schema for name, t in tools.items()}
            assert len({json.dumps(schema, sort_keys=True) for schema in schemas.values()}) == 4  # each its own
            calls = [
                ("glob", {"pattern": "*.md"}, False),  # over the cap: sampled, spilled, linked
                ("glob", {"pattern": "f1.md"}, False),
                ("glob", {"pattern": "*.none"}, False),
                ("grep", {"pattern": "line"}, False),  # over the cap
                ("grep", {"pattern": "line 3"}, False),
                ("grep", {"pattern": "nothing here"}, False),
                ("terminal_search", {"sessionId": "t", "pattern": "x"}, True),  # no such terminal
                ("read", {"path": "d3/f3.md"}, False),
                ("grep", {"pattern": "(unclosed"}, True),  # SEARCH_INVALID_PATTERN
                ("glob", {"pattern": " "}, True),  # INVALID_ARGS
                ("grep", {"pattern": "x", "path": "missing"}, True),  # SEARCH_FAILED
                ("read", {"path": "d3"}, True),  # a directory
            ]
            for name, arguments, is_error in calls:
                result = await c.call_tool(name, arguments)  # the SDK validates structuredContent itself
                assert result.is_error is is_error, (name, arguments, text(result))
                if is_error:  # one level: the text, nothing structured a framework could hand the model
                    assert result.structured_content is None and text(result).startswith("Error: ")
                    assert (result.meta or {})["dsh-search/error"]["text"] == text(result)
                else:
                    assert native(result)["text"] == text(result)
                    jsonschema.Draft202012Validator(schemas[name]).validate(result.structured_content)
                    for other, schema in schemas.items():  # and no other tool's schema admits it
                        assert other == name or not jsonschema.Draft202012Validator(schema).is_valid(native(result))
            assert text(await c.call_tool("read", {"path": "d3/f3.md"})) == "     1\tline 3"

    anyio.run(main)


# --- spill artifacts: the link, resources/read, the read tool -----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_capped_result_is_read_whole_through_its_link_and_the_read_tool(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path, mode: str
) -> None:
    project = tree(tmp_path / "p", {f"f{i}.md": f"needle {i}\n" for i in range(7)})

    async def main() -> None:
        server = params(
            exe,
            spill,
            "--workdir",
            str(project),
            "--allowed-root",
            str(project),
            "--glob-max-results",
            "2",
            "--read-tool",
            "true",
        )
        async with connect(server, errlog, mode) as c:
            capped = await c.call_tool("glob", {"pattern": "*.md"})
            locator = native(capped)["spill"]["locator"]
            assert f"Full sorted result stored at: {locator}." in text(capped)  # the pointer for link-blind clients
            link = capped.content[1]
            assert isinstance(link, types.ResourceLink) and link.mime_type == "text/plain"
            whole = await c.read_resource(str(link.uri))
            body = whole.contents[0]
            assert isinstance(body, types.TextResourceContents)
            assert body.text == "\n".join(f"f{i}.md" for i in range(7))
            page = (await c.read_resource(f"{link.uri}?offset=3&limit=2")).contents[0]
            assert isinstance(page, types.TextResourceContents) and page.text == "f2.md\nf3.md"
            assert (page.meta or {})["dsh-search/lines"]["nextUri"] == f"{link.uri}?offset=5&limit=2"
            templates = (await c.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["dsh-search://spill/{session}/{artifact}{?offset,limit}"]
            with pytest.raises(Exception, match="Resource not found"):
                await c.read_resource(str(link.uri).replace(locator.rsplit("/", 1)[1], "0123456789ab-gone.txt"))
            with pytest.raises(Exception, match="Invalid resource URI"):
                await c.read_resource("file:///etc/passwd")
            # What the footer advises, on a host without a reader: read it (it lies outside the allowed root).
            by_link = await c.call_tool("read", {"path": str(link.uri), "offset": 6})
            assert text(by_link) == "     6\tf5.md\n     7\tf6.md"
            by_path = await c.call_tool("read", {"path": locator, "limit": 1})
            assert text(by_path) == "     1\tf0.md\n\n(Showing lines 1-1 of 7. Use offset 2 to read more.)"
            inside = await c.call_tool("grep", {"pattern": "f3", "path": locator})
            assert text(inside) == f"Found 1 match\n\n{locator}\nLine 4: f3.md"
            refused = await c.call_tool("read", {"path": str(tmp_path / "spill-elsewhere.txt")})
            assert refused.is_error and text(refused) == f"Error: {texts.OUTSIDE_ALLOWED_ROOTS}"

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_by_default_results_carry_structured_content_the_sdk_validates(
    exe: Path, tmp_path: Path, errlog: Path, mode: str
) -> None:
    """SPEC §3 by default (mcpResult auto; the SDK's own client is not one recognised for the text
    alone): every tool listed with an outputSchema, and each result's structuredContent — the text and its
    counts — validated against it by the SDK itself; one text content, no link, for a capped grep and glob
    over this repository's sources, whose footers name the saved result."""
    project = project_copy(tmp_path / "project")

    async def main() -> None:
        server = StdioServerParameters(
            command=str(exe),
            args=["--sample-over-cap-glob-results", "true", "--spill-dir", str(tmp_path / "spill"), "--index", "off"],
            cwd=str(project),
        )
        async with connect(server, errlog, mode) as c:
            tools = (await c.list_tools()).tools
            assert all(t.output_schema is not None and t.output_schema["additionalProperties"] is False for t in tools)
            counts = {"grep": ("matchCount", "fileCount", "truncated"), "glob": ("pathCount", "truncated")}
            for name, arguments in (("grep", {"pattern": "def ", "include": "*.py"}), ("glob", {"pattern": "*.py"})):
                result = await c.call_tool(name, arguments)  # the SDK raises if it does not validate
                assert len(result.content) == 1 and result.structured_content is not None
                assert "result stored at: " in text(result), f"{name} was not capped"
                assert set(result.structured_content) == {"text", *counts[name]}
                assert result.structured_content["text"] == text(result)
                assert result.structured_content["truncated"] is True

    anyio.run(main)


# --- roots ---------------------------------------------------------------------------------------------------


def test_legacy_client_roots_are_the_workspace_and_follow_list_changed(
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
        async with connect(params(exe, spill), errlog, "legacy", list_roots_callback=list_roots) as c:
            assert text(await c.call_tool("glob", {"pattern": "*.md"})) == "README.md\ndocs/guide.md"
            assert text(await c.call_tool("glob", {"pattern": "*.md", "path": "docs"})) == "docs/guide.md"
            outside = await c.call_tool("grep", {"pattern": "beta", "path": str(two)})
            assert outside.is_error and text(outside) == f"Error: {texts.outside_shared_roots((str(one),))}"

            roots[:] = [two, one]
            await c.session.send_roots_list_changed()
            assert text(await c.call_tool("glob", {"pattern": "*.md"})) == "notes.md"
            inside = await c.call_tool("grep", {"pattern": "alpha", "path": str(one)})
            assert not inside.is_error
            assert (
                text(inside)
                == f"Found 2 matches\n\n{one}/README.md\nLine 1: alpha\n\n{one}/docs/guide.md\nLine 1: alpha beta"
            )
            assert len(asked) == 2

    anyio.run(main)


def test_modern_client_roots_are_asked_for_each_call(exe: Path, tmp_path: Path, spill: Path, errlog: Path) -> None:
    """2026-07-28 has no server requests: a call from a client that offers roots is answered input_required,
    the SDK asks its callback and sends the call again with the roots, which are that call's workspace."""
    one = tree(tmp_path / "one", {"a.md": "alpha\n"})
    two = tree(tmp_path / "two", {"b.md": "beta\n"})
    roots = [one]
    asked: list[str] = []

    async def list_roots(context: Any) -> types.ListRootsResult:
        asked.append(roots[0].name)
        return types.ListRootsResult(roots=[types.Root(uri=r.as_uri()) for r in roots])  # type: ignore[arg-type]

    async def main() -> None:
        async with connect(params(exe, spill), errlog, "auto", list_roots_callback=list_roots) as c:
            assert text(await c.call_tool("glob", {"pattern": "*.md"})) == "a.md"
            roots[:] = [two]  # no list_changed in this era: the next call asks again
            assert text(await c.call_tool("glob", {"pattern": "*.md"})) == "b.md"
            outside = await c.call_tool("grep", {"pattern": "alpha", "path": str(one)})
            assert outside.is_error and text(outside) == f"Error: {texts.outside_shared_roots((str(two),))}"
        assert asked == ["one", "two", "two"]

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_without_roots_or_workdir_an_implicit_search_of_the_disk_is_refused(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path, mode: str
) -> None:
    project = tree(tmp_path / "p", {"a.md": "x\n"})

    async def main() -> None:
        async with connect(params(exe, spill), errlog, mode) as c:  # no roots capability, cwd /
            refused = await c.call_tool("glob", {"pattern": "*.md"})
            assert refused.is_error and text(refused) == f"Error: {texts.NO_WORKSPACE}"
            assert (refused.meta or {})["dsh-search/error"] == {
                "code": "INVALID_ARGS",
                "text": f"Error: {texts.NO_WORKSPACE}",
            }
            explicit = await c.call_tool("glob", {"pattern": "*.md", "path": str(project)})
            assert text(explicit) == f"{project}/a.md".removeprefix("/")  # relative to the cwd, /

    anyio.run(main)


# --- progress, logging, cancellation ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_progress_on_a_slow_search_and_none_on_a_fast_one(
    exe: Path, slow_corpus: Path, slow_pattern: str, spill: Path, errlog: Path, mode: str
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> None:
        async with connect(params(exe, spill, "--workdir", str(slow_corpus), *SLOW), errlog, mode) as c:
            fast = await c.call_tool("glob", {"pattern": "*.txt"}, progress_callback=on_progress)
            assert not fast.is_error and not seen, seen
            slow = await c.call_tool("grep", {"pattern": slow_pattern}, progress_callback=on_progress)
            assert text(slow) == "No matches found"

    anyio.run(main)
    assert seen, "no notifications/progress during a search of several seconds"
    progress = [p for p, _, _ in seen]
    assert progress == sorted(set(progress)), progress  # strictly increasing, as MCP requires
    assert all(total is None for _, total, _ in seen)
    assert all(m is not None and m.startswith("grep: ") for _, _, m in seen), seen


def test_warnings_reach_a_legacy_client_as_log_messages(exe: Path, tmp_path: Path, errlog: Path) -> None:
    project = tree(tmp_path / "p", {"a.md": "", "b.md": "", "c.md": ""})
    not_a_dir = tmp_path / "spill-file"
    not_a_dir.write_text("a file where the spill directory should be")
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(message: types.LoggingMessageNotificationParams) -> None:
        logs.append(message)

    async def main() -> None:
        server = params(exe, not_a_dir, "--workdir", str(project), "--glob-max-results", "1")
        async with connect(server, errlog, "legacy", logging_callback=on_log) as c:
            await c.session.set_logging_level("info")
            result = await c.call_tool("glob", {"pattern": "*.md"})
            assert "The complete result could not be saved" in text(result)

    anyio.run(main)
    assert any(m.level == "warning" and "could not save glob-results.txt" in str(m.data) for m in logs), logs


@pytest.mark.parametrize("mode", MODES)
def test_cancellation_stops_the_search(
    exe: Path, slow_corpus: Path, slow_pattern: str, spill: Path, errlog: Path, mode: str
) -> None:
    sidecar = f"{exe}-rg"
    tag = new_tag()
    answered: list[Any] = []

    async def main() -> None:
        async with connect(params(exe, spill, "--workdir", str(slow_corpus), *SLOW, tag=tag), errlog, mode) as c:

            async def call() -> None:
                answered.append(await c.call_tool("grep", {"pattern": slow_pattern}))

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.fail_after(20):
                    while not tagged(tag, sidecar):
                        await anyio.sleep(0.05)
                group.cancel_scope.cancel()  # the SDK sends notifications/cancelled for the abandoned call
            with anyio.fail_after(10):
                while tagged(tag, sidecar):
                    await anyio.sleep(0.05)
            assert not answered
            assert [t.name for t in (await c.list_tools()).tools] == ["glob", "grep"]  # the session goes on

    anyio.run(main)


# --- the spill path, the tool list ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_spill_path_is_searchable_under_confinement(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path, mode: str
) -> None:
    project = tree(tmp_path / "p", {f"f{i}.md": f"needle {i}\n" for i in range(4)})
    elsewhere = tree(tmp_path / "elsewhere", {"x.md": "needle\n"})

    async def main() -> None:
        server = params(
            exe, spill, "--workdir", str(project), "--allowed-root", str(project), "--glob-max-results", "2"
        )
        async with connect(server, errlog, mode) as c:
            capped = await c.call_tool("glob", {"pattern": "*.md"})
            locator = native(capped)["spill"]["locator"]
            assert not str(locator).startswith(str(project))
            listing = await c.call_tool("glob", {"pattern": "*glob-results.txt", "path": str(spill)})
            assert not listing.is_error and text(listing) == locator
            refused = await c.call_tool("grep", {"pattern": "needle", "path": str(elsewhere)})
            assert refused.is_error and text(refused) == f"Error: {texts.OUTSIDE_ALLOWED_ROOTS}"

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_terminal_search_is_listed_only_when_it_can_work(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path, mode: str
) -> None:
    async def names(*args: str) -> list[str]:
        async with connect(params(exe, spill, "--workdir", str(tmp_path), *args), errlog, mode) as c:
            listed = [t.name for t in (await c.list_tools()).tools]
            if "terminal_search" not in listed:
                with pytest.raises(Exception, match="unknown tool: terminal_search"):
                    await c.call_tool("terminal_search", {"sessionId": "t", "pattern": "x"})
            else:
                result = await c.call_tool("terminal_search", {"sessionId": "t", "pattern": "x"})
                assert result.is_error and text(result) == "Error: unknown terminal session: t"
            return listed

    async def main() -> None:
        assert await names() == ["glob", "grep"]  # auto: no scrollback producer yet
        assert await names("--terminal-search", "never") == ["glob", "grep"]
        assert await names("--terminal-search", "always") == ["glob", "grep", "terminal_search"]

    anyio.run(main)


# --- on the wire -------------------------------------------------------------------------------------------------


def raw(exe: Path, spill: Path, *args: str, framing: str = "ndjson", cwd: Path | str | None = None) -> Daemon:
    base = ["--sample-over-cap-glob-results", "true", "--spill-dir", str(spill), "--mcp-result", "full"]
    return Daemon([*base, *args], framing=framing, exe=exe, cwd=cwd)


def drain(d: Daemon, until_id: Any, timeout: float = 60) -> list[dict[str, Any]]:
    return d.drain(until_id, timeout)


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_progress_is_never_written_after_the_answer(
    exe: Path, slow_corpus: Path, slow_pattern: str, spill: Path, framing: str
) -> None:
    d = raw(exe, spill, "--workdir", str(slow_corpus), *SLOW, framing=framing)
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


@pytest.mark.parametrize("era_meta", [{}, {era.PROTOCOL_VERSION: era.MODERN_VERSION, era.CLIENT_CAPABILITIES: {}}])
def test_native_and_mcp_results_are_the_same_bytes(
    exe: Path, tmp_path: Path, spill: Path, era_meta: dict[str, Any]
) -> None:
    """Through tools/call (mcpResult full), in either era, the native result is the structuredContent and
    its text the content; a native error's data is _meta["dsh-search/error"]."""
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
            via_mcp = d.result(
                "tools/call", {"name": name, "arguments": arguments, "_meta": {"sessionId": "same", **era_meta}}
            )
            assert ("resultType" in via_mcp) is bool(era_meta)
            if "error" in native:
                assert via_mcp["isError"] and via_mcp["content"] == [
                    {"type": "text", "text": native["error"]["data"]["text"]}
                ]
                assert via_mcp["_meta"]["dsh-search/error"] == native["error"]["data"]
                assert "structuredContent" not in via_mcp
                continue
            want = native["result"]
            got = via_mcp["structuredContent"]
            if want["spill"] is not None:  # each call saves its own artifact; the rest must agree
                assert got["spill"] is not None and via_mcp["content"][1]["type"] == "resource_link"
                want = {**want, "text": want["text"].replace(want["spill"]["locator"], got["spill"]["locator"])}
                want["spill"] = got["spill"]
            assert json.dumps(got, sort_keys=True).encode() == json.dumps(want, sort_keys=True).encode()
            assert via_mcp["content"][0] == {"type": "text", "text": want["text"]}
            assert via_mcp["structuredContent"]["text"] == want["text"]
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
        assert init["capabilities"] == {"tools": {"listChanged": True}, "logging": {}, "resources": {}}
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


# --- the modern era on the wire, and the copy a client only probes --------------------------------------------------

ENVELOPE = {era.PROTOCOL_VERSION: era.MODERN_VERSION, era.CLIENT_CAPABILITIES: {}}


def test_every_bad_modern_request_gets_its_code_and_the_daemon_goes_on(exe: Path, tmp_path: Path, spill: Path) -> None:
    project = tree(tmp_path / "p", {f"f{i}.md": "x\n" for i in range(3)})
    d = raw(exe, spill, "--workdir", str(project), "--glob-max-results", "1")
    try:
        cases: list[tuple[str, Any, int]] = [
            ("server/discover", None, -32602),  # no envelope at all
            ("server/discover", {"_meta": {era.PROTOCOL_VERSION: era.MODERN_VERSION}}, -32602),
            ("tools/list", {"_meta": {**ENVELOPE, era.PROTOCOL_VERSION: ["2026-07-28"]}}, -32602),
            ("tools/list", {"_meta": {**ENVELOPE, era.CLIENT_CAPABILITIES: None}}, -32602),
            ("tools/call", {"_meta": {**ENVELOPE, era.PROTOCOL_VERSION: "2099-01-01"}, "name": "glob"}, -32022),
            ("ping", {"_meta": ENVELOPE}, -32601),
            ("logging/setLevel", {"_meta": ENVELOPE, "level": "debug"}, -32601),
            ("no/such/method", {"_meta": ENVELOPE}, -32601),
            ("tools/call", {"_meta": ENVELOPE, "name": "nope"}, -32602),
            ("tools/call", {"_meta": ENVELOPE, "name": 3}, -32602),
            ("resources/read", {"_meta": ENVELOPE, "uri": "file:///etc/passwd"}, -32602),
            (
                "resources/read",
                {"_meta": ENVELOPE, "uri": "dsh-search://spill/session-000000000000/000000000000-x"},
                -32602,
            ),
            ("resources/read", {"uri": "dsh-search://spill/session-000000000000/000000000000-x"}, -32002),  # legacy
            ("resources/templates/list", {"_meta": ENVELOPE, "cursor": "2"}, -32602),
        ]
        for method, call_params, code in cases:
            answer = d.call(method, call_params)
            assert answer["error"]["code"] == code, (method, call_params, answer)
            if code == -32022:
                assert answer["error"]["data"] == {"supported": list(era.SUPPORTED_VERSIONS), "requested": "2099-01-01"}
        discovered = d.result("server/discover", {"_meta": ENVELOPE})
        assert discovered["supportedVersions"] == [era.MODERN_VERSION] and discovered["resultType"] == "complete"
        capped = d.result("tools/call", {"_meta": ENVELOPE, "name": "glob", "arguments": {"pattern": "*.md"}})
        read = d.result("resources/read", {"_meta": ENVELOPE, "uri": capped["content"][1]["uri"]})
        assert read["contents"][0]["text"] == "f0.md\nf1.md\nf2.md"
    finally:
        d.stop()


@pytest.mark.parametrize("end", ["eof", "sigterm"])
def test_a_copy_that_is_only_probed_does_nothing_and_is_gone_at_once(exe: Path, tmp_path: Path, end: str) -> None:
    """What the TypeScript SDK's auto mode does with its throwaway copy: server/discover, then stdin closed
    and SIGTERM at once. The copy opens no index (mode on, so a search would build one), walks nothing,
    asks the client nothing, and exits 0 leaving nothing behind, not even the launcher's unpacked runtime."""
    project = tree(tmp_path / "p", {"a.md": "x\n"})
    index_dir, scratch = tmp_path / "index", tmp_path / "tmp"
    scratch.mkdir()
    stale = tmp_path / "spill" / "session-0123456789ab" / "0123456789ab-glob-results.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("a result a week old, which retention removes")
    os.utime(stale, (time.time() - 8 * 86400, time.time() - 8 * 86400))
    argv = [str(exe), "--sample-over-cap-glob-results", "true", "--index", "on", "--index-dir", str(index_dir)]
    argv += ["--spill-dir", str(tmp_path / "spill")]
    probe = {
        "jsonrpc": "2.0",
        "id": "server-discover-probe-1",
        "method": "server/discover",
        "params": {"_meta": ENVELOPE},
    }
    child = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=project,  # no --workdir: the workspace is the daemon's directory, and would be indexed
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps(probe).encode() + b"\n")
        child.stdin.flush()
        answer = json.loads(child.stdout.readline())
        assert answer["id"] == "server-discover-probe-1" and answer["result"]["resultType"] == "complete"
        child.stdin.close()
        if end == "sigterm":
            child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 0
        assert child.stdout.read() == b""  # nothing more was written: no roots/list, no log message
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert not index_dir.exists(), "the probed copy opened an index"
    assert stale.exists(), "the probed copy scanned the spill store"
    assert list(scratch.iterdir()) == [], "the launcher's unpacked runtime was left behind"


def test_the_host_environment_reaches_the_daemon_only_through_the_configurations_env(
    exe: Path, tmp_path: Path, spill: Path, errlog: Path
) -> None:
    """The SDK starts a server with HOME, LOGNAME, PATH, SHELL, TERM and USER only: a TMPDIR in the host's
    own environment never reaches the daemon (its runtime is unpacked elsewhere), one in the server's
    `env` does (docs/troubleshooting.md), and the daemon leaves nothing there."""
    host_tmp, configured = tmp_path / "host-tmp", tmp_path / "configured-tmp"
    host_tmp.mkdir()
    configured.mkdir()
    project = tree(tmp_path / "p", {"a.md": "alpha\n"})

    async def unpacked_in(env: dict[str, str] | None) -> tuple[list[str], list[str]]:
        server = params(exe, spill, "--workdir", str(project))
        server = StdioServerParameters(command=server.command, args=server.args, env=env)
        async with connect(server, errlog, "legacy") as c:
            assert text(await c.call_tool("glob", {"pattern": "*.md"})) == "a.md"
            return [p.name for p in host_tmp.iterdir()], [p.name for p in configured.iterdir()]

    async def main() -> None:
        os.environ["TMPDIR"] = str(host_tmp)
        try:
            in_host, in_configured = await unpacked_in(None)
            assert in_host == [] and in_configured == []
            in_host, in_configured = await unpacked_in({"TMPDIR": str(configured)})
            assert in_host == [] and len(in_configured) == 1 and in_configured[0].startswith("_MEI")
        finally:
            del os.environ["TMPDIR"]

    anyio.run(main)
    assert list(configured.iterdir()) == [], "the daemon left its unpacked runtime behind"
