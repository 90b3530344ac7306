"""Shared fixtures and the harness markers.

Tests are arranged by subject (tests/<area>/: transport, engine, index, terminal, server, clients, hosts,
mcp, packaging, scripts), each area holding its unit, integration and end-to-end tests. The harness is
in the name and the markers: `test_*_rg.py` runs the real ripgrep (no build needed), `test_*_e2e.py` and
any test that uses the built executable (the fixtures `exe`, `dist_dir`, `start`, `lone_exe`,
`sdk_wheel`, `installed`) is marked `e2e` here, at collection. `scripts/test --fast` runs what is not
`e2e`; `scripts/test --area NAME` runs one area, building first when it has e2e tests.

Fixtures: paths to the built artifacts, the SDK wheel built from them, generated corpora that keep
ripgrep busy, and the end-to-end daemon factory (`start`), which checks that no rg outlives a test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon, MakeDaemon
from tests.support.locations import DIST, EXE, VENV_RG
from tests.support.packaging import Venv, build_wheel, install_wheel
from tests.support.trees import upstream_fixture, write_slow_corpus
from tests.support.unprivileged import reachable_by_nobody

BUILT = frozenset(("exe", "dist_dir", "start", "lone_exe", "sdk_wheel", "installed"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the build is end to end, whatever its file says."""
    for item in items:
        if BUILT & set(getattr(item, "fixturenames", ())) or item.path.name.endswith("_e2e.py"):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def exe() -> Path:
    path = EXE
    assert path.is_file(), f"{path} is missing: run scripts/build (scripts/test does)"
    assert Path(str(path) + "-rg").is_file(), f"the sidecar {path}-rg is missing: run scripts/build"
    return path


@pytest.fixture(scope="session")
def rg_path() -> str:
    sidecar = DIST / "dsh-search-rg"
    if sidecar.is_file():
        return str(sidecar)
    assert VENV_RG.is_file(), "no ripgrep: run scripts/build or install requirements/dev.txt"
    return str(VENV_RG)


@pytest.fixture(scope="session")
def slow_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_slow_corpus(tmp_path_factory.mktemp("slow"))


@pytest.fixture(scope="session")
def dist_dir() -> Path:
    """The directory of the built executable: DSH_SEARCH_EXE's, else dist/."""
    dist = EXE.parent
    for name in ("dsh-search", "dsh-search-rg"):
        assert (dist / name).is_file(), f"{dist / name} is missing: run scripts/build (scripts/test does)"
    return dist


@pytest.fixture(scope="session")
def sdk_wheel(dist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDK wheel, built from the executable (as scripts/release-wheel does)."""
    return build_wheel(dist_dir, tmp_path_factory.mktemp("sdk-wheel"))


@pytest.fixture(scope="session")
def installed(sdk_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv with the SDK wheel installed (pip install --no-index)."""
    return install_wheel(sdk_wheel, tmp_path_factory.mktemp("sdk-venv") / "venv")


# --- the end-to-end daemons -----------------------------------------------------------------------------


@pytest.fixture
def spill_root(tmp_path: Path) -> Path:
    return tmp_path / "spill"


@pytest.fixture
def start(exe: Path, spill_root: Path) -> Iterator[MakeDaemon]:
    started: list[Daemon] = []

    def make(*extra: str, framing: str = "ndjson", sampling: str = "true", **kw: Any) -> Daemon:
        args = ["--sample-over-cap-glob-results", sampling, "--spill-dir", str(spill_root), *extra]
        # A daemon that drops root's privileges runs a copy it can reach when the build is out of reach.
        program = reachable_by_nobody(exe) if "user" in kw else exe
        if "user" in kw:
            # Nor may its working directory (the daemon's default workspace) be out of that user's reach.
            kw.setdefault("cwd", "/")
        d = Daemon(args, framing=framing, exe=program, **kw)
        started.append(d)
        return d

    yield make
    for d in started:
        d.stop()
    for d in started:
        assert not d.ripgreps(), "an rg process outlived its search"


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
