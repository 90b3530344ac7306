"""The offline build: a wheelhouse of pinned inputs, then two builds from it inside a network namespace.

The wheelhouse needs the package registry once; it is cached in .cache/wheelhouse (git-ignored), and a
wheelhouse that already holds every pinned file is used without any network. The builds run from a
snapshot of the source tree, so concurrent edits cannot make the two builds differ.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.locations import ROOT
from tests.support.packaging import archive_members, python_code

pytestmark = pytest.mark.slow

WHEELHOUSE = ROOT / ".cache" / "wheelhouse"
SOURCES = ("daemon", "packaging", "clients/python", "scripts", "requirements", "pyproject.toml")
EPOCH = "1735689600"


def netns_unavailable() -> str | None:
    """Why `unshare -n` cannot be used here, or None when it can."""
    if os.geteuid() != 0:
        return "unshare -n needs root (CAP_SYS_ADMIN) and the tests do not run as root"
    if shutil.which("unshare") is None:
        return "util-linux unshare is not installed"
    done = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"unshare -n is refused here: {done.stderr.strip()}"
    return None


@dataclass(frozen=True)
class Build:
    dist: Path
    in_netns: bool
    log: str


@pytest.fixture(scope="module")
def wheelhouse() -> Path:
    command = [str(ROOT / "scripts" / "wheelhouse"), str(WHEELHOUSE)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"scripts/wheelhouse failed (needs the package registry once):\n{done.stderr[-4000:]}"
    return WHEELHOUSE


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("offline") / "src"
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, src / name)
    return src


def offline_build(source: Path, wheelhouse: Path, out: Path) -> Build:
    in_netns = netns_unavailable() is None
    env = {k: v for k, v in os.environ.items() if k not in {"DSH_VENV", "DSH_WHEELHOUSE", "PYINSTALLER_CONFIG_DIR"}}
    env.update(DSH_DIST=str(out / "dist"), SOURCE_DATE_EPOCH=EPOCH)
    command = [str(source / "scripts" / "build-offline"), str(wheelhouse)]
    done = subprocess.run(
        ["unshare", "-n", *command] if in_netns else command,
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"scripts/build-offline failed:\n{log[-6000:]}"
    return Build(out / "dist", in_netns, log)


@pytest.fixture(scope="module")
def build_a(source: Path, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Build:
    return offline_build(source, wheelhouse, tmp_path_factory.mktemp("build-a"))


@pytest.fixture(scope="module")
def build_b(source: Path, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Build:
    return offline_build(source, wheelhouse, tmp_path_factory.mktemp("build-b"))


def test_network_namespace_has_no_network() -> None:
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(["unshare", "-n", "cat", "/proc/net/dev"], capture_output=True, text=True, check=True)
    interfaces = {line.split(":")[0].strip() for line in done.stdout.splitlines()[2:]}
    assert interfaces == {"lo"}
    done = subprocess.run(
        ["unshare", "-n", "cat", "/sys/class/net/lo/operstate"], capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() in {"down", "unknown", ""}


def test_offline_build_succeeds_without_network(build_a: Build) -> None:
    if not build_a.in_netns:
        pytest.skip(f"built with the network present: {netns_unavailable()}")
    exe = build_a.dist / "dsh-search"
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.startswith("dsh-search ")
    assert f"({exe}-rg)" in done.stdout
    (wheel,) = build_a.dist.glob("dsh_search_bin-*-py3-none-manylinux_*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("dsh_search_bin/bin/dsh-search") == exe.read_bytes()


def test_two_builds_from_one_wheelhouse_agree(build_a: Build, build_b: Build) -> None:
    assert (build_a.dist / "dsh-search-rg").read_bytes() == (build_b.dist / "dsh-search-rg").read_bytes()

    code_a, code_b = python_code(build_a.dist / "dsh-search"), python_code(build_b.dist / "dsh-search")
    assert any(name.startswith("PYZ:dsh_search") for name in code_a)
    assert sorted(code_a) == sorted(code_b)
    differing = sorted(name for name in code_a if code_a[name] != code_b[name])
    assert not differing, f"Python code differs between the two builds: {differing[:20]}"

    # Beyond what is required: the whole executable and the wheel are byte-identical (docs/building.md).
    exe_a, exe_b = build_a.dist / "dsh-search", build_b.dist / "dsh-search"
    if exe_a.read_bytes() != exe_b.read_bytes():
        members_a, members_b = archive_members(exe_a), archive_members(exe_b)
        changed = sorted(n for n in members_a.keys() | members_b.keys() if members_a.get(n) != members_b.get(n))
        pytest.fail(f"the executables differ (archive members: {changed or 'none: the bootloader or layout'})")
    (wheel_a,) = build_a.dist.glob("*.whl")
    (wheel_b,) = build_b.dist.glob("*.whl")
    assert wheel_a.name == wheel_b.name and wheel_a.read_bytes() == wheel_b.read_bytes()
