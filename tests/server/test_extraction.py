"""The sweep of killed daemons' extraction directories, on directories made to look like theirs.

Each case is one of the rules in daemon/dsh_search/extraction.py: a directory is removed only when its
name is a onefile's, it is a real directory of this user, it is marked, old enough, its launcher is
gone and nobody holds its lock. Everything else stays as it was."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_search import extraction
from dsh_search.extraction import MARKER, MIN_AGE_S, TRASH_PREFIX, Held, launcher_pid, sweep
from tests.support.processes import wait_until

OLD = time.time() - 3600


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def name_for(pid: int, tail: str = "aB3dE9") -> str:
    return f"_MEI{pid:08x}{tail}"


def make(base: Path, name: str, *, marked: bool = True, files: int = 2, mtime: float | None = OLD) -> Path:
    """An extraction directory as a launcher leaves it: the marker first, then some files."""
    path = base / name
    path.mkdir(mode=0o700)
    if marked:
        (path / MARKER).write_text("marker\n")
    (path / "lib").mkdir()
    for i in range(files):
        (path / "lib" / f"f{i}.so").write_bytes(b"\0" * 100)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    where = tmp_path / "tmp"
    where.mkdir()
    return where


def test_launcher_pid_reads_pyinstaller_names() -> None:
    assert launcher_pid("_MEI00005f54uYkSLW") == 0x5F54
    assert launcher_pid("_MEIffffffff000000") == 0xFFFFFFFF
    for name in (
        "_MEI00005f54uYkSL",
        "_MEI00005f54uYkSLWx",
        "_MEI00005F54uYkSLW",
        "_MEIabcdefuYkSLW00",
        "_ME00005f54uYkSLWa",
    ):
        assert launcher_pid(name) is None, name
    assert launcher_pid("_MEI00005f54uYk-LW") is None  # mkdtemp's characters are letters and digits
    assert launcher_pid(TRASH_PREFIX + "_MEI00005f54uYkSLW") is None


def test_only_a_marked_old_unheld_directory_of_a_dead_launcher_is_removed(base: Path) -> None:
    gone = dead_pid()
    removed = make(base, name_for(gone, "remove"))
    live = make(base, name_for(os.getpid(), "live00"))  # its launcher is alive: it removes it itself
    foreign = make(base, name_for(gone, "other0"), marked=False)  # another PyInstaller program's
    young = make(base, name_for(gone, "young0"), mtime=None)  # may still be unpacked into
    own = make(base, name_for(gone, "myself"))  # the sweeping daemon's own
    not_onefile = make(base, "_MEIxyz")
    swept = sweep(str(base), own.name, MIN_AGE_S)
    assert swept.removed == [removed.name]
    assert not removed.exists()
    for kept in (live, foreign, young, own, not_onefile):
        assert (kept / "lib" / "f0.so").is_file(), kept
    assert swept.retry_in is not None and 0 < swept.retry_in <= MIN_AGE_S


def test_a_locked_directory_is_kept_until_its_holder_lets_go(base: Path) -> None:
    held = make(base, name_for(dead_pid()))
    fd = os.open(held, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # what a daemon whose launcher was killed holds until it exits
        assert sweep(str(base), None, MIN_AGE_S).removed == []
        assert (held / MARKER).is_file()
    finally:
        os.close(fd)
    assert sweep(str(base), None, MIN_AGE_S).removed == [held.name]


def test_a_zombie_launcher_is_gone(base: Path) -> None:
    zombie = subprocess.Popen(["true"])
    try:
        assert wait_until(lambda: Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")
        left = make(base, name_for(zombie.pid))
        assert sweep(str(base), None, MIN_AGE_S).removed == [left.name]
    finally:
        zombie.wait()


def test_links_other_users_and_unmarked_content_are_never_touched(base: Path, tmp_path: Path) -> None:
    gone = dead_pid()
    target = make(tmp_path, name_for(gone, "target"))
    (base / name_for(gone, "link00")).symlink_to(target)
    fake_marker = make(base, name_for(gone, "fake00"), marked=False, mtime=None)
    (fake_marker / MARKER).symlink_to(target / MARKER)  # a marker must be a file of its own
    os.utime(fake_marker, (OLD, OLD))
    cases = [target, fake_marker]
    if os.geteuid() == 0:
        theirs = make(base, name_for(gone, "theirs"))
        os.chown(theirs, 65534, 65534)
        cases.append(theirs)
    assert sweep(str(base), None, MIN_AGE_S).removed == []
    for kept in cases:
        assert (kept / "lib" / "f0.so").is_file(), kept


def test_an_empty_directory_of_a_dead_launcher_is_removed_marked_or_not(base: Path) -> None:
    # A launcher killed between creating the directory and unpacking the marker leaves it empty: nothing
    # to anyone, so it goes even though nothing says whose it was.
    empty = base / name_for(dead_pid())
    empty.mkdir(mode=0o700)
    os.utime(empty, (OLD, OLD))
    assert sweep(str(base), None, MIN_AGE_S).removed == [empty.name]
    assert not empty.exists()


def test_an_interrupted_removal_is_finished(base: Path) -> None:
    trash = make(base, TRASH_PREFIX + name_for(dead_pid()), mtime=None)  # renamed, then its remover died
    unrelated = make(base, TRASH_PREFIX + "notes", mtime=None)
    sweep(str(base), None, MIN_AGE_S)
    assert not trash.exists()
    assert unrelated.is_dir()


def test_a_directory_renamed_after_it_was_seen_is_left(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lock, then check: the name must still lead to the directory that was examined and locked.
    victim = make(base, name_for(dead_pid()))
    swapped = make(base, "elsewhere")
    real_open = os.open

    def swapping_open(path: str, flags: int, *args: int, **kwargs: int) -> int:
        if str(path) == str(victim):
            os.rename(victim, base / "moved")
            os.rename(swapped, victim)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(extraction.os, "open", swapping_open)
    assert sweep(str(base), None, MIN_AGE_S).removed == []
    monkeypatch.undo()
    assert (base / "moved" / MARKER).is_file() and (victim / "lib").is_dir()


@pytest.fixture
def stop_signals() -> Iterator[None]:
    """Release ignores stop signals (its process is ending); the test process gets its handlers back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.usefixtures("stop_signals")
def test_release_removes_the_directory_only_when_the_launcher_is_gone(base: Path) -> None:
    mine = make(base, name_for(os.getppid()))
    Held(str(mine), os.getppid()).release()  # the launcher lives: it removes the directory itself
    assert (mine / MARKER).is_file()
    orphaned = make(base, name_for(dead_pid()))
    held = Held(str(orphaned), launcher_pid(orphaned.name) or 0)
    held.lock()
    held.release()
    assert not orphaned.exists() and list(base.iterdir()) == [mine]
