"""What crosses the channel, through a real sshd: arguments, stdin EOF, signals, the host's death, names that
exist on one side only, and the installer's refusals.

The Python client (in this process) against `machine` (sshd in namespaces of its own, over a veth pair) and
`loopback` (sshd on 127.0.0.1); tests/remote/test_hosts_e2e.py runs whole sessions of the three clients.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsh_search_bin import Client, ClosedError, InstallError, StartupError, install_remote
from tests.remote.conftest import far_tree
from tests.support.machine import Machine
from tests.support.processes import wait_until
from tests.support.trees import SLOW_PATTERN, write
from tests.support.unprivileged import NOBODY

pytestmark = pytest.mark.e2e

HOSTS = Path(__file__).resolve().parent / "hosts"
# Everything a shell would take apart: spaces, both quotes, $, backquotes, a glob, a newline, backslashes
# and a leading dash.
ODD = '-x it\'s "so" $HOME `id` $(id) * ~\nnext \\ line'


def run(coro: object) -> object:
    return asyncio.run(asyncio.wait_for(coro, 120))  # type: ignore[arg-type]


def test_arguments_reach_the_far_side_intact(loopback: Machine) -> None:
    workspace = '-ws it\'s "so" $HOME\nx'  # relative: in the far side's home
    write(loopback.home / workspace, "found.txt", "needle\n")
    spill = f"{loopback.far(loopback.tmp)}/{ODD}"

    async def session() -> None:
        async with Client(
            launcher=loopback.launcher(),
            sample_over_cap_glob_results=True,
            workdir=workspace,
            spill_dir=spill,
            args=["--spill-retrieval-hint", ODD, "--deny-glob=-*", "--index", "off"],  # a leading dash: --flag=value
        ) as client:
            assert client.initialize_result is not None
            config = client.initialize_result.config
            assert (config["spillRetrievalHint"], config["spillDir"], config["denyGlobs"]) == (ODD, spill, ["-*"])
            found = await client.grep("needle")
            assert found.text == "Found 1 match\n\nfound.txt\nLine 1: needle"

    run(session())


def test_stdin_eof_through_ssh_answers_what_was_asked(machine: Machine) -> None:
    workdir = far_tree(machine, "ws-eof")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "grep", "params": {"pattern": "TODO"}},
        {"jsonrpc": "2.0", "id": 2, "method": "glob", "params": {"pattern": "**/*.js"}},
    ]
    done = subprocess.run(
        [*machine.launcher(), f"dsh-search --sample-over-cap-glob-results true --workdir {workdir} --index off"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a["result"]["text"] for a in map(json.loads, done.stdout.splitlines())}
    assert answers == {1: answers[1], 2: "src/app.js\nsrc/util.js"} and answers[1].startswith("Found 2 matches")


def _slow_grep_running(machine: Machine) -> bool:
    return any("dsh-search-rg" in cmd for cmd in machine.processes().values())


def test_sigterm_to_the_launcher_ends_the_far_side(machine: Machine, far_slow: str) -> None:
    async def session() -> float:
        client = Client(
            launcher=machine.launcher(),
            sample_over_cap_glob_results=True,
            workdir=far_slow,
            args=["--index", "off", "--timeout-ms", "120000"],
        )
        await client.start()
        grep = asyncio.create_task(client.grep(SLOW_PATTERN))
        while not await asyncio.to_thread(_slow_grep_running, machine):
            assert not grep.done()
        assert client.pid is not None
        os.kill(client.pid, signal.SIGTERM)  # the pid a host holds is its launcher's, ssh's
        sent = time.monotonic()
        with pytest.raises(ClosedError):
            await grep
        await asyncio.to_thread(wait_until, lambda: not machine.processes(), 15)
        took = time.monotonic() - sent
        await client.close()
        return took

    took = run(session())
    assert not machine.processes() and isinstance(took, float) and took < 5, (took, machine.processes())


def test_a_host_killed_with_its_ssh_leaves_nothing(machine: Machine, far_slow: str, tmp_path: Path) -> None:
    """The host and its launcher die together (their process group): the connection drops, sshd closes the
    session's pipes, and the daemon stops as at once."""
    workdir = far_tree(machine, "ws-group")
    config = {"mode": "hang", "launcher": machine.launcher(), "workdir": workdir, "slow": far_slow}
    host = subprocess.Popen(
        [sys.executable, str(HOSTS / "python_host.py"), json.dumps(config)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=tmp_path,
    )
    try:
        assert host.stdout is not None and host.stdout.readline().strip() == "slow grep: started"
        assert wait_until(lambda: _slow_grep_running(machine), timeout=20), machine.processes()
        os.killpg(host.pid, signal.SIGKILL)
        assert wait_until(lambda: not machine.processes(), timeout=5), machine.processes()
    finally:
        if host.poll() is None:
            os.killpg(host.pid, signal.SIGKILL)
        host.wait()


def test_what_exists_on_this_side_only_is_named(machine: Machine, tmp_path: Path) -> None:
    here_only = tmp_path / "ws"  # a workspace of this machine: the far side has no such directory
    here_only.mkdir()

    async def session() -> None:
        with pytest.raises(StartupError) as failed:
            await Client(
                launcher=machine.launcher(), sample_over_cap_glob_results=True, workdir=here_only, stderr="capture"
            ).start()
        assert failed.value.returncode == 2
        assert f"dsh-search: workdir {here_only} is not a directory" in str(failed.value)

    run(session())


def test_a_launcher_that_cannot_connect_says_so(machine: Machine) -> None:
    async def session() -> None:
        wrong = [*machine.launcher()[:-1], "-o", "Port=1", "machine"]
        with pytest.raises(StartupError, match=r"status 255 .*could not reach the far side") as failed:
            await Client(launcher=wrong, sample_over_cap_glob_results=True, stderr="capture").start()
        assert failed.value.returncode == 255

    run(session())


def test_the_installer_refuses_a_cache_planted_by_another_user(machine: Machine, dist_dir: Path) -> None:
    cache = machine.home / ".cache" / "dsh-search"
    subprocess.run(["rm", "-rf", str(cache)], check=True)
    cache.mkdir(parents=True)
    os.chown(cache, NOBODY, NOBODY)
    try:
        with pytest.raises(InstallError, match=r"^/root/\.cache/dsh-search is not a directory .*refusing to use it$"):
            run(install_remote(machine.launcher(), dist_dir))
        assert list(cache.iterdir()) == []
    finally:
        subprocess.run(["rm", "-rf", str(cache)], check=True)


def test_a_transfer_cut_on_the_way_installs_nothing(machine: Machine, dist_dir: Path, tmp_path: Path) -> None:
    """The host's end of the channel stops after 1 MB (a dropped connection, a host killed mid-transfer):
    the far side counts what arrived, says so, and keeps nothing of it."""
    cut = tmp_path / "cut-ssh"
    cut.write_text('#!/bin/sh\nhead -c 1000000 | exec "$@"\n')
    cut.chmod(0o755)
    builds = machine.home / ".cache" / "dsh-search" / "builds"
    subprocess.run(["rm", "-rf", str(builds)], check=True)
    with pytest.raises(InstallError, match=r"^the transfer was cut short: 1000000 of \d+ bytes arrived$"):
        run(install_remote([str(cut), *machine.launcher()], dist_dir, launcher_quote="shell"))
    assert list(builds.iterdir()) == []
