"""dsh_search_bin.Client (packaging/sdk/) against the frozen executable over real pipes."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import stat
import sys
import textwrap
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_search_bin import (
    REQUEST_CANCELLED,
    Client,
    GlobResult,
    GrepResult,
    RequestError,
    SpillPage,
    StartupError,
    TerminalSearchResult,
)
from tests.support.hosts import kill_host_mid_search
from tests.support.processes import descendants
from tests.support.trees import SLOW_PATTERN

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "packaging" / "sdk"

MakeClient = Callable[..., Client]


def _open_fds() -> set[str]:
    return set(os.listdir("/dev/fd"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    files = {
        "src/app.js": "// TODO: wire the search\nconsole.log('hello');\n",
        "src/util.js": "export const add = (a, b) => a + b;\n",
        "docs/notes.md": "# Notes\n\nTODO: write the host guide\n",
        "README.md": "demo tree\n",
    }
    mtime = 1_700_000_000
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (mtime, mtime))
        mtime += 60
    return root


@pytest.fixture
def make_client(exe: Path, tree: Path, tmp_path: Path) -> MakeClient:
    def make(**kwargs: Any) -> Client:
        kwargs.setdefault("sample_over_cap_glob_results", True)
        kwargs.setdefault("workdir", tree)
        kwargs.setdefault("spill_dir", tmp_path / "spill")
        kwargs.setdefault("env", {**os.environ, "TMPDIR": str(tmp_dir(tmp_path))})
        return Client(exe, **kwargs)

    return make


def tmp_dir(tmp_path: Path) -> Path:
    """The daemon's TMPDIR: where the onefile launcher unpacks itself (and must clean up)."""
    path = tmp_path / "tmp"
    path.mkdir(exist_ok=True)
    return path


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


# -- results -----------------------------------------------------------------------------------------------


def test_typed_results(make_client: MakeClient, tree: Path) -> None:
    async def session() -> None:
        async with make_client() as client:
            info = client.initialize_result
            assert info is not None
            assert (info.server_name, info.ripgrep_version) == ("dsh-search", "15.2.0")
            assert info.ripgrep_path.endswith("dsh-search-rg")
            assert info.config["sampleOverCapGlobResults"] is True
            assert "grep" in info.instructions

            globbed, grepped = await asyncio.gather(client.glob("**/*.js"), client.grep("TODO"))
            assert isinstance(globbed, GlobResult)
            assert globbed.text == "src/app.js\nsrc/util.js"
            assert globbed.meta == {
                "shape": "paths",
                "paths": ["src/app.js", "src/util.js"],
                "truncated": False,
                "total": 2,
            }
            assert globbed.spill is None
            assert isinstance(grepped, GrepResult)
            assert grepped.text.startswith("Found 2 matches")
            assert [f["path"] for f in grepped.meta["files"]] == ["docs/notes.md", "src/app.js"]
            assert grepped.meta["files"][1]["matches"] == [{"lineNumber": 1, "line": "// TODO: wire the search"}]

            other = await client.grep("export", path="src", include="*.js", cwd=str(tree))
            assert [f["path"] for f in other.meta["files"]] == ["src/util.js"]

            appended = await client.scrollback_append("term-1", "$ make\r\n\x1b[31merror: missing semicolon\x1b[0m\r")
            assert appended.total_lines == 3
            await client.scrollback_append_nowait(
                "term-1", b"\nbuild failed\r\n$ make test\r\nerror: 2 tests failed\r\n"
            )
            found = await client.terminal_search("term-1", "error")
            assert isinstance(found, TerminalSearchResult)
            assert [(m.offset, m.line) for m in found.matches] == [
                (1, "error: 2 tests failed"),
                (4, "error: missing semicolon"),
            ]
            assert (found.match_count, found.total_lines, found.truncated) == (2, 6, False)
            regex = await client.terminal_search("term-1", r"^\$ make\b", regex=True, limit=1)
            assert (regex.match_count, len(regex.matches), regex.truncated) == (2, 1, True)
            page = await client.scrollback_read("term-1", offset=1, count=2)
            assert (page.text, page.line_begin, page.line_end, page.total_lines) == (
                "$ make test\nerror: 2 tests failed",
                1,
                3,
                6,
            )
            assert await client.scrollback_close("term-1") is True
            assert await client.scrollback_close("term-1") is False

            tools = [t["name"] for t in await client.tools_list()]
            assert {"glob", "grep"} <= set(tools)
            mcp = await client.call_tool("grep", {"pattern": "("})
            assert mcp["isError"] is True and mcp["content"][0]["text"].startswith("Error: ")
            await client.ping()
        assert client.returncode == 0

    run(session())


