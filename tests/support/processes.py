"""The process table (from /proc), for checks that nothing outlives a test."""

from __future__ import annotations

import os


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


def processes_named(fragment: str, *, under: int | None = None) -> list[int]:
    """Live (non-zombie) pids whose command line contains fragment; with `under`, only descendants of
    that pid (a check about one daemon's children is then immune to other tests' leftovers)."""
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
        if fragment in cmd and state != b"Z":
            pids.append(int(entry))
    return pids
