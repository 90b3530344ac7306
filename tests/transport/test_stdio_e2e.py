"""The frozen daemon's transport and lifetime over real pipes: concurrency, malformed input, exits."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.locations import WINDOWS, sidecar_of
from tests.support.processes import TAG_VARIABLE, alive, descendants, new_tag, tagged, wait_until
from tests.support.trees import SLOW_PATTERN

FRAMINGS = ["ndjson", "lsp"]
GRACE_MS = 1500


@pytest.fixture
def daemons(exe: Path) -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for d in started:
        d.stop()
    for d in started:  # (under wine, a process that ended leaves the process table a moment later)
        assert wait_until(lambda d=d: not d.ripgreps(), timeout=2.0 if WINDOWS else 0), (
            "an rg process outlived the daemon"
        )


def spawn(daemons: list[Daemon], exe: Path, *extra: str, framing: str = "ndjson") -> Daemon:
    d = Daemon(
        ["--sample-over-cap-glob-results", "false", "--grace-ms", str(GRACE_MS), *extra], framing=framing, exe=exe
    )
    daemons.append(d)
    return d


def start_slow_grep(d: Daemon, corpus: Path, exe: Path) -> str:
    rid = d.request("grep", {"pattern": SLOW_PATTERN, "cwd": str(corpus)})
    assert wait_until(lambda: bool(d.ripgreps())), "rg never started"
    return str(rid)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_fifty_requests_at_once(daemons: list[Daemon], exe: Path, framing: str) -> None:
    d = spawn(daemons, exe, framing=framing)
    ids: list[object] = [*range(25), *(f"s{i}" for i in range(25))]
    blob = b"".join(
        (b"Content-Length: %d\r\n\r\n" % len(body) + body) if framing == "lsp" else body + b"\n"
        for body in (f'{{"jsonrpc":"2.0","method":"ping","id":{i!r}}}'.replace("'", '"').encode() for i in ids)
    )
    d.write_raw(blob)
    got = [d.next_response() for _ in ids]
    assert sorted(map(str, (r["id"] for r in got))) == sorted(map(str, ids))
    assert all(r["result"] == {} for r in got)
    assert d.no_response(0.3)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_garbage_then_next_request_is_answered(daemons: list[Daemon], exe: Path, framing: str) -> None:
    d = spawn(daemons, exe, framing=framing)
    d.send_body(b"this is not json")
    assert d.next_response()["error"]["code"] == -32700
    d.send_body(b'{"jsonrpc":"2.0","method":"ping","id":"after"}')
    assert d.next_response() == {"jsonrpc": "2.0", "result": {}, "id": "after"}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_oversized_message_then_next_request_is_answered(daemons: list[Daemon], exe: Path, framing: str) -> None:
    d = spawn(daemons, exe, "--max-message-bytes", "1000", framing=framing)
    big = b'{"jsonrpc":"2.0","method":"glob","params":{"pattern":"' + b"x" * 5000 + b'"},"id":1}'
    d.send_body(big)
    response = d.next_response()
    assert response["id"] is None and response["error"]["code"] == -32600
    d.send_body(b'{"jsonrpc":"2.0","method":"ping","id":2}')
    assert d.next_response() == {"jsonrpc": "2.0", "result": {}, "id": 2}


def test_malformed_lsp_header_then_next_request(daemons: list[Daemon], exe: Path) -> None:
    d = spawn(daemons, exe, framing="lsp")
    d.write_raw(b"Content-Length: nope\r\n\r\n")
    assert d.next_response()["error"]["code"] == -32700
    d.send_body(b'{"jsonrpc":"2.0","method":"ping","id":3}')
    assert d.next_response()["id"] == 3


def test_forced_framing(daemons: list[Daemon], exe: Path) -> None:
    d = spawn(daemons, exe, "--framing", "lsp", framing="lsp")
    d.send_body(b'{"jsonrpc":"2.0","method":"ping","id":1}')
    assert d.next_response()["result"] == {}


def test_responses_come_back_in_any_order(daemons: list[Daemon], exe: Path, slow_corpus: Path) -> None:
    d = spawn(daemons, exe)
    slow = start_slow_grep(d, slow_corpus, exe)
    assert d.result("ping") == {}  # answered while the search runs
    d.notify("$/cancelRequest", {"id": slow})
    assert d.wait_for(slow)["error"]["code"] == -32800


def test_stdin_eof_exits_0_after_running_requests_finish(daemons: list[Daemon], exe: Path, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    d = spawn(daemons, exe)
    rid = d.request("grep", {"pattern": "needle", "cwd": str(tmp_path)})
    d.close_stdin()
    assert d.wait_for(rid)["result"]["text"] == "Found 1 match\n\na.txt\nLine 1: needle"
    assert d.wait_exit(10) == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_during_a_running_search(daemons: list[Daemon], exe: Path, slow_corpus: Path, sig: int) -> None:
    d = spawn(daemons, exe)
    rid = start_slow_grep(d, slow_corpus, exe)
    children = descendants(d.proc.pid)
    started = time.monotonic()
    d.signal(sig)
    assert d.wait_exit(GRACE_MS / 1000 + 1) == 0
    assert time.monotonic() - started <= GRACE_MS / 1000 + 1
    answer = d.wait_for(rid, timeout=2)
    assert answer["error"]["code"] == 1004 and answer["error"]["data"]["code"] == "SEARCH_ABORTED"
    assert wait_until(lambda: not [p for p in children if os.path.exists(f"/proc/{p}") and alive(p)], 2)


def test_exit_notification(daemons: list[Daemon], exe: Path) -> None:
    d = spawn(daemons, exe)
    assert d.result("ping") == {}
    d.notify("exit")
    assert d.wait_exit(5) == 0


def test_shutdown_then_exit(daemons: list[Daemon], exe: Path, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    d = spawn(daemons, exe)
    search = d.request("grep", {"pattern": "needle", "cwd": str(tmp_path)})
    down = d.request("shutdown")
    assert "result" in d.wait_for(search)
    assert d.wait_for(down) == {"jsonrpc": "2.0", "result": None, "id": down}
    late = d.call("ping")
    assert late["error"] == {"code": -32600, "message": "server is shutting down"}
    d.notify("exit")
    assert d.wait_exit(5) == 0


def test_host_closing_our_stdout_ends_the_daemon(exe: Path, slow_corpus: Path) -> None:
    tag = new_tag()
    proc = subprocess.Popen(
        [str(exe), "--sample-over-cap-glob-results", "false"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, TAG_VARIABLE: tag},
    )
    assert proc.stdin is not None and proc.stdout is not None
    body = f'{{"jsonrpc":"2.0","method":"grep","params":{{"pattern":"{SLOW_PATTERN}","cwd":"{slow_corpus}"}},"id":1}}\n'
    proc.stdin.write(body.replace("\\", "\\\\").encode())
    proc.stdin.flush()
    assert wait_until(lambda: bool(tagged(tag, "-rg "))), "rg never started"
    proc.stdout.close()  # the host stops listening but keeps stdin open
    assert proc.wait(timeout=10) == 0
    proc.stdin.close()
    assert not tagged(tag, "-rg ")


def test_notifications_are_never_answered(daemons: list[Daemon], exe: Path) -> None:
    d = spawn(daemons, exe)
    for method in ("ping", "glob", "nope", "$/setTrace", "notifications/initialized"):
        d.notify(method, {"pattern": 5})
    assert d.result("ping") == {}
    assert d.no_response(0.3)


def test_initialize_and_discover(daemons: list[Daemon], exe: Path) -> None:
    d = spawn(daemons, exe)
    init = d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
    assert init["protocolVersion"] == "2025-06-18"
    assert init["serverInfo"] == {"name": "dsh-search", "version": "0.1.0"}
    # listChanged: terminal_search joins the list once a scrollback exists; logging: notifications/message;
    # resources: the spill artifacts capped results link to.
    assert init["capabilities"] == {"tools": {"listChanged": True}, "logging": {}, "resources": {}}
    assert init["ripgrep"] == {"path": str(sidecar_of(exe)), "version": "15.2.0"}
    assert init["config"]["graceMs"] == GRACE_MS and init["config"]["sampleOverCapGlobResults"] is False
    assert (
        init["instructions"].startswith("Use the glob tool — not shell find")
        and "\n\nUse the grep tool" in init["instructions"]
    )
    assert d.result("initialize", {"protocolVersion": "1999-01-01"})["protocolVersion"] == "2025-11-25"
    doc = d.result("rpc.discover")
    assert doc["openrpc"] == "1.3.2"
    names = {m["name"] for m in doc["methods"]}
    assert {"initialize", "ping", "shutdown", "exit", "glob", "grep", "spill/read", "tools/list", "tools/call"} <= names
    glob = next(m for m in doc["methods"] if m["name"] == "glob")
    assert [p["name"] for p in glob["params"] if p["required"]] == ["pattern"]
    assert {e["code"] for e in glob["errors"]} >= {-32602, 1001, 1002, 1003, 1004}