def test_errors_are_exceptions_with_code_and_text(make_client: MakeClient, tmp_path: Path) -> None:
    async def session() -> None:
        async with make_client() as client:
            with pytest.raises(RequestError) as bad_pattern:
                await client.grep("(")
            err = bad_pattern.value
            assert (err.code, err.rpc_code, err.method) == ("SEARCH_INVALID_PATTERN", 1001, "grep")
            assert err.text.startswith("Error: grep pattern rejected by ripgrep: ")
            assert err.data == {"code": err.code, "text": err.text}

            with pytest.raises(RequestError) as no_cwd:
                await client.glob("*", cwd=str(tmp_path / "missing"))
            assert (no_cwd.value.code, no_cwd.value.rpc_code) == ("SEARCH_FAILED", 1002)

            with pytest.raises(RequestError) as bad_args:
                await client.spill_read(str(tmp_path / "elsewhere.txt"))
            assert (bad_args.value.code, bad_args.value.rpc_code) == ("INVALID_ARGS", -32602)
            assert bad_args.value.text.startswith("Error: ")

            with pytest.raises(RequestError) as unknown:
                await client.terminal_search("no-such-terminal", "x")
            assert unknown.value.code == "INVALID_ARGS"

            # Envelope errors carry no data: the code is named after the number, the text is the message.
            with pytest.raises(RequestError) as missing:
                await client.request("no/such/method")
            assert (missing.value.code, missing.value.rpc_code) == ("METHOD_NOT_FOUND", -32601)
            assert missing.value.text == missing.value.message != ""
            await client.ping()  # the session goes on

    run(session())


# -- cancellation ------------------------------------------------------------------------------------------


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _rg_below(pid: int) -> list[int]:
    return [child for child in descendants(pid) if b"dsh-search-rg" in _cmdline(child)]


async def _rg_under(client: Client) -> list[int]:
    """The daemon's descendants once ripgrep runs among them."""
    assert client.pid is not None
    async with asyncio.timeout(15):
        while not _rg_below(client.pid):
            await asyncio.sleep(0.05)
    return descendants(client.pid)


def _exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process census via /proc")
def test_cancelling_the_task_cancels_the_search(make_client: MakeClient, slow_corpus: Path) -> None:
    async def session() -> None:
        async with make_client() as client:
            task = asyncio.create_task(client.grep(SLOW_PATTERN, cwd=str(slow_corpus)))
            pids = await _rg_under(client)
            rg = [pid for pid in pids if b"dsh-search-rg" in _cmdline(pid)]
            task.cancel()
            with pytest.raises(asyncio.CancelledError) as cancelled:
                async with asyncio.timeout(15):  # bounded: the call must not hang
                    await task
            answer = cancelled.value.__cause__
            assert isinstance(answer, RequestError), answer
            assert (answer.rpc_code, answer.code) == (REQUEST_CANCELLED, "SEARCH_ABORTED")
            assert answer.text == "Error: grep was aborted before completion (tool timeout or caller cancellation)"
            assert client.pending == 0
            assert not [pid for pid in rg if _exists(pid) and not _zombie(pid)]  # the -32800 came after rg was gone

            # asyncio.timeout around a call: the same path, surfacing as TimeoutError.
            with pytest.raises(TimeoutError) as timed_out:
                async with asyncio.timeout(0.5):
                    await client.grep(SLOW_PATTERN, cwd=str(slow_corpus))
            inner = timed_out.value.__cause__
            assert isinstance(inner, asyncio.CancelledError)
            assert isinstance(inner.__cause__, RequestError) and inner.__cause__.rpc_code == REQUEST_CANCELLED
            assert client.pending == 0
            assert (await client.glob("**/*.md")).meta["total"] == 2  # the session goes on
        assert client.returncode == 0

    run(session())


