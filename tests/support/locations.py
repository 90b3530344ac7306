"""Where things are: the repository, the built executable (DSH_SEARCH_EXE, else dist/) and the test vectors."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
EXE = Path(os.environ.get("DSH_SEARCH_EXE", DIST / "dsh-search"))


# Test data kept in the repository: the JSON-RPC envelope vectors (jsonrpc-vectors.json).
SHARED = ROOT / "tests" / "data"
