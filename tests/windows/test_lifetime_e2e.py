"""Lifetime on Windows: the frozen dsh-search.exe under wine, stopped in every way a Windows host stops it
while a search runs — Ctrl-Break, Ctrl-C, the console closed, stdin closed, the launcher terminated — and
then: no daemon, no dsh-search-rg.exe, and no `_MEI*` directory in %TEMP% that the next start does not
sweep (docs/hosts.md, "Stopping it"; docs/troubleshooting.md).

A console event is delivered as Windows delivers it (a thread at CtrlRoutine in each process of the image,
tests/windows/console_event.py); terminating the launcher is SIGKILL of its wine process, which is
TerminateProcess as the Windows side sees it (no code of the launcher runs).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_search.extraction import MIN_AGE_S
from tests.support.daemon import Daemon, text_of
from tests.support.locations import ROOT
from tests.support.processes import processes_named, wait_until
from tests.support.trees import SLOW_PATTERN
from tests.windows.conftest import HERE, console_event, winpath

DAEMON = ROOT / "daemon"

GRACE_MS = 2000
BOUND_S = GRACE_MS / 1000 + 1.0  # the promise: every way out ends within graceMs + 1 s
RG = "dsh-search-rg.exe"


class Scene:
    """One daemon over pipes, findable by its unique workdir on its processes' command lines."""

    def __init__(self, exe: Path, root: Path, temp: Path) -> None:
        self.exe = exe
        self.work = root / "work"
        self.work.mkdir()
        (self.work / "a.txt").write_text("needle\n")
        self.temp = temp
        self.before = self.extractions()
        self.daemons: list[Daemon] = []

    def extractions(self) -> set[str]:
        return {p.name for p in self.temp.iterdir() if p.name.startswith(("_MEI", ".dsh-search-trash-"))}

    def start(self, *extra: str) -> Daemon:
        d = Daemon(
            ["--sample-over-cap-glob-results", "false", "--workdir", str(self.work), "--grace-ms", str(GRACE_MS),
             "--index", "off", *extra],
            exe=self.exe, raw=True, index=False,
        )  # fmt: skip
        self.daemons.append(d)
        return d

    def processes(self) -> list[int]:
        """The scene's live wine processes: the launcher (its host path) and its child (`Z:\\...`)."""
        return processes_named(str(self.work))

    def search(self, d: Daemon, corpus: Path) -> str:
        assert d.result("ping") == {}
        rid = d.request("grep", {"pattern": SLOW_PATTERN, "path": str(corpus)})
        assert wait_until(lambda: bool(processes_named(RG)), timeout=20), "the grep never started rg"
        return str(rid)

    def gone_within(self, bound: float) -> float:
        """Seconds until no daemon process and no rg is left (asserting it happens within `bound`)."""
        started = time.monotonic()
        assert wait_until(lambda: not self.processes() and not processes_named(RG), timeout=bound + 10), (
            self.processes(),
            processes_named(RG),
        )
        took = time.monotonic() - started
        assert took <= bound, f"took {took:.2f} s, more than graceMs + 1 s"
        return took

    def leftovers(self) -> set[str]:
        return self.extractions() - self.before

    def sweep(self) -> None:
        """What a stop left is removed by the next start: aged past MIN_AGE_S (as if that start came later),
        then a daemon started now sweeps it with its first search."""
        then = time.time() - MIN_AGE_S - 60
        for name in self.leftovers():
            os.utime(self.temp / name, (then, then))
        d = self.start()
        try:
            assert text_of(d.call("grep", {"pattern": "needle"})).startswith("Found 1 match")
            mine = self.leftovers()
            assert wait_until(lambda: len(self.leftovers()) <= 1, timeout=15), mine  # its own only
        finally:
            d.stop()
        assert wait_until(lambda: not self.leftovers(), timeout=15), self.leftovers()


