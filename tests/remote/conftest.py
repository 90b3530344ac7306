"""The remote area: the daemon on a second machine, driven through a real sshd (tests/support/machine.py).

`machine` is that machine for the whole session: sshd and everything it starts in a network namespace and a
mount namespace of their own, reached over a veth pair; `loopback` is an sshd on 127.0.0.1 (a mount
namespace of its own, this network). Both have the build on their sessions' PATH. A test that leaves a
process on either fails (`nothing_left`, run after every test here).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.machine import Machine, Unavailable
from tests.support.processes import wait_until
from tests.support.trees import write

MACHINES: list[Machine] = []


def _started(machine: Machine) -> Machine:
    try:
        machine.start()
    except Unavailable as exc:
        if os.geteuid() != 0:
            pytest.skip(f"the remote tests need root: {exc}")
        pytest.fail(f"no second machine: {exc}")
    MACHINES.append(machine)
    return machine


@pytest.fixture(scope="session")
def machine(dist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    m = _started(Machine(tmp_path_factory.mktemp("machine"), dist=dist_dir, netns=True))
    yield m
    m.stop()


@pytest.fixture(scope="session")
def loopback(dist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    m = _started(Machine(tmp_path_factory.mktemp("loopback"), dist=dist_dir, netns=False))
    yield m
    m.stop()


@pytest.fixture(autouse=True)
def nothing_left() -> Iterator[None]:
    yield
    for m in MACHINES:
        assert wait_until(lambda m=m: not m.processes(), timeout=10), f"left on the far side: {m.processes()}"


@pytest.fixture(scope="session")
def far_slow(machine: Machine, slow_corpus: Path) -> str:
    """The slow corpus on the far side, four times over (hard links: no copy), so that a grep of it would
    run for tens of seconds: a test that sees it gone within seconds saw it stopped, not finished."""
    here = machine.tmp / "slow"
    here.mkdir()
    for copy in range(4):
        for source in sorted(slow_corpus.iterdir()):
            target = here / f"{copy}-{source.name}"
            try:
                os.link(source, target)
            except OSError:
                shutil.copyfile(source, target)
    return machine.far(here)


def far_tree(machine: Machine, name: str) -> str:
    """A small workspace on the far side (its /tmp/<name>): two matches of TODO, two .js files, and 150
    files under many/ (a glob of them is capped at the default 100)."""
    root = machine.tmp / name
    files = {
        "src/app.js": "// TODO: wire the search\nconsole.log('hello');\n",
        "src/util.js": "export const add = (a, b) => a + b;\n",
        "docs/notes.md": "# Notes\n\nTODO: write the host guide\n",
        "README.md": "demo tree\n",
    }
    mtime = 1_700_000_000
    for rel, text in files.items():
        write(root, rel, text, mtime)
        mtime += 60
    for i in range(150):
        write(root, f"many/f{i:03}.txt", "needle\n", mtime + i)
    return machine.far(root)
