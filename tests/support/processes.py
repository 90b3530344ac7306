"""The process table (from /proc), for checks that nothing outlives a test.

A check that nothing outlived a daemon looks for that daemon's own processes, never for every ripgrep on
the machine (two test runs on one machine would fail each other): each daemon a test starts carries a
tag of its own in its environment (`TAG_VARIABLE`, which ripgrep's scrubbed environment keeps), so its
children are found by it (`tagged`), even once they were orphaned.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def descendants(pid: int) -> list[int]:
    """All live descendant pids of pid (from /proc), for leak checks."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if fields[0] == b"Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def processes_named(fragment: str, *, under: int | None = None, without: str | None = None) -> list[int]:
    """Live (non-zombie) pids whose command line contains fragment; with `under`, only descendants of
    that pid (a check about one daemon's children is then immune to other tests' leftovers); with
    `without`, not those whose command line (arguments joined by spaces, one after the last) holds it."""
    pids = []
    among = None if under is None else {str(pid) for pid in descendants(under)}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or (among is not None and entry not in among):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if fragment in cmd and state != b"Z" and (without is None or without not in cmd):
            pids.append(int(entry))
    return pids


TAG_VARIABLE = "SEARCH_TEST_TAG"  # not a name the daemon scrubs from ripgrep's environment


def new_tag() -> str:
    """A tag no other process on the machine carries."""
    return f"{os.getpid()}-{time.monotonic_ns()}-{os.urandom(4).hex()}"


def tagged(tag: str, fragment: str = "") -> list[int]:
    """Live (non-zombie) pids whose environment carries `tag` (and whose command line holds `fragment`)."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if fragment in cmd and state != b"Z":
            pids.append(int(entry))
    return pids


def alive(pid: int) -> bool:
    """Whether the process runs: a zombie has exited (it waits to be reaped), a missing one too."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def searches_running(exe: object, daemon_pid: int) -> list[int]:
    """The daemon's ripgrep processes that are searches: its index's listings (`rg --files`, which the
    suite's index-on pass starts beside them) are left out. (Under wine, the Windows processes are no
    descendants of the host's wine command: there, any search of this executable's sidecar counts.)"""
    from pathlib import Path

    from tests.support.locations import WINDOWS, process_fragment, sidecar_of

    sidecar = process_fragment(sidecar_of(Path(str(exe))))
    found = processes_named(sidecar, under=None if WINDOWS else daemon_pid, without=" --files ")
    if WINDOWS and found:
        # A Windows process that has ended (its handle signalled, the daemon answered) leaves the host's
        # process table a moment later: wine finishes the exit asynchronously. What is still there after
        # that moment is running.
        wait_until(lambda: not processes_named(sidecar, without=" --files "), timeout=1.0)
        found = processes_named(sidecar, without=" --files ")
    return found


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, every: float = 0.02) -> bool:
    """Poll `predicate` until it holds (True) or `timeout` seconds pass (False): waiting for evidence,
    not for a guessed duration."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(every)
    return True


def settled_rss(read_rss_kib: Callable[[], int], timeout: float = 8.0, quiet: float = 1.5) -> int:
    """A process's RSS once it has stopped moving for `quiet` seconds: longer than the daemon waits
    before it gives memory back (a trim at most once a second, deferred when the last was sooner), so a
    reading is never taken in the pause before the trim."""
    deadline = time.monotonic() + timeout
    last = read_rss_kib()
    stable_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = read_rss_kib()
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since >= quiet:
            break
    return last