@pytest.fixture
def scene(exe: Path, tmp_path: Path, temp_dir: Path) -> Iterator[Scene]:
    made = Scene(exe, tmp_path, temp_dir)
    yield made
    for d in made.daemons:
        if d.proc.poll() is None:
            d.proc.kill()
    for pid in made.processes() + processes_named(RG):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("event", [1, 0], ids=["ctrl-break", "ctrl-c"])
def test_a_console_ctrl_event_mid_search_ends_everything(scene: Scene, slow_corpus: Path, event: int) -> None:
    d = scene.start()
    rid = scene.search(d, slow_corpus)
    assert console_event(event), "no dsh-search.exe to deliver the event to"
    scene.gone_within(BOUND_S)
    assert d.proc.wait(timeout=5) == 0  # the launcher exits with its child's status: 0, as on SIGINT
    assert d.wait_for(rid)["error"]["data"]["code"] == "SEARCH_ABORTED"
    assert wait_until(lambda: not scene.leftovers()), scene.leftovers()  # the launcher removed its directory


def test_the_console_closed_mid_search_ends_everything(scene: Scene, slow_corpus: Path) -> None:
    d = scene.start()
    scene.search(d, slow_corpus)
    assert console_event(2)
    scene.gone_within(BOUND_S)
    d.proc.wait(timeout=5)
    scene.sweep()


def test_stdin_closed_mid_search_answers_then_ends(scene: Scene, slow_corpus: Path) -> None:
    d = scene.start("--timeout-ms", "1500")
    rid = scene.search(d, slow_corpus)
    d.close_stdin()
    answer = d.wait_for(rid, timeout=BOUND_S + 10)  # answered first (bounded by timeoutMs) ...
    assert answer["error"]["data"]["text"] == "Error: grep timed out after 1500ms"
    scene.gone_within(BOUND_S)  # ... then gone
    assert d.proc.wait(timeout=5) == 0
    assert wait_until(lambda: not scene.leftovers()), scene.leftovers()


def test_a_terminated_launcher_takes_its_daemon_with_it(scene: Scene, slow_corpus: Path) -> None:
    """PyInstaller's launcher does not end its child when it is terminated: the daemon watches it."""
    d = scene.start()
    scene.search(d, slow_corpus)
    os.kill(d.proc.pid, signal.SIGKILL)  # TerminateProcess, as the Windows side sees it
    d.proc.wait()
    scene.gone_within(BOUND_S)
    scene.sweep()  # what the daemon could not remove itself (its DLLs were loaded from it) goes next time


def test_a_terminated_daemon_leaves_nothing_its_launcher_or_the_next_start_does_not_remove(
    scene: Scene, slow_corpus: Path
) -> None:
    d = scene.start()
    scene.search(d, slow_corpus)
    child = [pid for pid in scene.processes() if pid != d.proc.pid]
    assert child, scene.processes()
    for pid in child:
        os.kill(pid, signal.SIGKILL)
    scene.gone_within(BOUND_S)  # its rg.exe ended with its Job Object
    d.proc.wait(timeout=5)
    scene.sweep()


def test_a_daemon_killed_between_a_childs_creation_and_its_job_leaves_no_child(tmp_path: Path) -> None:
    """The daemon's own job holds a child from its creation: killed before the child's job is made (the
    child still suspended), the daemon leaves nothing."""
    marker = f"dsh-suspended-{os.getpid()}-{tmp_path.name}"
    python = os.environ["DSH_WIN_PYTHON"]
    holder = subprocess.Popen(
        ["wine", python, winpath(HERE / "spawn_suspended.py"), winpath(DAEMON), python, "-c", f"# {marker}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip().isdigit()
        child = lambda: processes_named(marker, without="spawn_suspended.py")  # noqa: E731
        assert wait_until(lambda: bool(child()), timeout=20), "the child was never created"
        os.kill(holder.pid, signal.SIGKILL)  # TerminateProcess, as the Windows side sees it
        assert wait_until(lambda: not child(), timeout=BOUND_S), child()
    finally:
        holder.kill()
        holder.wait()
        for pid in processes_named(marker):
            os.kill(pid, signal.SIGKILL)
