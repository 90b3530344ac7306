"""Shared fixtures: paths to the built artifacts, the SDK wheel built from them, and generated corpora that
keep ripgrep busy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.locations import DIST, EXE, VENV_RG
from tests.support.packaging import Venv, build_wheel, install_wheel
from tests.support.trees import write_slow_corpus


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
