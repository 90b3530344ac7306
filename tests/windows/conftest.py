"""The Windows leg's own tests: the frozen dsh-search.exe under wine (scripts/test --area windows).

They run only when scripts/test has prepared the Windows environment and built dist/win_amd64
(DSH_E2E_TARGET=win_amd64 and the WINE* variables in the environment); otherwise they are skipped.

`wine_python` runs a script in the Windows CPython of the prepared environment; `temp_dir` is the
%TEMP% of the wine prefix, where the onefile launcher unpacks.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.locations import WINDOWS

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)
            if not WINDOWS:
                item.add_marker(pytest.mark.skip(reason="the Windows leg only (scripts/test --area windows)"))


def winpath(path: Path | str) -> str:
    """A host path as Windows programs under wine name it: drive Z: is the host's root."""
    return "Z:" + str(Path(path).absolute()).replace("/", "\\")


def wine_python(args: Sequence[str], *, timeout: float = 120, **kw: object) -> subprocess.CompletedProcess[str]:
    """Run the prepared Windows CPython (its std handles are pipes: see scripts/wine)."""
    python = os.environ["DSH_WIN_PYTHON"]
    return subprocess.run(
        ["wine", python, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="session")
def temp_dir() -> Path:
    """%TEMP% of the wine prefix (C:\\users\\<user>\\Temp)."""
    found = sorted(Path(os.environ["WINEPREFIX"], "drive_c", "users").glob("*/Temp"))
    assert found, "no %TEMP% in the wine prefix"
    return found[0]


def console_event(event: int, image: str = "dsh-search.exe") -> list[int]:
    """Deliver console control event `event` (0 Ctrl-C, 1 Ctrl-Break, 2 close) to every process of `image`,
    as Windows does (tests/windows/console_event.py); the Windows pids reached."""
    done = wine_python([winpath(HERE / "console_event.py"), str(event), image])
    assert done.returncode == 0, done.stderr
    return [int(pid) for pid in done.stdout.split()]
