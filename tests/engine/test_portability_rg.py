"""The fallbacks of the Linux-only calls, exercised on Linux by taking the calls away (conftest.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from dsh_search import osdep
from dsh_search.engine import ripgrep
from dsh_search.engine.searcher import walk_threads
from dsh_search.memory import Allocator

pytestmark = pytest.mark.usefixtures("platform_calls")


def test_stdin_reaches_rg_through_a_memfd_or_a_pipe(rg_path: str, tmp_path: Path) -> None:
    text = b"".join(b"line %d %s\n" % (i, b"needle" if i % 1000 == 0 else b"hay") for i in range(200_000))
    outcome = asyncio.run(
        ripgrep.run(
            rg_path,
            ["--line-number", "--no-filename", "--regexp=needle", "-"],
            cwd=str(tmp_path),
            env={},
            limits=ripgrep.Limits(1 << 20, 4096, 1.0),
            stdin_data=text,
        )
    )
    numbers = [int(row.split(b":")[0]) for row in outcome.stdout.splitlines()]
    assert outcome.exit_code == 0 and numbers == list(range(1, 200_001, 1000))


def test_memory_bound_only_where_it_can_be_set(rg_path: str, tmp_path: Path, platform_calls: str) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    seen: list[int] = []

    async def go() -> ripgrep.Outcome:
        return await ripgrep.run(
            rg_path,
            ["--regexp=a"],
            cwd=str(tmp_path),
            env={},
            limits=ripgrep.Limits(1 << 20, 4096, 1.0, memory_cap=256 << 20),
            on_spawn=seen.append,
        )

    assert asyncio.run(go()).exit_code == 0
    assert osdep.limit_memory(osdep.Tree(os.getpid()), resource_limit()) is (platform_calls == "linux")


def resource_limit() -> int:
    import resource

    return resource.getrlimit(resource.RLIMIT_AS)[1]  # what the test process already has: a no-op


def test_walk_threads_without_sched_getaffinity() -> None:
    assert 1 <= walk_threads() <= 12


def test_allocator_is_a_no_op_off_glibc(platform_calls: str) -> None:
    allocator = Allocator()
    allocator.release()  # never raises
    assert bool(allocator._glibc()) is (platform_calls == "linux")


def can_watch_stdout(fd: int) -> bool:
    stop = osdep.watch_reader_gone(fd, lambda: None)
    if stop is not None:
        stop()
    return stop is not None


def test_stdout_watch_only_where_poll_reports_a_gone_reader(platform_calls: str) -> None:
    with subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as child:
        assert child.stdin is not None
        assert can_watch_stdout(child.stdin.fileno()) is (platform_calls == "linux")
        child.stdin.close()
    read_end, write_end = os.pipe()
    try:
        assert can_watch_stdout(write_end) is (platform_calls == "linux")
    finally:
        os.close(read_end)
        os.close(write_end)
