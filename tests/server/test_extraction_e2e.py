"""Nothing left behind by a killed daemon: the frozen executable's extraction directory (`_MEI*`).

Each test runs daemons with a temporary directory of their own, kills the launcher, the daemon (its
child), both, or the host that started them — with SIGKILL, at instants drawn from a seeded random
generator across the whole start (unpacking, the interpreter's start, serving) — and then checks what
docs/hosts.md promises: the daemon does not outlive its launcher, and once a later daemon has started
and swept, the temporary directory holds the directories of live daemons and nothing else. What a
kill leaves that only a sweep can remove is aged first (`os.utime`), as if the next start came later
than `MIN_AGE_S`: the sweep leaves younger directories alone, since they may still be unpacked into.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_search.extraction import MIN_AGE_S, launcher_pid
from tests.support.daemon import Daemon, index_args, text_of
from tests.support.processes import processes_named, wait_until
from tests.support.trees import SLOW_PATTERN

PING = b'{"jsonrpc":"2.0","method":"ping","id":1}\n'
PONG = b'{"jsonrpc":"2.0","result":{},"id":1}\n'
# The daemon ends within graceMs + 1 s of the signal its launcher's death sends; the slack is for a
# loaded machine (as in tests/support/hosts.py).
GONE_WITHIN_S = 10.0


class Scene:
    """Daemons that share one temporary directory, each findable by a tag on its command line."""

    def __init__(self, exe: Path, root: Path) -> None:
        self.exe = exe
        self.tmpdir = root / "tmp"
        self.tmpdir.mkdir()
        self.work = root / "work"
        self.work.mkdir()
        (self.work / "a.txt").write_text("needle\n")
        self.spill = root / "spill"
        self.env = {**os.environ, "TMPDIR": str(self.tmpdir)}
        self.started: list[subprocess.Popen[bytes]] = []

    def argv(self, *extra: str) -> list[str]:
        args = ["--sample-over-cap-glob-results", "false", "--workdir", str(self.work), "--spill-dir", str(self.spill)]
        return [str(self.exe), *args, *extra, *index_args(args)]

    def spawn(self, *extra: str, **popen: Any) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            self.argv(*extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self.env,
            **popen,
        )
        self.started.append(proc)
        return proc

    def processes(self) -> list[int]:
        """Live processes of this scene's daemons: launchers and their children."""
        return processes_named(str(self.work))

    def extractions(self) -> set[str]:
        return {p.name for p in self.tmpdir.iterdir()}

    def wait_gone(self) -> None:
        """Every daemon of the scene has ended (each SIGKILL's survivors included)."""
        left = self.processes()
        assert wait_until(lambda: not self.processes(), timeout=GONE_WITHIN_S), f"still running: {left}"
        for proc in self.started:
            if proc.poll() is None:
                proc.wait(timeout=GONE_WITHIN_S)

    def age_leftovers(self) -> None:
        """As if the next start came later than MIN_AGE_S after the kills."""
        then = time.time() - MIN_AGE_S - 60
        for path in self.tmpdir.iterdir():
            os.utime(path, (then, then), follow_symlinks=False)

    def own_extraction(self, proc: subprocess.Popen[bytes]) -> str:
        """The extraction directory of a running daemon: the one that carries its launcher's pid."""
        names = [n for n in self.extractions() if launcher_pid(n) == proc.pid]
        assert len(names) == 1, (names, self.extractions())
        return names[0]

    def assert_swept(self) -> None:
        """A daemon started now (beside one more that keeps running) sweeps what the kills left: then the
        temporary directory holds the two live daemons' directories only, and both still work."""
        self.age_leftovers()
        survivor = Daemon(self.argv()[1:], exe=self.exe, env=self.env, index=False)
        sweeper = Daemon(self.argv()[1:], exe=self.exe, env=self.env, index=False)
        try:
            assert survivor.result("ping") == {} and sweeper.result("ping") == {}
            live = {self.own_extraction(survivor.proc), self.own_extraction(sweeper.proc)}
            assert wait_until(lambda: self.extractions() == live), (self.extractions(), live)
            for d in (survivor, sweeper):  # the first grep imports msgspec, from the daemon's own directory
                assert text_of(d.call("grep", {"pattern": "needle"})).startswith("Found 1 match")
        finally:
            survivor.stop()
            sweeper.stop()
        assert wait_until(lambda: not self.extractions()), self.extractions()


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def serving_child(proc: subprocess.Popen[bytes]) -> int:
    """The launcher's child, the daemon itself (it exists once the launcher has unpacked)."""
    found: list[int] = []
    assert wait_until(lambda: bool(found.extend(children(proc.pid)) or found)), "the launcher started no child"
    return found[0]


