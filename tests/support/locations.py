"""Where things are: the repository, the built executable (DSH_SEARCH_EXE, else dist/) and the shared vectors."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
EXE = Path(os.environ.get("DSH_SEARCH_EXE", DIST / "dsh-search"))


def _shared_dir() -> Path:
    """The project's shared/ folder (the spec and its vectors): DSH_SHARED, else beside the checkout,
    else where the workplace keeps it, else the copy in tests/data (kept in sync by a test)."""
    candidates = [os.environ.get("DSH_SHARED"), ROOT.parent / "shared", "/work/shared"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "jsonrpc-vectors.json").is_file():
            return Path(candidate)
    return ROOT / "tests" / "data"


SHARED = _shared_dir()
