"""The daemon on the other side of a channel: a launcher (ssh, docker exec, kubectl exec, podman exec,
wsl.exe) before its argv, and the installer that puts the matching build in a per-user cache there.

    async with Client(launcher=["ssh", "-T", "-o", "BatchMode=yes", "dev@build-box"], install=True,
                      sample_over_cap_glob_results=True, workdir="/srv/repo") as client:
        ...

`command()` is the one place where the argv of a launched daemon is made: the launcher, then the daemon's
own argv — as separate arguments for launchers that pass them on as they are (`docker exec -i ctr`,
`kubectl exec -i pod --`, `wsl.exe --exec`), or, for ssh, whose server hands the command to the remote
user's shell as one line, each argument quoted for a POSIX shell and joined into that line. `install_remote()`
runs remote-install.sh (the same file in all three clients) through the same launcher: it answers at once
when the build is in the cache, else asks for it on stdin, checks it by sha256 and moves it in. See
docs/hosts.md, "Remote workspaces".
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from .client import DshSearchError

__all__ = ["InstallError", "LauncherQuote", "command", "install_remote", "quotes_for_shell", "shell_word"]

LauncherQuote = Literal["auto", "shell", "none"]
"""How the daemon's argv goes through a launcher: "shell" quotes each argument for a POSIX shell and joins
them into one argument (what ssh needs: its server runs the command line with the remote user's shell);
"none" passes them as they are (docker/podman/kubectl exec, wsl.exe --exec); "auto" is "shell" when the
launcher's program is ssh, else "none"."""
LAUNCHER_QUOTES = ("auto", "shell", "none")

_SHELL_LAUNCHERS = frozenset(("ssh",))
_PREFIX = "dsh-search-install: "
_CHUNK = 1 << 20


class InstallError(DshSearchError):
    """The build could not be put on (or found on) the far side. `message` says why: the installer's own
    words (`the transfer was cut short: …`, `… refusing to use it`, `this build does not run on …`), or
    how the launcher ended (`returncode`, with the last lines of its stderr in `stderr`)."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def quotes_for_shell(launcher: Sequence[str], quote: LauncherQuote = "auto") -> bool:
    """Whether the daemon's argv is quoted for a shell and joined into one argument (see LauncherQuote)."""
    if quote != "auto":
        return quote == "shell"
    program = re.split(r"[\\/]", launcher[0])[-1].lower()  # either separator: a Windows host's C:\…\ssh.exe
    return program.removesuffix(".exe") in _SHELL_LAUNCHERS


def shell_word(arg: str) -> str:
    """`arg` as one word of a POSIX shell (sh, bash, dash, zsh, ksh): single-quoted, a quote as '\\''.
    Spaces, quotes, `$`, backquotes, globs, newlines and a leading dash all stay what they are."""
    return "'" + arg.replace("'", "'\\''") + "'"


def command(launcher: Sequence[str] | None, quote: LauncherQuote, program: str, args: Sequence[str]) -> list[str]:
    """The argv to spawn: `program` and `args` as they are, or after the launcher (quoted for the remote
    shell when `quotes_for_shell`)."""
    argv = [program, *args]
    if not launcher:
        return argv
    if quotes_for_shell(launcher, quote):
        return [*launcher, " ".join(map(shell_word, argv))]
    return [*launcher, *argv]


def check_launcher(launcher: object, quote: object) -> None:
    """TypeError/ValueError naming the option when `launcher` or `launcher_quote` is not usable."""
    if launcher is not None and (
        isinstance(launcher, str | bytes)
        or not isinstance(launcher, Sequence)
        or not launcher
        or not all(isinstance(arg, str) for arg in launcher)
        or not launcher[0]
    ):
        raise TypeError(
            f"launcher must be a non-empty sequence of strings (an argv prefix, never a shell string), "
            f"not {type(launcher).__name__} {launcher!r:.80}"
        )
    if quote not in LAUNCHER_QUOTES:
        raise ValueError(f"launcher_quote must be one of {', '.join(map(repr, LAUNCHER_QUOTES))}, not {quote!r}")


def _build_files(build: str | os.PathLike[str] | None) -> tuple[Path, Path]:
    if build is None:
        from . import executable_path

        exe = executable_path()
    else:
        exe = Path(build)
        if exe.is_dir():
            exe = exe / "dsh-search"
    rg = exe.with_name(f"{exe.name}-rg")
    for what, path in (("dsh-search executable", exe), ("ripgrep sidecar", rg)):
        if not path.is_file():
            raise FileNotFoundError(f"the build to install has no {what} at {path}")
    return exe, rg


def _digest(path: Path) -> tuple[str, int]:
    sha = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return sha.hexdigest(), size


def _script() -> str:
    return (Path(__file__).with_name("remote-install.sh")).read_text(encoding="utf-8")


async def install_remote(
    launcher: Sequence[str],
    build: str | os.PathLike[str] | None = None,
    *,
    launcher_quote: LauncherQuote = "auto",
    env: Mapping[str, str] | None = None,
) -> str:
    """Make sure the far side of `launcher` has this build, and return the path of its dsh-search there.

    `build` is a directory holding `dsh-search` and `dsh-search-rg` built for the far side's platform (or
    the path of that dsh-search); default: the wheel's own. The installer runs through the launcher: when
    the build is in the far side's cache (checked by sha256) it answers at once and nothing is sent;
    otherwise both files are streamed through the channel, checked there by sha256 and by running
    `dsh-search --version`, and moved in. Nothing is downloaded. Raises InstallError. Bound it with
    `asyncio.timeout()` if you like: cancelled, it stops the launcher, and the far side drops the part it got.
    """
    check_launcher(launcher, launcher_quote)
    exe, rg = _build_files(build)
    (exe_sha, exe_size), (rg_sha, rg_size) = await asyncio.to_thread(lambda: (_digest(exe), _digest(rg)))
    args = ["-c", _script(), "dsh-search-install", exe_sha, rg_sha, str(exe_size), str(rg_size)]
    proc = await asyncio.create_subprocess_exec(
        *command(launcher, launcher_quote, "sh", args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else dict(env),
        limit=_CHUNK,
    )
    stderr: deque[str] = deque(maxlen=20)
    errors = asyncio.create_task(_tail(proc, stderr))
    done = False
    try:
        path = await _converse(proc, exe, rg, stderr, errors)
        done = True
        return path
    finally:
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        if not done and proc.returncode is None:  # failed or cancelled: stop the launcher, the far side cleans up
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(errors, 2)


async def _tail(proc: asyncio.subprocess.Process, lines: deque[str]) -> None:
    assert proc.stderr is not None
    async for line in proc.stderr:
        lines.append(line.decode("utf-8", "replace"))


async def _converse(
    proc: asyncio.subprocess.Process, exe: Path, rg: Path, stderr: deque[str], errors: asyncio.Task[None]
) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    async for raw in proc.stdout:
        line = raw.decode("utf-8", "surrogateescape").rstrip("\n")
        if not line.startswith(_PREFIX):
            continue  # not the installer's: a login shell's chatter, say
        word, _, rest = line[len(_PREFIX) :].partition(" ")
        if word == "ready":
            return rest
        if word == "error":
            raise InstallError(rest, None, "".join(stderr))
        if word == "send":
            with contextlib.suppress(ConnectionError, BrokenPipeError):  # it gave up: its error line follows
                for path in (exe, rg):
                    f = await asyncio.to_thread(path.open, "rb")
                    try:
                        while chunk := await asyncio.to_thread(f.read, _CHUNK):
                            proc.stdin.write(chunk)
                            await proc.stdin.drain()
                    finally:
                        f.close()
                proc.stdin.close()
                await proc.stdin.wait_closed()
    returncode = await proc.wait()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(errors), 2)  # the launcher's last words, read to their end
    tail = "".join(stderr).strip()
    raise InstallError(
        f"the installer ended (status {returncode}) without saying the build is in place"
        + (" (255: the launcher could not connect)" if returncode == 255 else "")
        + (f": {tail}" if tail else ""),
        returncode,
        "".join(stderr),
    )
