"""Where things are: the repository, the built executable (DSH_SEARCH_EXE, else dist/), the pinned venv's
ripgrep (DSH_VENV, else .venv) and the test vectors."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
# Absolute, as given or from here: the daemon runs ripgrep in other directories than the tests' own.
EXE = Path(os.environ.get("DSH_SEARCH_EXE", DIST / "dsh-search")).absolute()
# The pinned virtual environment, as scripts/lib.sh finds it (DSH_VENV, else .venv); its rg is the wheel's.
VENV = Path(os.environ.get("DSH_VENV") or ROOT / ".venv").absolute()
VENV_RG = VENV / "bin" / "rg"


# Test data kept in the repository: the JSON-RPC envelope vectors (jsonrpc-vectors.json).
SHARED = ROOT / "tests" / "data"
