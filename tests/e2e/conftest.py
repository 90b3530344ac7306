"""Fixtures of the end-to-end tests: a daemon factory that checks no rg outlives a test, and trees."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon, MakeDaemon
from tests.support.processes import processes_named
from tests.support.trees import upstream_fixture
from tests.support.unprivileged import reachable_by_nobody


@pytest.fixture
def spill_root(tmp_path: Path) -> Path:
    return tmp_path / "spill"


@pytest.fixture
def start(exe: Path, spill_root: Path) -> Iterator[MakeDaemon]:
    started: list[Daemon] = []

    used = {exe}

    def make(*extra: str, framing: str = "ndjson", sampling: str = "true", **kw: Any) -> Daemon:
        args = ["--sample-over-cap-glob-results", sampling, "--spill-dir", str(spill_root), *extra]
        # A daemon that drops root's privileges runs a copy it can reach when the build is out of reach.
        program = reachable_by_nobody(exe) if "user" in kw else exe
        used.add(program)
        d = Daemon(args, framing=framing, exe=program, **kw)
        started.append(d)
        return d

    yield make
    for d in started:
        d.stop()
    for program in used:
        assert not processes_named(f"{program}-rg"), "an rg process outlived its search"


@pytest.fixture
def fx(tmp_path: Path) -> Path:
    return upstream_fixture(tmp_path / "fx")


@pytest.fixture
def lone_exe(exe: Path, tmp_path: Path) -> Path:
    """A copy of the executable in a directory of its own, without a sidecar."""
    copy = tmp_path / "bin" / "dsh-search"
    copy.parent.mkdir()
    shutil.copy2(exe, copy)
    return copy
