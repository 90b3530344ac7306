"""dsh_search_bin.Client (clients/python/) against the frozen executable over real pipes."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import re
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

import dsh_search_bin
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
SDK = ROOT / "clients" / "python"

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
            assert await client.ping() == {}  # what the daemon answers
        assert client.returncode == 0

    run(session())


def test_initialize_result(make_client: MakeClient) -> None:
    async def session() -> None:
        async with make_client() as client:
            info = client.initialize_result
            assert info is not None
            assert info.protocol_version == info.raw["protocolVersion"]
            assert set(info.guidance) >= {"glob", "grep"} and info.guidance == info.raw["guidance"]
            assert info.config == info.raw["config"] and "timeoutMs" in info.config
            assert "workdir" not in info.config  # as documented: the configuration has no workdir

    run(session())


def test_the_error_table_is_the_daemons_own(make_client: MakeClient) -> None:
    """dsh_search_bin.ERROR_KINDS against the running daemon's rpc.discover, kind for kind and code for code:
    a kind the daemon adds cannot be missed."""

    async def session() -> dict[str, Any]:
        async with make_client() as client:
            result: dict[str, Any] = await client.request("rpc.discover")
            return result

    document = run(session())
    published: dict[str, int] = {}
    cancellable = 0
    for method in document["methods"]:
        for error in method.get("errors", []):
            if error["code"] == REQUEST_CANCELLED:
                assert error["message"] == "Request cancelled"
                cancellable += 1
                continue
            assert published.setdefault(error["message"], error["code"]) == error["code"], error
    assert cancellable > 0
    assert dict(dsh_search_bin.ERROR_KINDS) == published
    with pytest.raises(TypeError):
        dsh_search_bin.ERROR_KINDS["NEW_KIND"] = 1  # type: ignore[index]


def test_options_are_type_checked(exe: Path) -> None:
    wrong: list[tuple[dict[str, Any], str]] = [
        ({"sample_over_cap_glob_results": "false"}, "sample_over_cap_glob_results"),
        ({"sample_over_cap_glob_results": 0}, "sample_over_cap_glob_results"),
        ({"workdir": 7}, "workdir"),
        ({"spill_dir": ["/tmp"]}, "spill_dir"),
        ({"args": "--timeout-ms 5"}, "args"),
        ({"args": ["--timeout-ms", 5]}, "args"),
        ({"env": {"PATH": 1}}, "env"),
        ({"stderr": "pipe"}, "stderr"),
        ({"on_notification": "print"}, "on_notification"),
        ({"initialize": "yes"}, "initialize"),
        ({"client_info": "me"}, "client_info"),
        ({"cancel_wait": "5"}, "cancel_wait"),
        ({"cancel_wait": True}, "cancel_wait"),
        ({"shutdown_wait": -1}, "shutdown_wait"),
        ({"exit_wait": math.nan}, "exit_wait"),
        ({"term_wait": None}, "term_wait"),
        ({"cancel_on_close": "true"}, "cancel_on_close"),
    ]
    for options, name in wrong:
        kwargs: dict[str, Any] = {"sample_over_cap_glob_results": True, **options}
        with pytest.raises((TypeError, ValueError), match=name):
            Client(exe, **kwargs)
    with pytest.raises(TypeError, match="executable"):
        Client(42, sample_over_cap_glob_results=True)  # type: ignore[arg-type]


def test_call_options_are_type_checked(make_client: MakeClient) -> None:
    async def session() -> None:
        async with make_client() as client:
            with pytest.raises(TypeError, match="on_progress"):
                await client.grep("x", on_progress="print")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="cancel"):
                await client.close(cancel="yes")  # type: ignore[arg-type]
            assert client.pending == 0
            assert await client.ping() == {}

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
            # cancel_reply finds the daemon's answer there, and in the CancelledError of a plain cancel.
            reply = dsh_search_bin.cancel_reply(timed_out.value)
            assert reply is inner.__cause__
            assert (reply.code, reply.text) == ("SEARCH_ABORTED", answer.text)
            assert dsh_search_bin.cancel_reply(cancelled.value) is answer
            with pytest.raises(TimeoutError) as waited:
                await asyncio.wait_for(client.grep(SLOW_PATTERN, cwd=str(slow_corpus)), 0.5)
            waited_reply = dsh_search_bin.cancel_reply(waited.value)
            assert waited_reply is not None and waited_reply.rpc_code == REQUEST_CANCELLED
            assert dsh_search_bin.cancel_reply(ValueError("unrelated")) is None
            assert dsh_search_bin.cancel_reply(None) is None
            assert (await client.glob("**/*.md")).meta["total"] == 2  # the session goes on
        assert client.returncode == 0

    run(session())


PROGRESS_MESSAGE = r"grep: (\d+ matches in \d+ files so far( \(walking the tree: .+\))?|waiting for a free search slot)"


def test_on_progress_of_a_typed_call(make_client: MakeClient, slow_corpus: Path) -> None:
    """The daemon's progress reports reach the call's on_progress; here the first one makes the host's
    asyncio.timeout expire, and the daemon's answer to the cancellation is found with cancel_reply."""

    async def session() -> None:
        loop = asyncio.get_running_loop()
        reports: list[Any] = []
        async with make_client() as client:
            with pytest.raises(TimeoutError) as timed_out:
                async with asyncio.timeout(60) as deadline:

                    def progressed(report: Any) -> None:
                        reports.append(report)
                        deadline.reschedule(loop.time())  # the first report is enough: time out now

                    await client.grep(SLOW_PATTERN, cwd=str(slow_corpus), on_progress=progressed)
            assert reports, "no progress report"
            assert isinstance(reports[0], dsh_search_bin.Progress)
            assert isinstance(reports[0].progress, float) and reports[0].progress > 0
            assert re.fullmatch(PROGRESS_MESSAGE, reports[0].message), reports[0]
            reply = dsh_search_bin.cancel_reply(timed_out.value)
            assert reply is not None and (reply.rpc_code, reply.code) == (REQUEST_CANCELLED, "SEARCH_ABORTED")
            count = len(reports)
            assert (await client.glob("**/*.md", on_progress=progressed)).meta["total"] == 2  # fast: none
            assert len(reports) == count
            assert client.pending == 0

    run(session())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process census via /proc")