def test_cancel_wait_bounds_an_unanswered_cancellation(tmp_path: Path) -> None:
    """A daemon that never answers a cancelled request: the caller still gets its CancelledError, after
    cancel_wait, and the late answer (if any) is dropped quietly."""
    fake = fake_daemon(tmp_path, "silent")

    async def session() -> None:
        async with Client(fake, sample_over_cap_glob_results=True, cancel_wait=0.3, exit_wait=2) as client:
            task = asyncio.create_task(client.grep("anything"))
            await asyncio.sleep(0.1)
            task.cancel()
            started = time.monotonic()
            with pytest.raises(asyncio.CancelledError) as cancelled:
                await task
            assert time.monotonic() - started < 5
            assert cancelled.value.__cause__ is None
            assert client.pending == 0

    run(session())


# -- spill, long lines ---------------------------------------------------------------------------------------


def test_spill_pager_over_a_capped_grep(make_client: MakeClient, tree: Path) -> None:
    (tree / "many.txt").write_text("".join(f"hit {i}\n" for i in range(600)))

    async def session() -> None:
        async with make_client() as client:
            found = await client.grep("^hit", include="many.txt")
            assert found.spill is not None
            assert found.meta["total"] == 600 and found.meta["truncated"] is True
            assert found.spill.locator.startswith(str(client.initialize_result.config["spillDir"]))  # type: ignore[union-attr]
            assert found.spill.bytes > 0 and found.spill.retrieval_hint
            pages: list[SpillPage] = [page async for page in client.spill_pages(found.spill, limit=100)]
            assert len(pages) > 1
            assert [p.start_line for p in pages] == [1 + 100 * i for i in range(len(pages))]
            assert all(p.next_offset == p.end_line + 1 for p in pages[:-1]) and pages[-1].next_offset is None
            text = "\n".join(p.text for p in pages)
            assert len(text.splitlines()) == pages[-1].total_lines
            assert all(f"hit {i}" in text for i in range(600))
            # A page from the middle, by locator string.
            middle = await client.spill_read(found.spill.locator, offset=5, limit=3)
            assert (middle.start_line, middle.end_line) == (5, 7)

    run(session())


def test_answers_longer_than_64_kib_on_one_line(make_client: MakeClient, tree: Path) -> None:
    long_line = "NEEDLE " + "x" * 300_000
    (tree / "long.txt").write_text(long_line + "\n")
    args = ["--grep-max-line-bytes", "1000000", "--search-meta-max-bytes", "4000000"]

    async def session() -> None:
        async with make_client(args=args) as client:
            found = await client.grep("NEEDLE", include="long.txt")
            assert found.meta["files"][0]["matches"][0]["line"] == long_line
            assert long_line in found.text
            # The other way too: a 300 KB request, then a 300 KB answer.
            await client.scrollback_append("big", long_line + "\n")
            page = await client.scrollback_read("big", offset=1, count=1)
            assert page.text == long_line

    run(session())


# -- lifetime ----------------------------------------------------------------------------------------------


def test_graceful_shutdown_leaves_nothing_behind(make_client: MakeClient, tmp_path: Path) -> None:
    async def session() -> None:
        before = _open_fds()
        client = make_client()
        await client.start()
        pid = client.pid
        assert pid is not None
        await client.ping()
        status = await client.close()
        assert status == 0 == client.returncode
        assert await client.close() == 0  # idempotent
        with pytest.raises(Exception, match="closed"):
            await client.ping()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        gc.collect()
        assert _open_fds() == before

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        run(session())
    assert list(tmp_dir(tmp_path).iterdir()) == []  # the launcher removed its _MEI* directory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process census via /proc")
