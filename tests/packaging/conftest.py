"""Fixtures of the packaging tests: the built dist directory, the SDK wheel built from it, a venv with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.locations import EXE
from tests.support.packaging import Venv, build_wheel, install_wheel


@pytest.fixture(scope="session")
def dist_dir() -> Path:
    """The directory of the built executable: DSH_SEARCH_EXE's, else dist/."""
    dist = EXE.parent
    for name in ("dsh-search", "dsh-search-rg"):
        assert (dist / name).is_file(), f"{dist / name} is missing: run scripts/build (scripts/test does)"
    return dist


@pytest.fixture(scope="session")
def sdk_wheel(dist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(dist_dir, tmp_path_factory.mktemp("sdk-wheel"))


@pytest.fixture(scope="session")
def installed(sdk_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    return install_wheel(sdk_wheel, tmp_path_factory.mktemp("sdk-venv") / "venv")
