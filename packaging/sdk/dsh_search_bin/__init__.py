"""The dsh-search daemon as a wheel: the frozen executable and its ripgrep sidecar, side by side.

    from dsh_search_bin import executable_path
    subprocess.Popen([str(executable_path()), "--sample-over-cap-glob-results", "true"], stdin=PIPE, stdout=PIPE)

`executable_path()` checks both files before anything is launched, so a broken install is reported by name
here rather than as a daemon that exits with status 3 (missing sidecar) at start.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["__version__", "executable_path", "sidecar_path"]

__version__ = "0.0.0.dev0"  # replaced with the project version by packaging/build_wheel.py

_BIN = Path(__file__).resolve().parent / "bin"
_EXECUTABLE = "dsh-search.exe" if os.name == "nt" else "dsh-search"
_HINT = (
    "Reinstall the dsh-search-bin wheel built for this platform "
    "(pip install --force-reinstall --no-deps dsh_search_bin-<version>-py3-none-<platform>.whl); "
    "the executable and its ripgrep sidecar must stay side by side in dsh_search_bin/bin/."
)


def sidecar_path(executable: Path) -> Path:
    """Where the daemon looks for ripgrep: `<executable>-rg` (Windows: `dsh-search-rg.exe`)."""
    if executable.suffix.lower() == ".exe":
        return executable.with_name(f"{executable.stem}-rg{executable.suffix}")
    return executable.with_name(f"{executable.name}-rg")


def _check_executable(what: str, path: Path) -> None:
    # One-argument OSErrors, so that str(error) is exactly the message (errno/filename would reformat it).
    if not path.is_file():
        raise FileNotFoundError(f"dsh-search-bin is missing the {what} at {path}. {_HINT}")
    if os.name != "nt" and not os.access(path, os.X_OK):
        raise PermissionError(f"dsh-search-bin's {what} at {path} is not executable. {_HINT}")


def executable_path() -> Path:
    """The path of the bundled `dsh-search` executable, after checking that it and its sidecar are there.

    Raises FileNotFoundError naming the missing executable or the missing ripgrep sidecar, and
    PermissionError when either has lost its executable bit.
    """
    executable = _BIN / _EXECUTABLE
    _check_executable("dsh-search executable", executable)
    _check_executable("ripgrep sidecar", sidecar_path(executable))
    return executable
