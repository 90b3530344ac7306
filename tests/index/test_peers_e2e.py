"""Daemons sharing one workspace's index, as a hostile user or an unlucky host meets them (issue 31): a guest
whose view of the files differs from the owner's, an owner that stops answering, an index directory
another user made or can write, and the owner's rendezvous taken first. Every answer is checked against a
daemon with the index off and the same view."""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_search.index.sets import workspace_key
from tests.index.test_index_e2e import normalised, ready, same, tree
from tests.support.daemon import Daemon, MakeDaemon
from tests.support.processes import wait_until
from tests.support.trees import remove_tree, write
from tests.support.unprivileged import NOBODY, unprivileged_popen, unprivileged_tree

pytestmark = pytest.mark.e2e

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as, or for, another user")


def status_of(d: Daemon) -> dict[str, Any]:
    return d.result("index/status")  # type: ignore[no-any-return]


def answered(d: Daemon) -> int:
    return sum(status_of(d).get("answered", {}).values())


def on(start: MakeDaemon, root: Path, index_dir: Path, *extra: str, **kw: Any) -> Daemon:
    return start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir), *extra, **kw)


# --- a guest asks only an owner with its own view ---------------------------------------------------------------


def test_a_guest_with_other_global_excludes_walks_and_says_why(start: MakeDaemon, tmp_path: Path) -> None:
    """Another XDG_CONFIG_HOME, whose git excludes ignore `*.c`: the owner's answers hold files the guest's
    own walk skips."""
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    home = tmp_path / "home"
    home.mkdir()
    xdg = tmp_path / "xdg"
    write(xdg, "git/ignore", "*.c\n")
    plain = {**os.environ, "HOME": str(home)}
    plain.pop("XDG_CONFIG_HOME", None)
    other = {**plain, "XDG_CONFIG_HOME": str(xdg)}
    owner = on(start, root, index_dir, env=plain)
    ready(owner)
    guest = on(start, root, index_dir, env=other)
    same_view = on(start, root, index_dir, env=plain)
    off = start("--workdir", str(root), "--index", "off", env=other)
    for pattern in ("SUSPEND_1", "int f"):
        same(guest, off, "grep", {"pattern": pattern})
        assert "SUSPEND" not in guest.result("grep", {"pattern": "SUSPEND_1"})["text"]
    same(guest, off, "glob", {"pattern": "**/*.c"})  # glob lists ignored files: the same either way
    status = status_of(guest)
    assert status["role"] == "guest" and status["state"] == "off", status
    assert "XDG_CONFIG_HOME" in status["reason"] and "searches walk" in status["reason"], status
    assert answered(guest) == 0
    # A guest with the owner's view is answered from the index.
    same(same_view, start("--workdir", str(root), "--index", "off", env=plain), "grep", {"pattern": "SUSPEND_1"})
    assert answered(same_view) > 0


@ROOT_ONLY
def test_a_guest_with_other_supplementary_groups_walks(start: MakeDaemon) -> None:
    """The same user in other groups: the owner lists a directory the guest's walk cannot read."""
    group = 4242
    with unprivileged_tree() as base:
        root = base / "w"
        for i in range(6):
            write(root, f"pub/f{i}.txt", f"NEEDLE {i}\n")
        write(root, "grp/secret.txt", "NEEDLE in the group's directory\n")
        os.chown(root / "grp", 0, group)
        (root / "grp").chmod(0o750)
        for made in (root, root / "pub", *(root / "pub").iterdir()):
            os.chown(made, NOBODY, NOBODY)
        index_dir = base / "index"  # made by the owner: the unprivileged user's
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(base)}
        as_member = {**unprivileged_popen(), "extra_groups": [group]}
        owner = on(start, root, index_dir, env=env, **as_member)
        ready(owner)
        assert "grp/secret.txt" in owner.result("glob", {"pattern": "**/*.txt"})["text"]
        guest = on(start, root, index_dir, env=env, **unprivileged_popen())
        off = start("--workdir", str(root), "--index", "off", env=env, **unprivileged_popen())
        for method, params in (("glob", {"pattern": "**/*.txt"}), ("grep", {"pattern": "NEEDLE"})):
            got = same(guest, off, method, params)
            assert "could not be read" in got["result"]["text"], got
        status = status_of(guest)
        assert status["role"] == "guest" and "supplementary groups" in status["reason"], status
        assert answered(guest) == 0


