"""The command line the index hands ripgrep: as many names as execve really takes, never more."""

from __future__ import annotations

import os
import subprocess

import pytest

from dsh_search.osdep.posix import ARGV_RESERVE
from dsh_search.osdep.posix import argv_names_budget as _argv_budget


def names_of(total: int) -> list[bytes]:
    """File names whose argv cost (name, NUL, pointer — as grep_files counts it: +9) adds up to `total`."""
    names = []
    while total > 9 + 40:
        names.append(b"drivers/net/ethernet/f%019d.c" % len(names))  # 40 bytes, a kernel path's length
        total -= len(names[-1]) + 9
    return names


@pytest.mark.parametrize("environment_kib", [0, 64, 900])
def test_a_command_line_of_the_whole_budget_is_taken_by_execve(environment_kib: int) -> None:
    """The budget is computed from the environment the child gets; a command line that uses all of it,
    with the reserve's worth of other arguments, starts."""
    env = {b"PATH": os.environb.get(b"PATH", b"/usr/bin:/bin")}
    for i in range(environment_kib // 64):  # one string may not pass 128 KiB (MAX_ARG_STRLEN)
        env[b"FILLER_%d" % i] = b"x" * (64 << 10)
    budget = _argv_budget(env)
    assert budget >= 256 << 10
    other = [b"-" * (64 << 10)] * ((ARGV_RESERVE - (8 << 10)) // ((64 << 10) + 9))  # flags, globs, pattern
    done = subprocess.run([b"/bin/true", *other, *names_of(budget)], env=env, check=False)
    assert done.returncode == 0


def test_a_big_environment_leaves_fewer_names() -> None:
    small = _argv_budget({b"A": b"b"})
    big = _argv_budget({b"A": b"b" * (512 << 10)})
    assert small - big == (512 << 10) - 1
