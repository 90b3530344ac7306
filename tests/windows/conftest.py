"""The Windows leg's own tests: the frozen dsh-search.exe under wine (scripts/test --area windows).

They run only when scripts/test has prepared the Windows environment and built dist/win_amd64
(DSH_E2E_TARGET=win_amd64 and the WINE* variables in the environment); otherwise they are skipped.

`wine_python` runs a script in the Windows CPython of the prepared environment; `temp_dir` is the
%TEMP% of the wine prefix, where the onefile launcher unpacks.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
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


def run_wine(
    argv: Sequence[str],
    *,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdin_pipe: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """`wine argv…` with piped standard streams, read until the program exits, not until the pipes close.

    When a wine call boots the prefix's system processes (services.exe, winedevice.exe, …), they inherit
    its pipes and hold them open for as long as the wine server lives: `subprocess.run` would wait for an
    end of file that never comes (a green leg once failed so). What the program wrote is in the pipes when
    it exits, so its output is read until then and the pipes drained; nothing waits on the holders.
    scripts/test boots the system once with /dev/null streams and keeps it up, so this is the second line.

    stdin is the null device, or with `stdin_pipe` a pipe closed at once (an end of input): ripgrep given
    no path searches a piped stdin, so a pipe would make it search nothing instead of the directory.
    """
    proc = subprocess.Popen(
        ["wine", *argv], stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    if proc.stdin is not None:
        proc.stdin.close()
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            exited = proc.poll() is not None
            if not exited and time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(proc.args, timeout, b"".join(chunks[proc.stdout.fileno()]))
            ready = sel.select(0 if exited else 0.05)
            if exited and not ready:
                break  # drained: whatever is still open belongs to a holder, not to the program
            for key, _ in ready:
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fd)
    proc.stdout.close()
    proc.stderr.close()
    out, err = (b"".join(chunks[f]) for f in chunks)
    return subprocess.CompletedProcess(proc.args, proc.wait(), out, err)


def wine_python(
    args: Sequence[str], *, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the prepared Windows CPython (its std handles are pipes: see scripts/wine)."""
    done = run_wine([os.environ["DSH_WIN_PYTHON"], *args], timeout=timeout, env=env)
    return as_text(done)


def as_text(done: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    """`done` as `text=True` would have given it (UTF-8, universal newlines)."""
    text = [b.decode().replace("\r\n", "\n").replace("\r", "\n") for b in (done.stdout, done.stderr)]
    return subprocess.CompletedProcess(done.args, done.returncode, *text)


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
