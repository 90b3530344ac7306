"""The dsh-search daemon as a wheel: the frozen executable and its ripgrep sidecar, side by side, the
`dsh-search` command, and an asyncio client.

    from dsh_search_bin import Client

    async with Client(sample_over_cap_glob_results=True, workdir=".") as client:
        print((await client.grep("TODO")).text)

    from dsh_search_bin import executable_path      # or spawn it yourself
    subprocess.Popen([str(executable_path()), "--sample-over-cap-glob-results", "true"], stdin=PIPE, stdout=PIPE)

`executable_path()` checks both files before anything is launched, so a broken install is reported by name
here rather than as a daemon that exits with status 3 (missing sidecar) at start. The accessor and the
command work on any Python 3.8+; `Client` and its types (imported lazily from `dsh_search_bin.client`, so
that the command starts the daemon without importing asyncio) need Python 3.11+.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import (
        ERROR_KINDS,
        REQUEST_CANCELLED,
        AppendResult,
        Client,
        ClosedError,
        DshSearchError,
        GlobMeta,
        GlobResult,
        GrepFile,
        GrepLine,
        GrepMeta,
        GrepResult,
        InitializeResult,
        NotificationHandler,
        Progress,
        ProgressHandler,
        RequestError,
        ScrollbackPage,
        Spill,
        SpillPage,
        StartupError,
        TerminalMatch,
        TerminalSearchResult,
        cancel_reply,
    )
    from .remote import InstallError, install_remote

__all__ = [
    "ERROR_KINDS",
    "REQUEST_CANCELLED",
    "AppendResult",
    "Client",
    "ClosedError",
    "DshSearchError",
    "GlobMeta",
    "GlobResult",
    "GrepFile",
    "GrepLine",
    "GrepMeta",
    "GrepResult",
    "InitializeResult",
    "InstallError",
    "NotificationHandler",
    "Progress",
    "ProgressHandler",
    "RequestError",
    "ScrollbackPage",
    "Spill",
    "SpillPage",
    "StartupError",
    "TerminalMatch",
    "TerminalSearchResult",
    "__version__",
    "cancel_reply",
    "executable_path",
    "install_remote",
    "sidecar_path",
]

__version__ = "0.0.0.dev0"  # replaced with the project version by packaging/build_wheel.py

_REMOTE = frozenset(("InstallError", "install_remote"))  # from .remote, the rest from .client
_BIN = Path(__file__).resolve().parent / "bin"
_EXECUTABLE = "dsh-search.exe" if os.name == "nt" else "dsh-search"
_HINT = (
    "Reinstall the dsh-search-bin wheel built for this platform "
    "(pip install --force-reinstall --no-deps dsh_search_bin-<version>-py3-none-<platform>.whl); "
    "the executable and its ripgrep sidecar must stay side by side in dsh_search_bin/bin/."
)


def sidecar_path(executable: Path) -> Path:
    """Where the daemon looks for ripgrep: `<executable>-rg` beside it (Windows: `dsh-search-rg.exe` beside
    `dsh-search.exe`)."""
    if executable.suffix.lower() == ".exe":
        return executable.with_name(f"{executable.stem}-rg.exe")
    return executable.with_name(f"{executable.name}-rg")


def _check_executable(what: str, path: Path) -> None:
    # One-argument OSErrors, so that str(error) is exactly the message (errno/filename would reformat it).
    if not path.is_file():
        raise FileNotFoundError(f"dsh-search-bin is missing the {what} at {path}. {_HINT}")
    if not os.access(path, os.X_OK):
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


def __getattr__(name: str) -> Any:
    # The client is imported on first use: `import dsh_search_bin` (and so the `dsh-search` command) stays
    # cheap, and works on Pythons older than the client needs.
    if name in __all__:
        if sys.version_info < (3, 11):  # noqa: UP036 (the wheel itself installs on Python 3.8+)
            raise ImportError(f"dsh_search_bin.{name} needs Python 3.11 or newer (this is {sys.version.split()[0]})")
        from . import client, remote

        return getattr(remote if name in _REMOTE else client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