def answer_ping(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(PING)
    proc.stdin.flush()
    assert proc.stdout.readline() == PONG


@pytest.fixture
def scene(exe: Path, tmp_path: Path) -> Iterator[Scene]:
    made = Scene(exe, tmp_path)
    yield made
    for proc in made.started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for pid in made.processes():
        os.kill(pid, signal.SIGKILL)


# -- the launcher killed ----------------------------------------------------------------------------------


def test_a_killed_launcher_takes_its_daemon_and_directory_with_it(scene: Scene, slow_corpus: Path) -> None:
    """SIGKILL of the launcher while a search runs: the daemon gets SIGTERM from the kernel (its parent
    died), stops the search and its ripgrep, exits, and removes the directory the launcher cannot."""
    sidecar = f"{scene.exe}-rg"
    proc = scene.spawn()
    answer_ping(proc)
    child = serving_child(proc)
    assert proc.stdin is not None
    grep = {"jsonrpc": "2.0", "method": "grep", "id": 2, "params": {"pattern": SLOW_PATTERN, "path": str(slow_corpus)}}
    proc.stdin.write(json.dumps(grep).encode() + b"\n")
    proc.stdin.flush()
    assert wait_until(lambda: bool(processes_named(sidecar, under=child))), "the grep never started rg"
    rg = processes_named(sidecar, under=child)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    scene.wait_gone()
    assert wait_until(lambda: not set(rg) & set(processes_named(sidecar))), "rg outlived the daemon"
    assert scene.extractions() == set()  # removed by the daemon itself: no sweep needed


def test_launchers_killed_at_random_instants_leave_only_what_a_sweep_removes(scene: Scene) -> None:
    rnd = random.Random(2601)
    for _ in range(20):
        proc = scene.spawn()
        assert proc.stdin is not None
        proc.stdin.write(PING)
        proc.stdin.flush()
        time.sleep(rnd.uniform(0.0, 0.3))  # unpacking, the child's start, or serving
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        scene.wait_gone()  # a child that had started ended with its launcher
    scene.assert_swept()


# -- the daemon killed ------------------------------------------------------------------------------------


def test_daemons_killed_at_random_instants_leave_nothing(scene: Scene) -> None:
    """SIGKILL of the child: the launcher removes the directory, as it always did, and exits by the same
    signal."""
    rnd = random.Random(2602)
    for _ in range(15):
        proc = scene.spawn()
        assert proc.stdin is not None
        proc.stdin.write(PING)
        proc.stdin.flush()
        child = serving_child(proc)
        time.sleep(rnd.uniform(0.0, 0.2))  # the interpreter's start, the imports, or serving
        os.kill(child, signal.SIGKILL)
        assert proc.wait(timeout=GONE_WITHIN_S) == -signal.SIGKILL
        assert scene.extractions() == set()


def test_launcher_and_daemon_killed_together_leave_only_what_a_sweep_removes(scene: Scene) -> None:
    """Both processes at once (a SIGKILL to the process group, the OOM killer): nobody is left to clean
    up, so the directory stays until a later daemon sweeps it."""
    rnd = random.Random(2603)
    for _ in range(15):
        proc = scene.spawn(start_new_session=True)
        assert proc.stdin is not None
        proc.stdin.write(PING)
        proc.stdin.flush()
        time.sleep(rnd.uniform(0.0, 0.3))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        scene.wait_gone()
    scene.assert_swept()


# -- the host killed --------------------------------------------------------------------------------------

# A host in Python: spawns the daemon over pipes of its own (close-on-exec, as subprocess makes them),
# pings it, starts a grep and waits for it. The test kills the host, never the daemon.
HOST = """
import subprocess, sys
daemon = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
daemon.stdin.write(b'{"jsonrpc":"2.0","method":"ping","id":1}\\n')
daemon.stdin.flush()
print("answered", daemon.stdout.readline().decode().strip(), flush=True)
daemon.stdin.write(b'{"jsonrpc":"2.0","method":"grep","id":2,"params":{"pattern":"needle"}}\\n')
daemon.stdin.flush()
daemon.stdout.readline()
daemon.wait()
"""


def test_hosts_killed_at_random_instants_leave_no_daemon_and_no_directory(scene: Scene) -> None:
    """The daemon sees its stdin end when its host dies (even by SIGKILL), answers or aborts what runs and
    exits; its launcher, which nobody killed, removes the directory."""
    rnd = random.Random(2604)
    for _ in range(8):
        host = subprocess.Popen(
            [sys.executable, "-c", HOST, *scene.argv()],
            env=scene.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rnd.uniform(0.0, 0.4))  # before the spawn, while the daemon starts, or while it serves
        os.kill(host.pid, signal.SIGKILL)
        host.wait()
        assert host.stdout is not None
        host.stdout.close()
        scene.wait_gone()
        assert scene.extractions() == set()
    scene.assert_swept()


# -- signals ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_process_group_ends_the_daemon_once(scene: Scene, sig: signal.Signals) -> None:
    """A host that signals the whole group reaches the daemon twice (directly, and forwarded by the
    launcher): it exits 0 all the same, and the launcher removes the directory."""
    proc = scene.spawn(start_new_session=True)
    answer_ping(proc)
    os.killpg(proc.pid, sig)
    assert proc.wait(timeout=GONE_WITHIN_S) == 0
    scene.wait_gone()
    assert scene.extractions() == set()


def test_sigterm_at_random_instants_of_the_start(scene: Scene) -> None:
    """A stop signal before the server handles signals ends the daemon by that signal (as its default
    action did) or, once it serves, with status 0; what a launcher killed while unpacking leaves, a sweep
    removes."""
    rnd = random.Random(2605)
    for _ in range(10):
        proc = scene.spawn()
        time.sleep(rnd.uniform(0.0, 0.2))
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=GONE_WITHIN_S) in (0, -signal.SIGTERM)
        scene.wait_gone()
    scene.assert_swept()
