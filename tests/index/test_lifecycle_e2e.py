"""The workspace index and its host: a daemon that exits on time whatever its index is doing, leaves
nothing behind when killed, never makes a search wait for a build, says what its build is doing, and
shares one index per workspace with the other daemons on it."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.index.test_index_e2e import FRAMINGS, normalised, ready, same, tree
from tests.support.daemon import Daemon, MakeDaemon
from tests.support.processes import alive, wait_until
from tests.support.trees import SLOW_PATTERN, files_named, write, write_slow_corpus

pytestmark = pytest.mark.e2e

GRACE_MS = 1000
EXIT_WITHIN_S = GRACE_MS / 1000 + 1  # the promise (docs/hosts.md): graceMs + 1 s


FILLER = "".join(f"static int filler_{n} = {n * 7919 % 1000003};\n" for n in range(400))  # ~15 KB of text


def big_tree(root: Path, files: int = 8_000, filler: bool = True) -> Path:
    """Enough text (~120 MB) that a first build takes many seconds on this machine."""
    for i in range(files):
        body = f"int f{i}(void) {{ return {i}; }} // TOKEN_{i}\n" + (FILLER if filler else "")
        write(root, f"d{i % 97}/e{i % 13}/f{i}.c", body, 1_000_000 + i)
    write(root, ".gitignore", "*.log\n", 900)
    return root


def status_of(d: Daemon) -> dict[str, Any]:
    return d.result("index/status")  # type: ignore[no-any-return]


def stop_and_time(d: Daemon, how: str) -> float:
    """End the daemon by stdin EOF or SIGTERM; the seconds until it has exited."""
    started = time.monotonic()
    if how == "eof":
        d.close_stdin()
    else:
        d.signal(signal.SIGTERM)
    assert d.wait_exit(EXIT_WITHIN_S + 5) == 0
    return time.monotonic() - started


def index_args(index_dir: Path, *extra: str) -> tuple[str, ...]:
    return ("--index", "on", "--index-dir", str(index_dir), "--grace-ms", str(GRACE_MS), *extra)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big_tree(tmp_path_factory.mktemp("big") / "w")


# --- exit on time, whatever the index does ---------------------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_exit_on_time_during_a_first_build(
    start: MakeDaemon, big: Path, tmp_path: Path, framing: str, how: str
) -> None:
    d = start("--workdir", str(big), *index_args(tmp_path / "index"), framing=framing)
    assert wait_until(lambda: status_of(d).get("indexed", 0) > 0, 60), status_of(d)  # reading files
    assert status_of(d)["state"] == "building"
    assert stop_and_time(d, how) <= EXIT_WITHIN_S
    # What it committed stays, and the next daemon goes on from it (it is trusted: it ends ready).
    again = start("--workdir", str(big), *index_args(tmp_path / "index"), framing=framing)
    ready(again, timeout=120)


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_exit_on_time_while_catching_up_after_a_checkout(
    start: MakeDaemon, tmp_path: Path, framing: str, how: str
) -> None:
    root = big_tree(tmp_path / "w", 4000, filler=False)
    d = start("--workdir", str(root), *index_args(tmp_path / "index"), framing=framing)
    ready(d, timeout=120)
    for i in range(3000):  # a checkout: 3,000 files rewritten at once (with more text than before)
        (root / f"d{i % 97}" / f"e{i % 13}" / f"f{i}.c").write_text(f"int g{i}; // CHECKED_OUT_{i}\n" + FILLER * 2)
    assert wait_until(lambda: status_of(d)["changed"] > 0, 30)
    assert stop_and_time(d, how) <= EXIT_WITHIN_S


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_exit_on_time_while_the_index_is_built_again(
    start: MakeDaemon, big: Path, tmp_path: Path, framing: str, how: str
) -> None:
    index_dir = tmp_path / "index"
    d = start("--workdir", str(big), *index_args(index_dir), framing=framing)
    ready(d, timeout=120)
    for shard in files_named(index_dir, "content-*.sqlite"):
        shard.write_bytes(b"not a database")  # the index fails, and is built again after a pause
    assert "result" in d.call("grep", {"pattern": "TOKEN_77"})
    assert wait_until(lambda: status_of(d)["state"] == "building" and status_of(d).get("indexed", 0) > 0, 60)
    assert stop_and_time(d, how) <= EXIT_WITHIN_S


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_exit_on_time_while_grep_is_listed_again(
    start: MakeDaemon, big: Path, tmp_path: Path, framing: str, how: str
) -> None:
    d = start("--workdir", str(big), *index_args(tmp_path / "index"), framing=framing)
    ready(d, timeout=120)
    rules = big / "d1" / ".ignore"
    rules.write_text("e1/\n")  # ripgrep lists grep's files again, in the background
    try:
        assert "result" in d.call("grep", {"pattern": "TOKEN_1"})
        assert stop_and_time(d, how) <= EXIT_WITHIN_S
    finally:
        rules.unlink()


# --- nothing left behind -----------------------------------------------------------------------------------------


def kill_daemon(d: Daemon) -> None:
    """SIGKILL the serving process and its launcher, as a host (or the OOM killer) would."""
    pids = [d.proc.pid]
    with contextlib.suppress(AssertionError):
        pids.insert(0, d.server_pid)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    d.proc.wait(timeout=10)


KILLS = 50  # a multiple of 5: the last daemon killed wrote files and searched


def test_killed_at_random_instants_it_leaves_nothing_a_later_start_does_not_clean(
    start: MakeDaemon, tmp_path: Path
) -> None:
    root = big_tree(tmp_path / "w", 2500, filler=False)
    index_dir = tmp_path / "index"
    rnd = random.Random(26)
    for i in range(KILLS):
        d = start("--workdir", str(root), *index_args(index_dir))
        d.request("index/status")  # the index opens when asked: building, catching up or ready
        if i % 5 == 4:  # now and then, while it answers and catches up
            for j in range(20):
                (root / "d3" / "e3" / f"late{i}_{j}.c").write_text(f"// LATE_{i}_{j}\n")
            d.request("grep", {"pattern": f"LATE_{i}_1"})
        time.sleep(rnd.uniform(0.0, 1.2))  # the start, the build, answering, catching up
        kill_daemon(d)
    survivor = start("--workdir", str(root), *index_args(index_dir))
    ready(survivor, timeout=120)
    off = start("--workdir", str(root), "--index", "off")
    for pattern in ("TOKEN_1234", f"LATE_{KILLS - 1}_1", "LATE_4_[0-9]"):
        same(survivor, off, "grep", {"pattern": pattern})
    same(survivor, off, "glob", {"pattern": "**/late*.c"})
    # One set, its lock and trust record, the owner's lock, its socket's name and the use stamp: nothing else.
    (workspace,) = [p for p in index_dir.iterdir() if p.is_dir()]
    entries = sorted(p.name for p in workspace.iterdir())
    sets = [p for p in workspace.iterdir() if p.is_dir()]
    assert [p.name.startswith("set-") for p in sets] == [True], entries
    names = sorted(p.name for p in sets[0].iterdir())
    segments = [n for n in names if n.endswith(".grams")]  # at most a few per shard, named by their shard
    assert {n.split(".")[0] for n in segments} <= {"content-0", "content-1"}, names
    assert [n for n in names if n not in segments] == [
        "content-0.sqlite",
        "content-0.sqlite-wal",
        "content-1.sqlite",
        "content-1.sqlite-wal",
        "lock",
        "trust",
    ]
    assert {p.name for p in workspace.iterdir() if not p.is_dir()} == {"owner.lock", "owner.addr", "used"}


# --- no search waits on a build; the build says what it does ----------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
def test_with_index_on_a_cold_tree_is_searched_at_once_and_the_progress_says_why(
    start: MakeDaemon, big: Path, tmp_path: Path, framing: str
) -> None:
    slow = write_slow_corpus(tmp_path / "slow", files=1, lines=200_000)
    d = start("--workdir", str(big), *index_args(tmp_path / "index"), framing=framing)
    answer = d.call("grep", {"pattern": "TOKEN_4242"}, timeout=60)
    assert answer["result"]["text"].startswith("Found 1 match"), answer
    assert status_of(d)["state"] == "building"  # answered by a walk: it did not wait for the build
    # A slow search meanwhile: its progress says it walks because the index is building, and how far.
    slow_link = big / "zz-slow"
    slow_link.symlink_to(slow)
    try:
        rid = d.request("grep", {"pattern": SLOW_PATTERN, "path": "zz-slow/", "_meta": {"progressToken": "p"}})
        assert "result" in d.wait_for(rid, timeout=60)
    finally:
        slow_link.unlink()
    progress = [n["params"]["message"] for n in d.notifications if n.get("method") == "notifications/progress"]
    assert any("(walking the tree: the workspace index is building" in m for m in progress), progress


def test_the_build_is_visible_at_the_default_log_level_and_to_an_mcp_client(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    d = start("--workdir", str(root), "--index", "on", "--index-dir", str(tmp_path / "index"))
    d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
    ready(d)
    assert wait_until(lambda: "ready:" in d.stderr, 10), d.stderr
    assert "NOTICE dsh_search.index: workspace index of" in d.stderr and "building it" in d.stderr
    d.stop()
    # An MCP client hears it too (a daemon that starts the build after the client said who it is).
    e = start("--workdir", str(root), "--index", "auto", "--index-dir", str(tmp_path / "index2"))
    e.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
    e.notify("notifications/initialized")
    write_slow_corpus(root / "slow", files=1, lines=200_000)
    e.result("grep", {"pattern": SLOW_PATTERN}, timeout=60)  # a slow walk: auto builds
    assert wait_until(
        lambda: any(
            n.get("method") == "notifications/message" and "ready" in str(n["params"].get("data"))
            for n in e.notifications
        ),
        60,
    ), e.notifications
    messages = [n["params"] for n in e.notifications if n.get("method") == "notifications/message"]
    assert any(m["level"] == "notice" and "building it" in m["data"] for m in messages), messages


# --- one index per workspace --------------------------------------------------------------------------------------


def test_three_daemons_on_one_workspace_share_one_index_and_survive_its_owner(
    start: MakeDaemon, tmp_path: Path
) -> None:
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    daemons = [start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir)) for _ in range(3)]
    off = start("--workdir", str(root), "--index", "off")
    for d in daemons:
        ready(d)
    roles = sorted(status_of(d)["role"] for d in daemons)
    assert roles == ["guest", "guest", "owner"], roles
    (workspace,) = [p for p in index_dir.iterdir() if p.is_dir()]
    assert len([p for p in workspace.iterdir() if p.name.startswith("set-")]) == 1  # one build, one set
    for i in range(6):  # through edits, every daemon answers as the walk does
        write(root, f"src/m{i % 4}/edit{i}.c", f"// EDITED_{i}\n", 9000 + i)
        for d in daemons:
            same(d, off, "grep", {"pattern": f"EDITED_{i}"})
            same(d, off, "glob", {"pattern": f"**/edit{i}.c"})
    guests = [d for d in daemons if status_of(d)["role"] == "guest"]
    assert all(sum(status_of(g)["answered"].values()) > 0 for g in guests)  # from the owner's index
    (owner,) = [d for d in daemons if status_of(d)["role"] == "owner"]
    kill_daemon(owner)
    assert wait_until(lambda: sorted(status_of(g)["role"] for g in guests) == ["guest", "owner"], 30)
    for g in guests:
        ready(g)
    for i in range(6, 10):  # the survivors keep it fresh
        write(root, f"src/m{i % 4}/edit{i}.c", f"// EDITED_{i}\n", 9000 + i)
        for g in guests:
            assert normalised(g.call("grep", {"pattern": f"EDITED_{i}"})) == normalised(
                off.call("grep", {"pattern": f"EDITED_{i}"})
            )
    (new_owner,) = [g for g in guests if status_of(g)["role"] == "owner"]
    before = sum(status_of(new_owner)["answered"].values())
    same(new_owner, off, "grep", {"pattern": "EDITED_9"})
    assert sum(status_of(new_owner)["answered"].values()) == before + 1


@pytest.mark.parametrize("how", ["eof", "exit"])
def test_an_owner_leaving_with_guests_connected_says_so_in_one_notice(
    start: MakeDaemon, tmp_path: Path, how: str
) -> None:
    """Normal life (two agents on one repository, one done first): the owner's stderr has one notice line
    for it, and no ERROR and no traceback; the guest goes on and takes the index over."""
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    owner, guest = (start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir)) for _ in range(2))
    for d in (owner, guest):
        ready(d)
    if status_of(owner)["role"] != "owner":
        owner, guest = guest, owner
    guest.result("grep", {"pattern": "EDITED"})  # the guest asks the owner: it is connected
    assert sum(status_of(guest)["answered"].values()) > 0
    if how == "exit":
        owner.notify("exit")
    else:
        owner.close_stdin()
    assert owner.wait_exit(10) == 0
    err = owner.stderr
    assert "ERROR" not in err and "Traceback" not in err and "CancelledError" not in err, err
    assert err.count("leaves with 1 other daemon using it") == 1, err
    assert wait_until(lambda: status_of(guest)["role"] == "owner", 30)
    assert "ERROR" not in guest.stderr and "Traceback" not in guest.stderr, guest.stderr


HOST = """
import subprocess, sys, time
daemon = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
daemon.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"index/status"}\\n')  # the index opens when asked
daemon.stdin.flush()
print(daemon.pid, flush=True)
time.sleep(600)
"""


def test_a_host_killed_while_its_daemon_builds_leaves_nothing(exe: Path, big: Path, tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    index_dir = tmp_path / "index"
    argv = [str(exe), "--sample-over-cap-glob-results", "true", "--workdir", str(big), *index_args(index_dir)]
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, *argv], stdout=subprocess.PIPE, env={**os.environ, "TMPDIR": str(temp)}
    )
    assert host.stdout is not None
    launcher = int(host.stdout.readline())
    assert wait_until(lambda: bool(files_named(index_dir, "content-0.sqlite")), 60)  # building
    children = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
    host.kill()  # SIGKILL: the host's ends of the pipes close, nothing else tells the daemon
    host.wait()
    started = time.monotonic()
    assert wait_until(lambda: not any(alive(int(p)) for p in [launcher, *children]), EXIT_WITHIN_S + 5)
    assert time.monotonic() - started <= EXIT_WITHIN_S + 1
    assert not list(temp.glob("_MEI*"))  # the launcher removed its extraction directory
    # The next daemon cleans or reuses what is left: once it reads files into a set, that set is the only one.
    d = Daemon(argv[1:], exe=exe)
    try:
        assert wait_until(lambda: status_of(d)["state"] in ("building", "ready") and status_of(d).get("indexed", 1))
        (workspace,) = [p for p in index_dir.iterdir() if p.is_dir()]
        assert len([p for p in workspace.iterdir() if p.name.startswith("set-")]) == 1
    finally:
        d.stop()