def test_close_with_a_search_running_is_bounded(make_client: MakeClient, slow_corpus: Path, tmp_path: Path) -> None:
    """`shutdown` would wait for the running search; past shutdown_wait the client says `exit` and the
    daemon aborts it. The caller of the search gets SEARCH_ABORTED (or ClosedError), never a hang."""

    async def session() -> None:
        client = make_client(shutdown_wait=0.5)
        await client.start()
        task = asyncio.create_task(client.grep(SLOW_PATTERN, cwd=str(slow_corpus)))
        tree = await _rg_under(client)
        assert await client.close() == 0
        outcome = (await asyncio.gather(task, return_exceptions=True))[0]
        assert isinstance(outcome, Exception), outcome
        assert getattr(outcome, "code", "SEARCH_ABORTED") == "SEARCH_ABORTED"
        assert not [pid for pid in tree if _exists(pid) and not _zombie(pid)]

    run(session())
    assert list(tmp_dir(tmp_path).iterdir()) == []


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def test_startup_error_explains_a_missing_sidecar(exe: Path, tmp_path: Path) -> None:
    lonely = tmp_path / "bin" / "dsh-search"
    lonely.parent.mkdir()
    shutil.copy2(exe, lonely)

    async def session() -> None:
        before = _open_fds()
        with pytest.raises(StartupError) as failed:
            async with Client(lonely, sample_over_cap_glob_results=True, stderr="capture"):
                raise AssertionError("the daemon must not start without its sidecar")
        assert failed.value.returncode == 3
        assert f"dsh-search: ripgrep sidecar {lonely}-rg is missing" in failed.value.stderr
        assert "exited with status 3" in str(failed.value) and "sidecar" in str(failed.value)
        gc.collect()
        assert _open_fds() == before

    run(session())

    async def invalid() -> None:
        with pytest.raises(StartupError) as failed:
            async with Client(exe, sample_over_cap_glob_results=None, stderr="capture"):
                pass
        assert failed.value.returncode == 2
        assert "sampleOverCapGlobResults is required" in failed.value.stderr

    run(invalid())


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process census via /proc")
def test_daemon_exits_when_a_python_host_is_sigkilled(exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    host = Path(__file__).with_name("python_host.py")
    argv = [sys.executable, str(host), str(SDK), str(exe), str(slow_corpus), SLOW_PATTERN]
    output = kill_host_mid_search(argv, tmp_path, tmp_path / "tmp", exe)
    assert "slow grep: started" in output


# -- notifications and requests from the daemon ------------------------------------------------------------

FAKE = """\
#!{python}
# A stand-in daemon speaking NDJSON: it sends what a newer daemon may send (progress, log messages, a
# tools/list_changed notification, a request to the client) around its answers.
import json, sys
mode = {mode!r}
def send(msg):
    sys.stdout.write(json.dumps(msg) + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        if msg.get("method") == "exit":
            break
        continue
    if "method" not in msg:  # the client's answer to our request
        send({{"jsonrpc": "2.0", "method": "test/answered", "params": msg}})
        continue
    if msg["method"] == "initialize":
        send({{"jsonrpc": "2.0", "method": "notifications/message", "params": {{"level": "info", "data": "hi"}}}})
        send({{"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}})
        send({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"serverInfo": {{"name": "fake", "version": "0"}}}}}})
    elif msg["method"] == "grep" and mode == "silent":
        continue  # never answered, not even when cancelled
    else:
        send({{"jsonrpc": "2.0", "method": "$/progress", "params": {{"token": 1, "value": {{"kind": "report"}}}}}})
        send({{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}})
        send({{"jsonrpc": "2.0", "id": msg["id"], "result": None if msg["method"] == "shutdown" else {{}}}})
"""


def fake_daemon(tmp_path: Path, mode: str = "normal") -> Path:
    path = tmp_path / f"fake-daemon-{mode}"
    path.write_text(FAKE.format(python=sys.executable, mode=mode))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_notifications_reach_the_callback_and_server_requests_are_refused(tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []
    async_seen: list[str] = []

    async def session(handler: Callable[[str, Any], Any]) -> None:
        async with Client(fake_daemon(tmp_path), sample_over_cap_glob_results=True, on_notification=handler) as c:
            await c.ping()
            await c.ping()
            await asyncio.sleep(0.2)

    run(session(lambda method, params: seen.append((method, params))))
    methods = [method for method, _ in seen]
    assert methods[0] == "notifications/message"
    assert methods.count("$/progress") >= 2 and methods.count("notifications/tools/list_changed") >= 2
    answered = [params for method, params in seen if method == "test/answered"]
    assert answered == [
        {"jsonrpc": "2.0", "id": "srv-1", "error": {"code": -32601, "message": "method not found: roots/list"}}
    ]

    async def handler(method: str, params: Any) -> None:
        await asyncio.sleep(0)
        async_seen.append(method)

    run(session(handler))
    assert "notifications/tools/list_changed" in async_seen

    # Without a callback, notifications are simply ignored.
    async def plain() -> None:
        async with Client(fake_daemon(tmp_path), sample_over_cap_glob_results=True) as c:
            await c.ping()

    run(plain())


def test_example_in_the_module_docstring_is_valid() -> None:
    import dsh_search_bin.client as module

    assert module.__doc__ is not None
    example = textwrap.dedent(module.__doc__.split("\n\n")[1])
    compile("async def _():\n" + textwrap.indent(example, "    "), "<doc>", "exec")