def test_close_can_cancel_the_running_calls(make_client: MakeClient, slow_corpus: Path) -> None:
    """close(cancel=True), or cancel_on_close=True, cancels the calls still running ($/cancelRequest each)
    rather than let `shutdown` wait for them: they end with the daemon's -32800 answer."""

    async def session(how: str) -> None:
        client = make_client(shutdown_wait=120, cancel_on_close=how == "option")
        await client.start()
        task = asyncio.create_task(client.grep(SLOW_PATTERN, cwd=str(slow_corpus)))
        await _rg_under(client)
        assert await (client.close() if how == "option" else client.close(cancel=True)) == 0
        with pytest.raises(RequestError) as cancelled:
            await task
        assert (cancelled.value.rpc_code, cancelled.value.code) == (REQUEST_CANCELLED, "SEARCH_ABORTED"), how
        assert dsh_search_bin.cancel_reply(cancelled.value) is cancelled.value

    run(session("argument"))
    run(session("option"))


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
SEARCH = {{"text": "", "meta": {{"shape": "paths", "paths": [], "truncated": False, "total": 0}}, "spill": None}}
RESULTS = {{
    "shutdown": None, "glob": SEARCH, "grep": SEARCH,
    "terminal_search": {{"text": "", "matches": [], "matchCount": 0, "totalLines": 0, "truncated": False}},
}}
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
        token = (msg.get("params") or {{}}).get("_meta", {{}}).get("progressToken")
        if token is not None:  # one report for someone else, one for this call
            for to, text in (("someone-else", "not yours"), (token, msg["method"])):
                send({{"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {{"progressToken": to, "progress": 1, "message": text}}}})
        send({{"jsonrpc": "2.0", "method": "$/progress", "params": {{"token": 1, "value": {{"kind": "report"}}}}}})
        send({{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}})
        send({{"jsonrpc": "2.0", "id": msg["id"], "result": RESULTS.get(msg["method"], {{}})}})
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

    # on_progress of a typed call sees the reports for its own token only; on_notification sees them all.
    async def progress() -> None:
        seen.clear()
        async with Client(
            fake_daemon(tmp_path),
            sample_over_cap_glob_results=True,
            on_notification=lambda method, params: seen.append((method, params)),
        ) as c:
            for method, call in (
                ("glob", lambda on_progress: c.glob("*", on_progress=on_progress)),
                ("terminal_search", lambda on_progress: c.terminal_search("t", "x", on_progress=on_progress)),
                ("grep", lambda on_progress: c.grep("x", on_progress=on_progress)),
            ):
                reports: list[Any] = []
                await call(reports.append)
                assert reports == [dsh_search_bin.Progress(progress=1.0, message=method)]

    run(progress())
    tokens = [params["progressToken"] for method, params in seen if method == "notifications/progress"]
    assert tokens.count("someone-else") == 3 and len(set(tokens)) == 4, tokens

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
