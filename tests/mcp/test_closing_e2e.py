"""A closed MCP session ends its searches; a plain NDJSON pipe is still answered at EOF.

MCP's stdio transport ends a session by closing the server's stdin and waiting for it to exit; nobody
reads what comes after. So once an MCP client has spoken (initialize with a protocolVersion, a
2026-07-28 request, a tools/call), stdin EOF gives the searches still running min(graceMs, 1 s) to
finish, then stops them with their ripgrep: the daemon is gone within graceMs + 1 s. A session piped
through `printf` is answered (SPEC §1): its quick searches finish inside that window. A host that is not
an MCP client keeps the pipe contract: every request received before EOF is answered, then it exits.
Also here: what an MCP tool call takes (null optional arguments) and where it may look (the roots the
session shares), through the frozen executable."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_search import texts
from tests.support.daemon import Daemon, frame
from tests.support.processes import alive, searches_running, wait_until

pytestmark = [pytest.mark.e2e]

GRACE_MS = 1000


def start(exe: Path, workdir: Path, *args: str) -> Daemon:
    argv = ["--sample-over-cap-glob-results", "true", "--workdir", str(workdir), "--index", "off"]
    return Daemon([*argv, "--grace-ms", str(GRACE_MS), "--timeout-ms", "120000", *args], exe=exe)


@pytest.mark.parametrize(
    "opening",
    [
        {"method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}},
        None,  # no handshake: the tools/call alone says it is an MCP client
    ],
)
def test_an_mcp_client_that_closes_stdin_mid_search_stops_it(
    exe: Path, slow_corpus: Path, slow_pattern: str, opening: dict[str, Any] | None
) -> None:
    d = start(exe, slow_corpus)
    try:
        if opening is not None:
            d.result(opening["method"], opening["params"])
        d.request("tools/call", {"name": "grep", "arguments": {"pattern": slow_pattern}})
        assert wait_until(lambda: bool(searches_running(exe, d.proc.pid)), 30), "ripgrep never started"
        rg = searches_running(exe, d.proc.pid)
        closed = time.monotonic()
        d.close_stdin()
        assert d.wait_exit(timeout=GRACE_MS / 1000 + 5) == 0
        took = time.monotonic() - closed
        assert took <= GRACE_MS / 1000 + 1, f"exited {took:.2f} s after its input closed"
        assert not any(map(alive, rg)), "its ripgrep outlived it"
    finally:
        d.stop()


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_an_mcp_session_piped_through_printf_is_answered(exe: Path, tmp_path: Path, framing: str) -> None:
    """`printf '…' | dsh-search` (SPEC §1): initialize, a grep and a glob, then EOF at once — each answered,
    in either framing, and the daemon exits 0."""
    (tmp_path / "w" / "src").mkdir(parents=True)
    (tmp_path / "w" / "src" / "a.md").write_text("alpha\n")
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "grep", "arguments": {"pattern": "alpha"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "glob", "arguments": {"pattern": "**/*.md"}},
        },
    ]
    payload = b"".join(frame(json.dumps(m).encode(), framing) for m in messages)
    argv = ["--sample-over-cap-glob-results", "true", "--workdir", str(tmp_path / "w"), "--index", "off"]
    argv += ["--spill-dir", str(tmp_path / "spill"), "--grace-ms", str(GRACE_MS)]
    done = subprocess.run(
        ["sh", "-c", 'printf "%s" "$PAYLOAD" | "$@"', "sh", str(exe), *argv],
        env={**os.environ, "PAYLOAD": payload.decode()},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    if framing == "lsp":
        bodies = re.split(rb"Content-Length: \d+\r\n\r\n", done.stdout)[1:]
    else:
        bodies = done.stdout.splitlines()
    answers = {reply["id"]: reply["result"] for reply in map(json.loads, bodies) if "id" in reply}
    assert sorted(answers) == [1, 2, 3], done.stdout[-2000:]
    assert answers[1]["protocolVersion"] == "2025-11-25"
    assert answers[2]["content"] == [{"type": "text", "text": "Found 1 match\n\nsrc/a.md\nLine 1: alpha"}]
    assert answers[3]["content"] == [{"type": "text", "text": "src/a.md"}]
    assert answers[3]["structuredContent"] == {"text": "src/a.md", "pathCount": 1, "truncated": False}


def test_a_plain_pipe_is_answered_at_eof(exe: Path, slow_corpus: Path, slow_pattern: str) -> None:
    """No MCP client: a search that runs longer than the window an MCP session gets still answers."""
    d = start(exe, slow_corpus)
    try:
        call = d.request("grep", {"pattern": slow_pattern})
        assert wait_until(lambda: bool(searches_running(exe, d.proc.pid)), 30), "ripgrep never started"
        time.sleep(0.1)
        d.close_stdin()
        assert d.wait_for(call, timeout=120)["result"]["text"] == "No matches found"
        assert d.wait_exit(timeout=10) == 0
    finally:
        d.stop()


def test_null_optional_arguments_are_absent_in_tools_call(exe: Path, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.md").write_text("alpha\n")
    d = start(exe, tmp_path)
    try:
        glob = d.result("tools/call", {"name": "glob", "arguments": {"pattern": "*.md", "path": None}})
        assert glob["content"][0]["text"] == "src/a.md"
        grep = {"pattern": "alpha", "path": None, "include": None}
        assert d.result("tools/call", {"name": "grep", "arguments": grep})["content"][0]["text"] == (
            "Found 1 match\n\nsrc/a.md\nLine 1: alpha"
        )
        # A required argument's null is still an error; a native call keeps upstream's strict check.
        missing = d.result("tools/call", {"name": "grep", "arguments": {"pattern": None}})
        assert (
            missing["isError"]
            and missing["content"][0]["text"] == 'Error: invalid arguments: "pattern" must be a string'
        )
        native = d.call("glob", {"pattern": "*.md", "path": None})
        assert native["error"]["data"]["text"] == 'Error: invalid arguments: "path" must be a string'
    finally:
        d.stop()


@pytest.mark.parametrize("tool", ["grep", "glob", "read"])
def test_an_mcp_call_is_confined_to_the_workspace_unless_configured(exe: Path, tmp_path: Path, tool: str) -> None:
    """What the model names stays inside the workspace and the spill store; `--mcp-confine false` lets it
    out, and a native call (upstream's rule) was never held."""
    workspace, elsewhere = tmp_path / "w", tmp_path / "elsewhere"
    for root in (workspace, elsewhere):
        root.mkdir()
        (root / "a.md").write_text("alpha\n")
        (root / "b.md").write_text("beta\n")
    arguments = {"path": str(elsewhere / "a.md") if tool == "read" else str(elsewhere)}
    arguments |= {} if tool == "read" else {"pattern": "alpha" if tool == "grep" else "*.md"}
    for confine, refused in (("true", True), ("false", False)):
        d = start(exe, workspace, "--read-tool", "true", "--mcp-confine", confine, "--glob-max-results", "1")
        try:
            outside = d.result("tools/call", {"name": tool, "arguments": arguments})
            assert outside["isError"] is refused, outside
            if refused:
                real = str(workspace.resolve())
                assert outside["content"][0]["text"] == f"Error: {texts.outside_shared_roots((real,))}"
            # Inside: as before. The native method is not confined.
            native = (
                {"path": str(elsewhere / "a.md")}
                if tool == "read"
                else {"pattern": arguments["pattern"], "cwd": str(elsewhere)}
            )
            assert "result" in d.call(tool, native)
            inside = {"path": "a.md"} if tool == "read" else {"pattern": arguments["pattern"]}
            assert not d.result("tools/call", {"name": tool, "arguments": inside})["isError"]
            # A cwd the host passes is shared too, and so is the spill store the footers point into.
            assert not d.result(
                "tools/call", {"name": tool, "arguments": {**inside}, "_meta": {"cwd": str(elsewhere)}}
            )["isError"]
            capped = d.result(
                "tools/call", {"name": "glob", "arguments": {"pattern": "*"}, "_meta": {"cwd": str(elsewhere)}}
            )
            locator = capped["content"][0]["text"].split("stored at: ")[1].split(". Use")[0]
            follow = (
                {"path": locator} if tool == "read" else {"pattern": "a" if tool == "grep" else "*", "path": locator}
            )
            if tool == "glob":
                follow["path"] = str(Path(locator).parent)
            assert not d.result("tools/call", {"name": tool, "arguments": follow})["isError"]
        finally:
            d.stop()
