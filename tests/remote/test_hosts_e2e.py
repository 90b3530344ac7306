"""Each client library drives a daemon on the second machine through ssh, as a host would.

A host per language (tests/remote/hosts/: Python, Node, Go; the same steps, the same lines) installs the
build into the far side's empty per-user cache, then greps, globs, follows a capped result to its end
(spill/read pages and the read tool, on a locator this side cannot open), cancels a slow grep with
progress on, gets an error and a missing cwd, and closes. Then a host of that language whose launcher
finds the build in the full cache (nothing sent) starts a grep that would run for tens of seconds and is
killed with SIGKILL: nothing may be left on the far side — no daemon, no onefile launcher or its child, no
ripgrep, no sshd session — nor the host's ssh here, and no extraction directory in the far side's /tmp.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.remote.conftest import far_tree
from tests.support.hosts import find_line, go_run, go_toolchain, node_toolchain, npm_ci
from tests.support.machine import Machine
from tests.support.processes import alive, descendants, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOSTS = Path(__file__).resolve().parent / "hosts"
ROOT = Path(__file__).resolve().parents[2]
ABORTED = "Error: grep was aborted before completion (tool timeout or caller cancellation)"
REMOTE_HINT = (
    "The path is on the machine where dsh-search runs, which the host's own file tools cannot open: read it "
    "with dsh-search's read tool (offset/limit), or grep this path to search within it."
)


@pytest.fixture(scope="module")
def host_argv(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[str]]:
    built: dict[str, list[str]] = {}

    def argv(language: str) -> list[str]:
        if language not in built:
            if language == "python":
                built[language] = [sys.executable, str(HOSTS / "python_host.py")]
            elif language == "node":
                node, npm = node_toolchain()
                npm_ci(npm, ROOT / "clients" / "node")
                built[language] = [node, str(HOSTS / "node_host.mjs")]
            else:
                go, env = go_toolchain()
                binary = tmp_path_factory.mktemp("go-host") / "remote-host"
                go_run(go, env, ["vet", "./..."], HOSTS / "go")
                go_run(go, env, ["build", "-o", str(binary), "."], HOSTS / "go")
                built[language] = [str(binary)]
        return built[language]

    return argv


def cached_build(machine: Machine) -> dict[str, tuple[int, int]]:
    """The far side's cached builds: file → (inode, mtime); a transfer replaces files (new inodes)."""
    builds = machine.home / ".cache" / "dsh-search" / "builds"
    return {str(p): (p.stat().st_ino, p.stat().st_mtime_ns) for p in builds.rglob("*") if p.is_file()}


@pytest.mark.parametrize("language", ["python", "node", "go"])
def test_a_host_drives_the_far_side_then_dies(
    language: str,
    machine: Machine,
    far_slow: str,
    dist_dir: Path,
    host_argv: Callable[[str], list[str]],
    tmp_path: Path,
) -> None:
    workdir = far_tree(machine, f"ws-{language}")
    subprocess.run(["rm", "-rf", str(machine.home / ".cache" / "dsh-search" / "builds")], check=True)
    config = {"launcher": machine.launcher(), "workdir": workdir, "slow": far_slow, "install": str(dist_dir)}
    done = subprocess.run(
        [*host_argv(language), json.dumps({**config, "mode": "session"})],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[-1:] == ["done"], done.stdout + done.stderr

    # The empty cache was filled: the build is on the far side, in the user's cache, checked.
    installed = find_line(lines, r"install: (?P<path>/root/\.cache/dsh-search/builds/[0-9a-f]{64}/dsh-search)")["path"]
    assert machine.here(installed).read_bytes() == (dist_dir / "dsh-search").read_bytes()
    cache = cached_build(machine)
    assert len(cache) == 2
    find_line(lines, rf"initialize: dsh-search remote=true ripgrep={re.escape(installed)}-rg")
    find_line(lines, r"grep: Found 2 matches in docs/notes\.md, src/app\.js")
    find_line(lines, r"glob: src/app\.js, src/util\.js")
    # A capped result: its complete list saved on the far side, where this side cannot open it, and said so.
    capped = find_line(lines, r"capped: 100 of 150, saved at (?P<locator>/root/\.local/state/dsh-search/spill/\S+)")
    locator = capped["locator"]
    assert not Path(locator).exists() and machine.here(locator).is_file()
    find_line(lines, rf"footer: .*Full sorted result stored at: {re.escape(locator)}\. {re.escape(REMOTE_HINT)}\)")
    find_line(lines, r"spill pages: 150 lines, many/f000\.txt \.\. many/f149\.txt")
    find_line(lines, r"read: \s+150\tmany/f149\.txt")
    find_line(lines, rf"cancel: -32800 SEARCH_ABORTED {re.escape(ABORTED)}")
    find_line(lines, r"progress: [1-9]\d* reports, grep: \d+ matches in \d+ files? so far")
    find_line(lines, r"error: 1001 SEARCH_INVALID_PATTERN Error: grep pattern rejected by ripgrep: .*")
    find_line(
        lines,
        r"missing cwd: SEARCH_FAILED Error: grep could not start its search command: the directory "
        r"/nonexistent/on-the-far-side does not exist where dsh-search runs",
    )
    find_line(lines, r"close: status 0")
    assert wait_until(lambda: not machine.processes(), timeout=10), machine.processes()

    # A host whose build is in the full cache (nothing sent: the files are the very ones), killed mid-grep.
    hang = subprocess.Popen(
        [*host_argv(language), json.dumps({**config, "mode": "hang"})],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert hang.stdout is not None
        assert hang.stdout.readline().strip() == "slow grep: started", hang.stderr.read() if hang.stderr else ""
        assert wait_until(lambda: any("dsh-search-rg" in cmd for cmd in machine.processes().values()), timeout=20), (
            machine.processes()
        )
        far = machine.processes()
        assert any(cmd.startswith("sshd: root@notty") for cmd in far.values()), far
        assert sum("/dsh-search " in cmd + " " for cmd in far.values()) >= 2, far  # the onefile launcher, its child
        ssh = [pid for pid in descendants(hang.pid) if "ssh" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert ssh, "the host's launcher is not its child"
        os.kill(hang.pid, signal.SIGKILL)
        killed = time.monotonic()
        hang.wait(timeout=10)
        gone = wait_until(lambda: not machine.processes() and not any(alive(p) for p in ssh), timeout=15)
        took = time.monotonic() - killed
        assert gone, f"left after the host was killed: {machine.processes()}, ssh alive: {[alive(p) for p in ssh]}"
        # Far less than the grep would have run: the daemon stopped it (the channel closed), it did not finish.
        assert took < 5, took
    finally:
        if hang.poll() is None:
            hang.kill()
            hang.wait()
    assert cached_build(machine) == cache
    assert not list(machine.tmp.glob("_MEI*")), list(machine.tmp.iterdir())
