"""The ripgrep runner against the real rg on a corpus big enough to keep it busy for seconds, with
Linux's calls and with the fallbacks other platforms take (see conftest.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_search.engine import ripgrep
from tests.support.processes import processes_named
from tests.support.trees import SLOW_PATTERN

SLOW_ARGS = ["-j1", "--count", f"--regexp={SLOW_PATTERN}"]

pytestmark = pytest.mark.usefixtures("platform_calls")  # each test on Linux's calls and on the fallbacks


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def live_members(pgid: int) -> list[int]:
    """Non-zombie processes of a process group (zombies await a reaper that a container may lack)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != b"Z":
                members.append(int(entry))
    return members


def group_gone(pgid: int) -> bool:
    deadline = time.monotonic() + 1.0
    while live_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not live_members(pgid)


async def _start_and(rg_path: str, cwd: Path, action, **kw):  # type: ignore[no-untyped-def]
    spawned: list[int] = []
    groups = ripgrep.LiveGroups()
    task = asyncio.ensure_future(
        ripgrep.run(
            rg_path,
            kw.pop("args", SLOW_ARGS),
            cwd=str(cwd),
            env=kw.pop("env", ripgrep.child_environment(os.environ, frozen=False)),
            limits=ripgrep.Limits(
                stdout_cap=kw.pop("stdout_cap", 1 << 20),
                stderr_cap=4096,
                grace_s=kw.pop("grace_s", 1.0),
                memory_cap=kw.pop("memory_cap", None),
            ),
            groups=groups,
            on_spawn=spawned.append,
            **kw,
        )
    )
    while not spawned:
        await asyncio.sleep(0.01)
    return await action(task, spawned[0], groups)


def test_completes_with_output(rg_path: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\nworld\n")
    out = run(ripgrep.run(rg_path, ["--regexp=hello"], cwd=str(tmp_path), env={}, limits=ripgrep.Limits(1000, 1000, 1)))
    assert out.exit_code == 0 and out.stdout == b"a.txt:hello\n" and not out.stdout_overflow


def test_timeout_kills_the_whole_group(rg_path: str, slow_corpus: Path) -> None:
    async def action(task, pid, groups):  # type: ignore[no-untyped-def]
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await task
        assert time.monotonic() - started < 2.5
        return pid, len(groups)

    pid, live = run(_start_and(rg_path, slow_corpus, action))
    assert group_gone(pid) and live == 0


def test_cancellation_kills_the_whole_group(rg_path: str, slow_corpus: Path) -> None:
    async def action(task, pid, groups):  # type: ignore[no-untyped-def]
        assert live_members(pid)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pid

    pid = run(_start_and(rg_path, slow_corpus, action))
    assert group_gone(pid)


def test_child_ignoring_sigterm_is_killed_after_grace(tmp_path: Path) -> None:
    stubborn = tmp_path / "stubborn-rg"
    stubborn.write_text("#!/bin/sh\ntrap '' TERM\n(trap '' TERM; sleep 60) &\nsleep 60\n")
    stubborn.chmod(0o755)

    async def action(task, pid, groups):  # type: ignore[no-untyped-def]
        while len(live_members(pid)) < 3:  # the script, its subshell and their sleeps: TERM is ignored by now
            await asyncio.sleep(0.01)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pid, time.monotonic() - started

    pid, took = run(_start_and(str(stubborn), tmp_path, action, grace_s=0.7))
    assert 0.6 < took < 3.0, took
    assert group_gone(pid)  # the grandchild sleeping in the same group is gone too


def _over_the_cap(rg_path: str, corpus: Path, **kwargs: Any) -> ripgrep.Outcome:
    """A search whose output passes a 100,000-byte cap long before it ends."""
    return run(
        ripgrep.run(
            rg_path,
            ["-j1", "--regexp=a"],
            cwd=str(corpus),
            env={},
            limits=ripgrep.Limits(stdout_cap=100_000, stderr_cap=1000, grace_s=1),
            **kwargs,
        )
    )


def test_stdout_cap_stops_rg_early(rg_path: str, slow_corpus: Path) -> None:
    started = time.monotonic()
    out = _over_the_cap(rg_path, slow_corpus)
    assert out.stdout_overflow and out.stdout == b""
    assert out.exit_code is None and out.signal == signal.SIGTERM
    assert time.monotonic() - started < 2.0


def test_the_sink_is_told_of_the_overflow_when_it_happens(rg_path: str, slow_corpus: Path) -> None:
    """`on_overflow` runs on the reading thread as the cap is passed, after the last chunk the sink took
    and before the run returns; nothing reaches the sink after it."""
    events: list[tuple[str, int]] = []
    out = _over_the_cap(
        rg_path,
        slow_corpus,
        stdout_sink=lambda chunk: events.append(("chunk", len(chunk))),
        on_overflow=lambda: events.append(("overflow", 0)),
    )
    assert out.stdout_overflow
    assert events[-1] == ("overflow", 0) and [e for e in events if e[0] == "overflow"] == [("overflow", 0)]
    assert sum(n for kind, n in events if kind == "chunk") <= 100_000


def test_environment_is_scrubbed(rg_path: str, slow_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "k")
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("DB_PASSWORD", "p")
    monkeypatch.setenv("dsh_internal", "d")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", "/etc/evil-rg.conf")
    monkeypatch.setenv("KEEP_ME", "yes")
    env = ripgrep.child_environment(os.environ, frozen=False)

    async def action(task, pid, groups):  # type: ignore[no-untyped-def]
        with open(f"/proc/{pid}/environ", "rb") as f:
            seen = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    seen = run(_start_and(rg_path, slow_corpus, action, env=env))
    assert seen.get(b"KEEP_ME") == b"yes"
    for name in (b"MY_API_KEY", b"GITHUB_TOKEN", b"DB_PASSWORD", b"dsh_internal", b"RIPGREP_CONFIG_PATH"):
        assert name not in seen


def test_frozen_environment_drops_bootloader_state() -> None:
    env = ripgrep.child_environment(
        {"_PYI_ARCHIVE_FILE": "x", "LD_LIBRARY_PATH": "/tmp/_MEI1", "LD_LIBRARY_PATH_ORIG": "/usr/lib", "A": "1"},
        frozen=True,
    )
    assert env == {"LD_LIBRARY_PATH": "/usr/lib", "A": "1"}
    env = ripgrep.child_environment({"LD_LIBRARY_PATH": "/tmp/_MEI1", "A": "1"}, frozen=True)
    assert env == {"A": "1"}


def test_launch_failures(tmp_path: Path) -> None:
    with pytest.raises(ripgrep.LaunchError):
        run(ripgrep.run("/nonexistent/rg", [], cwd=str(tmp_path), env={}, limits=ripgrep.Limits(1, 1, 1)))
    with pytest.raises(ripgrep.LaunchError):
        run(ripgrep.run("/bin/true", [], cwd=str(tmp_path / "no"), env={}, limits=ripgrep.Limits(1, 1, 1)))
    with pytest.raises(ripgrep.LaunchError):
        run(ripgrep.run("/bin/true", ["a\0b"], cwd=str(tmp_path), env={}, limits=ripgrep.Limits(1, 1, 1)))


def test_no_rg_left_behind() -> None:
    assert not [p for p in processes_named("stubborn-rg")]
