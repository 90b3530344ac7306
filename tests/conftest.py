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
from tests.support.locations import DIST, EXE, VENV_RG, WINDOWS, sidecar_of
from tests.support.packaging import Venv, build_wheel, install_wheel
from tests.support.processes import wait_until
from tests.support.trees import upstream_fixture, write_slow_corpus
from tests.support.unprivileged import reachable_by_nobody

BUILT = frozenset(("exe", "dist_dir", "start", "lone_exe", "sdk_wheel", "installed"))


# The end-to-end tests that cannot hold for the Windows executable under wine (scripts/test's Windows leg,
# DSH_E2E_TARGET=win_amd64), each with the reason; what they check is covered for Windows in tests/windows
# where Windows has it. Keys are test names (every parametrisation) within their file.
NOT_UNDER_WINE = {
    "tests/engine/test_search_e2e.py::test_rich_tree": 'its tree has names Windows forbids (`"`)',
    "tests/engine/test_search_e2e.py::test_fix_newline_in_file_name_is_one_entry": "Windows forbids newlines in names",
    "tests/engine/test_search_e2e.py::test_fix_grep_order_is_deterministic": (
        "its expected order is the byte order of `/`-separated paths (with `\\` it differs: "
        "tests/windows/test_paths_e2e.py checks the order of Windows display paths)"
    ),
    "tests/engine/test_search_e2e.py::test_fix_unreadable_paths_keep_the_results": (
        "it makes files unreadable with POSIX modes, which Windows has not (and wine as root reads everything)"
    ),
    "tests/engine/test_search_e2e.py::test_fix_newline_pattern_is_invalid_pattern": (
        "rg's message quotes a backslash, which the tests' host view of paths turns into `/` "
        "(tests/windows/test_paths_e2e.py checks it raw)"
    ),
    "tests/engine/test_search_e2e.py::test_nul_bytes_and_huge_patterns": (
        "wine does not enforce Windows' 32,767-character command-line limit (a 1 MB pattern starts rg)"
    ),
    "tests/engine/test_search_e2e.py::test_sampling_spill_and_meta": (
        "it checks POSIX file modes (0600/0700) of the spill store, which Windows has not"
    ),
    "tests/transport/test_stdio_e2e.py::test_signal_during_a_running_search": (
        "POSIX signals (tests/windows/test_lifetime_e2e.py sends Ctrl-Break, terminates the launcher)"
    ),
    "tests/transport/test_stdio_e2e.py::test_host_closing_our_stdout_ends_the_daemon": (
        "an anonymous pipe's write end does not tell that its reader left: the daemon notices at its next write"
    ),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the build is end to end, whatever its file says; under wine, the tests that
    cannot hold there are skipped with their reason (NOT_UNDER_WINE)."""
    for item in items:
        if BUILT & set(getattr(item, "fixturenames", ())) or item.path.name.endswith("_e2e.py"):
            item.add_marker(pytest.mark.e2e)
        if WINDOWS:
            reason = NOT_UNDER_WINE.get(item.nodeid.split("[", 1)[0])
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=f"not under wine: {reason}"))


@pytest.fixture(scope="session")
def exe() -> Path:
    path = EXE
    assert path.is_file(), f"{path} is missing: run scripts/build (scripts/test does)"
    assert sidecar_of(path).is_file(), f"the sidecar {sidecar_of(path)} is missing: run scripts/build"
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
    for d in started:  # (under wine, a process that ended leaves the process table a moment later)
        assert wait_until(lambda d=d: not d.ripgreps(), timeout=2.0 if WINDOWS else 0), (
            "an rg process outlived its search"
        )


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
