"""Where things are: the repository, the built executable (DSH_SEARCH_EXE, else dist/), the pinned venv's
ripgrep (DSH_VENV, else .venv) and the test vectors."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
# Absolute, as given or from here: the daemon runs ripgrep in other directories than the tests' own.
EXE = Path(os.environ.get("DSH_SEARCH_EXE", DIST / "dsh-search")).absolute()
# The Windows leg (scripts/test --area windows): the end-to-end tests drive dist/win_amd64/dsh-search.exe
# under wine (WINEPREFIX and the rest come from scripts/test, which prepared the environment).
WINDOWS = os.environ.get("DSH_E2E_TARGET") == "win_amd64"
if WINDOWS:
    EXE = Path(os.environ.get("DSH_SEARCH_EXE", DIST / "win_amd64" / "dsh-search.exe")).absolute()
# How a test runs the executable: itself, or under wine.
LAUNCH: tuple[str, ...] = ("wine",) if WINDOWS else ()


def sidecar_of(program: Path) -> Path:
    """The ripgrep sidecar beside an executable: `<path>-rg`, or `dsh-search-rg.exe` beside `dsh-search.exe`."""
    if program.suffix.lower() == ".exe":
        return program.with_name(program.stem + "-rg.exe")
    return Path(str(program) + "-rg")


def rg_process(exe: Path | str) -> str:
    """What the command line of a search of this executable's sidecar holds (see `process_fragment`)."""
    return process_fragment(sidecar_of(Path(exe)))


def process_fragment(program: Path) -> str:
    """What a process's command line holds when it runs `program`: its path (under wine, the Windows path
    `Z:\\...`: its name then)."""
    return program.name if WINDOWS else str(program)


# The pinned virtual environment, as scripts/lib.sh finds it (DSH_VENV, else .venv); its rg is the wheel's.
VENV = Path(os.environ.get("DSH_VENV") or ROOT / ".venv").absolute()
VENV_RG = VENV / "bin" / "rg"


# Test data kept in the repository: the JSON-RPC envelope vectors (jsonrpc-vectors.json).
SHARED = ROOT / "tests" / "data"