# --- a stalled owner costs a bounded wait ---------------------------------------------------------------------------


def test_a_stopped_owner_costs_its_guests_a_bounded_wait(start: MakeDaemon, tmp_path: Path) -> None:
    """SIGSTOP (Ctrl-Z on a terminal agent): questions queued on one lock without a time limit, and most
    of ten concurrent greps ran out of their 5 s budget where a walk takes milliseconds."""
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    owner = on(start, root, index_dir)
    ready(owner)
    guest = on(start, root, index_dir, "--timeout-ms", "5000")
    off = start("--workdir", str(root), "--index", "off")
    same(guest, off, "grep", {"pattern": "SUSPEND_2"})
    assert answered(guest) == 1  # from the owner's index
    serving = owner.server_pid
    os.kill(serving, signal.SIGSTOP)
    try:
        params = [{"pattern": f"SUSPEND_{i}"} for i in range(10)]
        ids = [guest.request("grep", p) for p in params]
        started = time.monotonic()
        got = [guest.wait_for(i, timeout=30) for i in ids]
        waited = time.monotonic() - started
        for answer, p in zip(got, params, strict=True):
            assert normalised(answer) == normalised(off.call("grep", p)), answer  # none SEARCH_ABORTED
        # Each question waits at most 5 % of the budget (250 ms), all at once, not one after another.
        assert waited < 5.0, waited
        status = status_of(guest)
        assert status["state"] == "off" and "did not answer within 250 ms" in status["reason"], status
        assert answered(guest) == 1
    finally:
        os.kill(serving, signal.SIGCONT)
    # Once it answers again, the guest asks it again (after STALLED_S).
    assert wait_until(lambda: guest.result("grep", {"pattern": "SUSPEND_3"}) and answered(guest) > 1, 20)


