"""Shared fixtures: paths to the built artifacts and generated corpora that keep ripgrep busy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.locations import DIST, EXE, ROOT
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
    venv_rg = ROOT / ".venv" / "bin" / "rg"
    assert venv_rg.is_file(), "no ripgrep: run scripts/build or install requirements/dev.txt"
    return str(venv_rg)


@pytest.fixture(scope="session")
def slow_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_slow_corpus(tmp_path_factory.mktemp("slow"))
