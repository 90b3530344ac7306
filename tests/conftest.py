"""Shared fixtures: paths to the built artifacts and generated corpora that keep ripgrep busy."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "dist"


# Test data kept in the repository: the JSON-RPC envelope vectors (jsonrpc-vectors.json).
SHARED = ROOT / "tests" / "data"

# A regex with no required literal over Unicode word classes: ripgrep has to run its regex engine over
# every line, which takes about a second per 20 MB on one core, and it matches nothing in the slow
# corpus (no word there has 9 letters), so a search lasts without flooding its output cap.
SLOW_PATTERN = r"(?:\w+\W){1,20}?\w{9}\b"


@pytest.fixture(scope="session")
def exe() -> Path:
    path = Path(os.environ.get("DSH_SEARCH_EXE", DIST / "dsh-search"))
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


def write_slow_corpus(root: Path, files: int = 4, lines: int = 400_000) -> Path:
    """Text files that SLOW_PATTERN needs seconds to scan (about 19 MB each)."""
    root.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "ηta", "theta"]
    text = "".join(" ".join(rnd.choice(words) for _ in range(8)) + "\n" for _ in range(lines))
    for i in range(files):
        (root / f"slow-{i}.txt").write_text(text)
    return root


@pytest.fixture(scope="session")
def slow_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_slow_corpus(tmp_path_factory.mktemp("slow"))