# --- the index directory must be this user's alone -------------------------------------------------------------------


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user can reach (as /tmp is), for a second user's directories."""
    base = Path(tempfile.mkdtemp(prefix="dsh-shared-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        remove_tree(base)


def _snapshot(directory: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p): (p.stat().st_uid, p.stat().st_mode, p.stat().st_size) for p in sorted(directory.rglob("*"))}


@ROOT_ONLY
@pytest.mark.parametrize("whose", ["another user's", "the daemon user's, writable by all"])
def test_an_index_directory_another_user_can_write_is_never_used(start: MakeDaemon, shared: Path, whose: str) -> None:
    """Another user pre-creates the workspace's index set, open to all, with a matching trust record: the
    daemon adopted it, wrote the index (paths and trigrams) where that user reads it, and trusted the rows
    that user deleted."""
    root = tree(shared / "w")
    index_dir = shared / "index"
    workspace = index_dir / workspace_key(str(root.resolve()))
    (workspace / "set-00000000").mkdir(parents=True)
    write(workspace / "set-00000000", "trust", '{"version": 1, "files": {}}')
    for made in (index_dir, workspace, workspace / "set-00000000"):
        made.chmod(0o777)
        if whose == "another user's":
            os.chown(made, NOBODY, NOBODY)
    before = _snapshot(index_dir)
    d = on(start, root, index_dir)
    off = start("--workdir", str(root), "--index", "off")
    status = status_of(d)
    assert status["state"] == "off" and str(index_dir) in status["reason"], status
    assert "use a directory of your own" in status["reason"] or "chmod 700" in status["reason"], status
    for pattern in ("SUSPEND_1", "int f"):
        same(d, off, "grep", {"pattern": pattern})
    assert _snapshot(index_dir) == before  # nothing written, nothing removed
    assert str(index_dir) in d.stderr  # and the log says which directory, and the fix


def test_the_index_directory_and_its_parents_are_made_private(start: MakeDaemon, tmp_path: Path) -> None:
    """The default layout, in a fresh XDG_CACHE_HOME: every directory the daemon makes is 0700 (the index
    directory's parent listed every workspace's name)."""
    root = tree(tmp_path / "w")
    cache = tmp_path / "cache"
    d = Daemon(
        ["--sample-over-cap-glob-results", "true", "--workdir", str(root), "--index", "on"],
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        index=False,
    )
    try:
        status = ready(d)
    finally:
        d.stop()
    workspace = Path(status["dir"])
    assert workspace.parent == cache / "dsh-search" / "index"
    for level in (cache, cache / "dsh-search", cache / "dsh-search" / "index", workspace):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700, level


# --- the owner's rendezvous ------------------------------------------------------------------------------------------

SQUATTER = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1].encode("latin-1").replace(b"@", b"\\0", 1))
s.listen(1)
print("bound", flush=True)
time.sleep(600)
"""


@ROOT_ONLY
def test_another_user_cannot_take_the_owners_rendezvous(start: MakeDaemon, tmp_path: Path) -> None:
    """The owner's socket had a name anyone could compute (the index directory and the uid): another
    user who bound it first left the owner without a socket for good, and every guest walked."""
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    workspace = index_dir / workspace_key(str(root.resolve()))
    digest = hashlib.sha256(f"{os.getuid()}:{os.path.realpath(workspace)}".encode()).hexdigest()[:40]
    squatter = subprocess.Popen(
        ["/usr/bin/python3", "-c", SQUATTER, f"@dsh-search-index-{digest}"],
        stdout=subprocess.PIPE,
        cwd="/",
        **unprivileged_popen(),
    )
    try:
        assert squatter.stdout is not None and squatter.stdout.readline() == b"bound\n"
        owner = on(start, root, index_dir)
        ready(owner)
        guest = on(start, root, index_dir)
        off = start("--workdir", str(root), "--index", "off")
        same(guest, off, "grep", {"pattern": "SUSPEND_1"})
        assert answered(guest) == 1 and status_of(guest)["role"] == "guest"
        assert "guests" not in status_of(owner)
        # Nor can that user learn the name the owner chose.
        probe = subprocess.run(
            ["/usr/bin/python3", "-c", f"open({str(workspace / 'owner.addr')!r})"],
            check=False,
            cwd="/",
            capture_output=True,
            **unprivileged_popen(),
        )
        assert probe.returncode != 0 and b"PermissionError" in probe.stderr
    finally:
        squatter.kill()
        squatter.wait()


def test_an_owner_that_cannot_listen_says_so_and_tries_again(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    workspace = index_dir / workspace_key(str(root.resolve()))
    (workspace / "owner.addr").mkdir(parents=True)  # where the owner publishes its socket's name: blocked
    for level in (index_dir, workspace):
        level.chmod(0o700)
    owner = on(start, root, index_dir)
    ready(owner)
    assert wait_until(lambda: "guests" in status_of(owner), 10)
    assert "cannot ask this one" in status_of(owner)["guests"] and "trying again" in status_of(owner)["guests"]
    assert "cannot ask this one" in owner.stderr
    guest = on(start, root, index_dir)
    off = start("--workdir", str(root), "--index", "off")
    same(guest, off, "grep", {"pattern": "SUSPEND_1"})
    assert answered(guest) == 0
    (workspace / "owner.addr").rmdir()
    assert wait_until(lambda: "guests" not in status_of(owner), 20)
    assert wait_until(lambda: bool(same(guest, off, "grep", {"pattern": "SUSPEND_2"})) and answered(guest) > 0, 20)
